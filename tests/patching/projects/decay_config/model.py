"""A tiny language model whose embeddings are scaled by a fixed per-channel decay, configured by a dict."""

import torch


class TinyLM(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed = torch.nn.Embedding(config["vocab"], config["dim"])
        channels = torch.arange(config["dim"])
        self.decay = torch.exp(-channels / config["dim"])
        self.out = torch.nn.Linear(config["dim"], config["vocab"])

    def forward(self, tokens):
        hidden = self.embed(tokens) * self.decay
        return self.out(hidden)
