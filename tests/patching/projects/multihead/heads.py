"""A shared trunk with one output head per task, as multi-task repositories lay it out."""

import torch


class MultiTaskNet(torch.nn.Module):
    def __init__(self, tasks, width=16):
        super().__init__()
        self.trunk = torch.nn.Sequential(torch.nn.Linear(8, width), torch.nn.GELU())
        self.heads = [torch.nn.Linear(width, classes) for classes in tasks.values()]
        self.names = list(tasks)

    def forward(self, features):
        shared = self.trunk(features)
        return {name: head(shared) for name, head in zip(self.names, self.heads, strict=True)}
