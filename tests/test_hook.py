"""`fixer.install()`: the usual traceback, then the explanation, ranked with what this process knows;
once however often it is installed, and for errors that end a thread too."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import first_causes

# https://github.com/huggingface/accelerate/issues/767, as its reporter pasted it: meta and cpu, the mark
# of accelerate's hooks, which this process cannot have without accelerate installed.
META_AND_CPU = "Expected all tensors to be on the same device, but found at least two devices,\\nmeta and cpu!"
# https://github.com/pytorch/pytorch/issues/111123's message: optimizer state left on the CPU.
FUSED = (
    "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
    "(when checking argument for argument state_steps in method wrapper_CUDA___fused_adamw_)"
)


def _run(tmp_path: Path, body: str) -> str:
    script = tmp_path / "train.py"
    script.write_text("import threading\nimport fixer\n" + body)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stderr
    return done.stderr


def test_installing_twice_explains_once_after_the_usual_traceback(tmp_path):
    stderr = _run(tmp_path, f"fixer.install()\nfixer.install()\nraise RuntimeError({FUSED!r})\n")
    assert stderr.index("Traceback (most recent call last)") < stderr.index("Most likely cause")
    assert first_causes(stderr) == ["optimizer-state-after-resume"]


def test_an_error_that_ends_a_thread_is_explained(tmp_path):
    body = (
        "fixer.install()\n"
        f"def step():\n    raise RuntimeError({FUSED!r})\n"
        "worker = threading.Thread(target=step)\nworker.start()\nworker.join()\n"
        "raise SystemExit(1)\n"
    )
    stderr = _run(tmp_path, body)
    assert "Exception in thread" in stderr
    assert first_causes(stderr) == ["optimizer-state-after-resume"]


@pytest.mark.skipif(importlib.util.find_spec("accelerate") is not None, reason="accelerate is installed here")
def test_a_cause_this_process_cannot_have_does_not_come_first(tmp_path, matcher):
    assert matcher.explain(META_AND_CPU.replace("\\n", "\n")).matches[0].id == "accelerate-hooks-conflict"
    stderr = _run(tmp_path, f'fixer.install()\nraise RuntimeError("{META_AND_CPU}")\n')
    assert first_causes(stderr) and first_causes(stderr)[0] != "accelerate-hooks-conflict"
