import io

import torch


class AddPositions(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        positions = torch.arange(x.shape[1], device=x.device, dtype=x.dtype)
        return self.proj(x) + positions


# Exported and saved on a CPU machine (here, so the script stands alone): the graph stores
# arange(..., device=cpu) as a constant argument.
artifact = io.BytesIO()
torch.export.save(torch.export.export(AddPositions(), (torch.randn(2, 8),)), artifact)
artifact.seek(0)

device = torch.device("meta")  # stands in for "cuda" on a machine without a GPU
model = torch.export.load(artifact).module().to(device)
out = model(torch.randn(2, 8, device=device))
