"""One pass of knowledge distillation: the student learns from the teacher's soft targets."""

import torch
from teachers import build_teacher, soft_targets
from torch._subclasses.fake_tensor import FakeTensorMode


def distill_epoch(student, teacher, batches, device):
    kl = torch.nn.KLDivLoss(reduction="batchmean")
    losses = []
    for images in batches:
        images = images.to(device)
        targets = soft_targets(teacher, images)
        losses.append(kl(student(images).log_softmax(dim=-1), targets))
    return losses


student = torch.nn.Linear(12, 5)
teacher = build_teacher()
batches = [torch.randn(8, 12) for _ in range(2)]
# FakeTensorMode stands in for the GPU: "cuda:0" tensors carry shape and device only.
with FakeTensorMode(allow_non_fake_inputs=True), torch.no_grad():
    device = torch.device("cuda:0")
    student.to(device)
    distill_epoch(student, teacher, batches, device)
print("distilled")
