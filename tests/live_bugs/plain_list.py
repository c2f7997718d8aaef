import os

import torch
from torch import nn

device = torch.device(os.environ.get("DEVICE", "cuda"))


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = [nn.Linear(8, 8) for _ in range(3)]
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


model = Stack().to(device)
out = model(torch.randn(4, 8, device=device))
