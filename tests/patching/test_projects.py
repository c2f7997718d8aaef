"""End to end on small projects in the shape of real repositories (written for fixer, not copied):
each fails with a stand-in device, its traceback names two of its files, and `fixer patch --apply
--yes --unsafe` makes it run. None of them is a fixture its codemod was written from. (projects/distill
is read by the detectors' tests: no codemod follows a model passed down two frames yet.)"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fixer.cli import OK

PROJECTS = Path(__file__).parent / "projects"
ACCELERATOR = Path(__file__).parent / "fixtures" / "insert-cpu-before-numpy" / "accelerator.py"

# project, its entry script, the cause, the codemod, and the verdict its patch must carry
CASES = [
    ("eval_helper", "benchmark.py", "inputs-not-moved", "move-inputs-to-model-device", "safe"),
    ("decay_config", "generate.py", "plain-tensor-attribute", "tensor-attribute-to-buffer", "safe"),
    ("lightning_mask", "validate.py", "tensor-created-without-device", "add-device-to-tensor-factory", "safe"),
    ("multihead", "predict.py", "submodules-in-plain-container", "list-of-modules-to-modulelist", "unsafe"),
    ("numpy_metrics", "report.py", "numpy-on-cuda-tensor", "insert-cpu-before-numpy", "safe"),
    ("weighted_eval", "evaluate_split.py", "loss-weight-on-cpu", "move-loss-to-device", "safe"),
]


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )


@pytest.mark.parametrize(("project", "script", "entry", "codemod", "safety"), CASES, ids=[c[0] for c in CASES])
def test_a_project_is_patched_end_to_end(tmp_path, project, script, entry, codemod, safety):
    shutil.copytree(PROJECTS / project, tmp_path, dirs_exist_ok=True)
    if "from accelerator import" in (tmp_path / script).read_text():
        shutil.copy(ACCELERATOR, tmp_path)
    failed = _run(tmp_path, script)
    assert failed.returncode != 0, failed.stdout
    named = {line.split('"')[1] for line in failed.stderr.splitlines() if line.strip().startswith(f'File "{tmp_path}')}
    assert len(named) >= 2, f"the traceback names {named}"
    log = tmp_path / "crash.log"
    log.write_text(failed.stderr)

    explained = json.loads(_run(tmp_path, "-m", "fixer", "explain", "--json", str(log)).stdout)
    assert explained["matches"][0]["id"] == entry
    proposed = _run(tmp_path, "-m", "fixer", "patch", "--json", str(log))
    (patch,) = json.loads(proposed.stdout)["patches"]
    assert (patch["codemod"], patch["applicability"]) == (codemod, safety) and patch["why"]

    applied = _run(tmp_path, "-m", "fixer", "patch", "--apply", "--yes", "--unsafe", str(log))
    assert applied.returncode == OK, applied.stderr
    fixed = _run(tmp_path, script)
    assert fixed.returncode == 0, fixed.stderr[-2000:]
