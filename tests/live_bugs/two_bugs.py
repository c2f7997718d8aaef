import os

import torch
from torch import nn

device = torch.device(os.environ.get("DEVICE", "cuda"))


class WithOffset(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(x) + torch.arange(8)


model = WithOffset().to(device)
x = torch.randn(4, 8)
out = model(x)
print("ran")
