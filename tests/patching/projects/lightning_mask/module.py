"""A sequence classifier written as a Lightning-style module: steps, not a loop."""

import torch


class SequenceClassifier(torch.nn.Module):
    def __init__(self, vocab=40, dim=8, classes=3, pad=0):
        super().__init__()
        self.pad = pad
        self.embed = torch.nn.Embedding(vocab, dim)
        self.head = torch.nn.Linear(dim, classes)

    def forward(self, tokens, mask):
        summed = (self.embed(tokens) * mask.unsqueeze(-1)).sum(dim=1)
        return self.head(summed / mask.sum(dim=1, keepdim=True))

    def validation_step(self, batch):
        tokens, labels = batch
        mask = torch.ones(tokens.shape)
        mask = mask.masked_fill(tokens == self.pad, 0.0)
        logits = self(tokens, mask)
        return torch.nn.functional.cross_entropy(logits, labels)
