import os

import torch
from torch import nn

device = torch.device(os.environ.get("DEVICE", "cuda"))


class WithBias(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        offset = torch.arange(8)
        return self.proj(x) + offset


model = WithBias().to(device)
out = model(torch.randn(4, 8, device=device))
