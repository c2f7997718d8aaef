"""The probes on a real GPU: what CPU stand-ins cannot show (device names, a checkpoint saved from
CUDA, a real cuda/cpu mismatch under `fixer run`). Skipped without CUDA."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fixer.diagnose.checkpoint import checkpoint_findings
from fixer.diagnose.environment import environment_findings, read_machine

pytestmark = pytest.mark.cuda


def test_the_machine_probe_sees_the_gpus():
    import torch

    facts = read_machine()
    assert isinstance(facts, dict)
    assert facts["cuda_available"] and facts["device_count"] == torch.cuda.device_count()
    assert facts["devices"][0] == torch.cuda.get_device_name(0)
    build = next(f for f in environment_findings(facts) if f.verdict != "info" and f.probe == "env-torch-build")
    assert build.verdict == "rules-out"


def test_a_checkpoint_saved_from_the_gpu_reads_as_cuda(tmp_path):
    import torch

    model = torch.nn.Linear(3, 3).cuda()
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.randn(2, 3, device="cuda")).sum().backward()
    optimizer.step()
    path = tmp_path / "last.pt"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
    facts = read_machine()
    assert isinstance(facts, dict)
    findings = checkpoint_findings(path, facts)
    saved = findings[0].facts
    assert set(saved["model"]) == {"cuda:0"}
    confirmed = {entry for f in findings if f.verdict == "confirms" for entry in f.entries}
    assert not confirmed & {"torch-load-without-map-location", "optimizer-state-after-resume"}  # a healthy one


def test_fixer_run_names_the_cpu_layer_of_a_gpu_model(tmp_path: Path):
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n"
        "from torch import nn\n"
        "model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4), nn.ReLU()).cuda()\n"
        "model.append(nn.Linear(4, 2))\n"
        "model(torch.randn(3, 4, device='cuda'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "fixer", "run", str(script)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 1
    said = " ".join(done.stderr.split())  # rich wraps at the terminal's width
    assert "`4` (Linear): weight on cpu; bias on cpu; input 0 on cuda:0; the rest of the model on cuda:0" in said
    assert "submodule-replaced-after-to" in said
