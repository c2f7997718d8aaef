"""Predict every task for a batch; the tasks come from the config."""

import torch
from heads import MultiTaskNet
from torch._subclasses.fake_tensor import FakeTensorMode

TASKS = {"topic": 5, "sentiment": 3}

net = MultiTaskNet(TASKS)
# FakeTensorMode stands in for the GPU: "cuda:0" tensors carry shape and device only.
with FakeTensorMode(allow_non_fake_inputs=True), torch.no_grad():
    net.to("cuda:0")
    outputs = net(torch.randn(4, 8, device="cuda:0"))
    shapes = {name: tuple(logits.shape) for name, logits in outputs.items()}
print("predicted")
