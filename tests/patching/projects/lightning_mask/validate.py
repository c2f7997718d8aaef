"""Run the validation steps the way a trainer does: batches on the module's device, one step each."""

import torch
from module import SequenceClassifier
from torch._subclasses.fake_tensor import FakeTensorMode


def run_validation(module, batches, device):
    module.eval()
    losses = []
    with torch.no_grad():
        for tokens, labels in batches:
            losses.append(module.validation_step((tokens.to(device), labels.to(device))))
    return losses


module = SequenceClassifier()
batches = [(torch.randint(1, 40, (4, 6)), torch.randint(0, 3, (4,))) for _ in range(2)]
# FakeTensorMode stands in for the GPU: "cuda:0" tensors carry shape and device only.
with FakeTensorMode(allow_non_fake_inputs=True):
    device = torch.device("cuda:0")
    module.to(device)
    run_validation(module, batches, device)
print("validated")
