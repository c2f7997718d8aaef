"""Greedy sampling from TinyLM, driven by a config dict as the repository's scripts are."""

import torch
from model import TinyLM
from torch._subclasses.fake_tensor import FakeTensorMode

CONFIG = {"vocab": 50, "dim": 16, "max_len": 32, "new_tokens": 4, "device": "cuda:0"}


@torch.no_grad()
def generate(model, prompt, config):
    tokens = prompt
    for _ in range(config["new_tokens"]):
        logits = model(tokens)
        tokens = torch.cat([tokens, logits.select(1, -1).argmax(dim=-1, keepdim=True)], dim=1)
    return tokens


model = TinyLM(CONFIG)
# FakeTensorMode stands in for the GPU: "cuda:0" tensors carry shape and device only.
with FakeTensorMode(allow_non_fake_inputs=True):
    model.to(CONFIG["device"])
    generate(model, torch.randint(0, CONFIG["vocab"], (2, 5), device=CONFIG["device"]), CONFIG)
print("generated")
