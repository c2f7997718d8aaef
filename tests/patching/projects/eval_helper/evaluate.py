"""Evaluation helpers shared by the training and the benchmark scripts."""

import torch


@torch.no_grad()
def accuracy(model, loader):
    model.eval()
    correct = total = 0
    for patches, labels in loader:
        predicted = model(patches).argmax(dim=-1)
        correct = correct + (predicted.cpu() == labels).sum()
        total += labels.numel()
    return correct / total
