import os

import torch
from torch import nn

device = torch.device(os.environ.get("DEVICE", "cuda"))
model = nn.Linear(8, 3).to(device)
criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 0.5]))
x = torch.randn(4, 8, device=device)
y = torch.randint(0, 3, (4,), device=device)
loss = criterion(model(x), y)
