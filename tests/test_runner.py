"""`fixer run` on real scripts; `meta` stands in for the GPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HEAD_REPLACED = """\
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 4)
        self.out_head = torch.nn.Linear(4, 10)

    def forward(self, x):
        return self.out_head(self.body(x))

model = Net().to("meta")
model.out_head = torch.nn.Linear(4, 2)
model(torch.randn(3, 4, device="meta"))
"""


def _run(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess:
    script = tmp_path / "train.py"
    script.write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "fixer", "run", str(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_failing_module_and_its_devices_are_named(tmp_path):
    done = _run(tmp_path, HEAD_REPLACED)
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr and "runpy" not in done.stderr
    assert (
        "`out_head` (Linear): weight on cpu; bias on cpu; input 0 on meta; the rest of the model on meta"
        in " ".join(done.stderr.split())
    )
    assert "submodule-replaced-after-to" in done.stderr


def test_the_script_runs_unchanged_with_its_arguments_and_exit_code(tmp_path):
    source = "import sys\nprint('args', sys.argv[1:])\nsys.exit(int(sys.argv[2]))\n"
    done = _run(tmp_path, source, "--epochs", "3")
    assert done.stdout == "args ['--epochs', '3']\n"
    assert done.returncode == 3
    assert _run(tmp_path, "print('ok')\n").returncode == 0


def test_a_missing_script_is_a_one_line_error(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "fixer", "run", str(tmp_path / "missing.py")], capture_output=True, text=True
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1
