import os

import torch
from torch import nn

device = torch.device(os.environ.get("DEVICE", "cuda"))


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.scale = torch.ones(8) * 0.5

    def forward(self, x):
        return self.proj(x) * self.scale


model = Scaled().to(device)
out = model(torch.randn(4, 8, device=device))
