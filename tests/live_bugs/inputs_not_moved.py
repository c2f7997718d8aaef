import os

import torch
from torch import nn

device = torch.device(os.environ.get("DEVICE", "cuda"))
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).to(device)
x = torch.randn(4, 8)
out = model(x)
