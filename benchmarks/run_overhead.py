"""Training-step time of a small model with and without `fixer run`'s module hooks.

The hooks push and pop a stack entry per module call; the goal is at most 5 % on a small model's
training step. Run: python benchmarks/run_overhead.py [--steps N] [--repeats R]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch
from torch import nn

from fixer.runner import _Watch


def _model() -> nn.Module:
    layers: list[nn.Module] = []
    for _ in range(8):
        layers += [nn.Linear(256, 256), nn.LayerNorm(256), nn.GELU()]
    return nn.Sequential(*layers, nn.Linear(256, 10))


def _steps(
    model: nn.Module, optimizer: torch.optim.Optimizer, batch: torch.Tensor, labels: torch.Tensor, n: int
) -> float:
    start = time.perf_counter()
    for _ in range(n):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(batch), labels).backward()
        optimizer.step()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = _model()
    optimizer = torch.optim.AdamW(model.parameters())
    batch, labels = torch.randn(64, 256), torch.randint(0, 10, (64,))
    _steps(model, optimizer, batch, labels, 10)  # warm up
    plain, hooked = [], []
    watch = _Watch()
    for _ in range(args.repeats):
        plain.append(_steps(model, optimizer, batch, labels, args.steps))
        handles = (
            nn.modules.module.register_module_forward_pre_hook(watch.before),
            nn.modules.module.register_module_forward_hook(watch.after),
        )
        hooked.append(_steps(model, optimizer, batch, labels, args.steps))
        for handle in handles:
            handle.remove()
    base, with_hooks = statistics.median(plain), statistics.median(hooked)
    per_step = 1000 / args.steps
    print(f"without hooks  {base * per_step:7.2f} ms/step  (median of {args.repeats} x {args.steps} steps)")
    print(f"with hooks     {with_hooks * per_step:7.2f} ms/step")
    print(f"overhead       {100 * (with_hooks / base - 1):+6.1f} %  (26 module calls per step)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
