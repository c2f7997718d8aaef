"""The traceback probes read the user's failing functions: real scripts fail, their tracebacks are read.

Each script raises a real device error on the CPU (a `meta` model, or FakeTensorMode's fake GPUs),
and its fixed twin shows the probe ruling the cause out instead.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fixer.diagnose.probes import PROBES
from fixer.diagnose.user_code import constructor_findings, factory_findings
from fixer.explain.parse import parse

MASK_IN_FORWARD = """\
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        mask = torch.ones(x.shape[0], 4)
        return self.proj(x) * mask


Gate().to("meta")(torch.randn(2, 4, device="meta"))
"""

LAYER_IN_FORWARD = """\
import torch
import torch.nn as nn


class Head(nn.Module):
    def forward(self, x):
        layer = nn.Linear(4, 2)
        return layer(x)


Head().to("meta")(torch.randn(2, 4, device="meta"))
"""

BARE_CUDA = """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode


def shift(x):
    bias = torch.zeros(2, device="cuda")
    return x + bias


with FakeTensorMode():
    shift(torch.randn(2, device="cuda:1"))
"""


def _traceback(tmp_path: Path, source: str, name: str = "train.py"):
    script = tmp_path / name
    script.write_text(source)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stderr
    tb = parse(done.stderr)
    assert tb is not None
    return tb


def _verdicts(findings, entry: str) -> set[str]:
    return {f.verdict for f in findings if entry in f.entries}


def test_a_mask_made_without_a_device_is_found(tmp_path):
    findings = factory_findings(_traceback(tmp_path, MASK_IN_FORWARD))
    assert _verdicts(findings, "tensor-created-without-device") == {"confirms"}
    assert "train.py:11 torch.ones(...)" in findings[0].summary
    assert {f.probe for f in findings} <= set(PROBES)


def test_a_mask_given_the_input_device_rules_the_cause_out(tmp_path):
    fixed = MASK_IN_FORWARD.replace("torch.ones(x.shape[0], 4)", "torch.ones(x.shape[0], 4, device=x.device)")
    fixed = fixed.replace("self.proj(x) * mask", "self.proj(x) * mask.cpu()")  # still fails, elsewhere
    findings = factory_findings(_traceback(tmp_path, fixed))
    assert _verdicts(findings, "tensor-created-without-device") == {"rules-out"}


def test_a_bare_cuda_device_points_to_the_current_gpu_cause(tmp_path):
    findings = factory_findings(_traceback(tmp_path, BARE_CUDA))
    assert _verdicts(findings, "default-cuda-vs-cuda-n") == {"confirms"}
    assert _verdicts(findings, "tensor-created-without-device") == {"rules-out"}


def test_a_layer_built_in_forward_is_found(tmp_path):
    findings = constructor_findings(_traceback(tmp_path, LAYER_IN_FORWARD))
    assert _verdicts(findings, "module-created-in-forward") == {"confirms"}
    assert "nn.Linear" in findings[0].summary


def test_a_forward_that_builds_nothing_rules_it_out(tmp_path):
    findings = constructor_findings(_traceback(tmp_path, MASK_IN_FORWARD))
    assert _verdicts(findings, "module-created-in-forward") == {"rules-out"}


def test_files_not_on_this_machine_cannot_be_checked(tmp_path):
    tb = _traceback(tmp_path, MASK_IN_FORWARD)
    (tmp_path / "train.py").unlink()
    assert [f.verdict for f in factory_findings(tb)] == ["could-not-check"]
    assert [f.verdict for f in constructor_findings(tb)] == ["could-not-check"]
