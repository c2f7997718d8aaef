"""Fine-tune a small GPT-style model as a spam classifier: replace its vocabulary head with a
two-class head and train only the last block and the head (the shape of LLMs-from-scratch ch. 6)."""

import os

import torch
from gpt import TinyGPT

torch.manual_seed(0)
device = torch.device(os.environ.get("TRAIN_DEVICE", "cuda" if torch.cuda.is_available() else "cpu"))

model = TinyGPT()
model.to(device)

for param in model.parameters():
    param.requires_grad = False
model.out_head = torch.nn.Linear(16, 2)
for param in model.block.parameters():
    param.requires_grad = True


def batch_loss(input_batch, target_batch, model, device):
    input_batch, target_batch = input_batch.to(device), target_batch.to(device)
    logits = model(input_batch)[:, -1, :]
    return torch.nn.functional.cross_entropy(logits, target_batch)


def fit_classifier(model, batches, optimizer, device, epochs=2):
    for _ in range(epochs):
        for input_batch, target_batch in batches:
            optimizer.zero_grad()
            loss = batch_loss(input_batch, target_batch, model, device)
            loss.backward()
            optimizer.step()
    return loss


batches = [(torch.randint(0, 50, (4, 8)), torch.randint(0, 2, (4,))) for _ in range(3)]
optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-5)
fit_classifier(model, batches, optimizer, device)
print("trained")
