"""`fixer run`'s report: whatever the script's names hold and whatever goes wrong in fixer after the script
failed, the user gets the script's traceback and exit status."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# A submodule added after `.to()` stays on the CPU; its path and class name are rich markup.
MARKUP_NAMES = """\
import torch

Odd = type("Foo[/]", (torch.nn.Linear,), {})
inner = torch.nn.Sequential(torch.nn.Linear(4, 4))
model = torch.nn.Sequential()
model.add_module("[/]", inner)
model.to("meta")
inner.add_module("[bold]", Odd(4, 2))
model(torch.randn(3, 4, device="meta"))
"""

DEVICE_ERROR = """\
raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!")
"""

# The script itself breaks the matcher fixer explains with: it runs in fixer's process.
MATCHER_BROKEN = (
    "import fixer.explain.match\n\ndef broken(self, text):\n    raise LookupError('a fixer bug')\n\n"
    "fixer.explain.match.Matcher.explain = broken\n" + DEVICE_ERROR
)

# The failing module refuses to list its parameters when fixer inspects it.
MODULE_BROKEN = """\
import torch

class Stubborn(torch.nn.Linear):
    def named_parameters(self, *args, **kwargs):
        raise LookupError("no parameters for you")

Stubborn(4, 2)(torch.randn(3, 4, device="meta"))
"""


def _fixer_run(tmp_path: Path, source: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    script = tmp_path / "train.py"
    script.write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "fixer", "run", str(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "COLUMNS": "200", **env},
    )


CULPRIT = "`[/].[bold]` (Foo[/]): weight on cpu; bias on cpu; input 0 on meta"


@pytest.mark.parametrize(
    ("env", "shown"),
    [
        ({}, f"fixer: the failing module was {CULPRIT}"),
        ({"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1"}, "failed [/].[bold] submodule-replaced-after-to"),
    ],
    ids=["alone", "torchrun-table"],
)
def test_module_and_class_names_are_shown_as_written_not_read_as_markup(
    tmp_path: Path, env: dict[str, str], shown: str
) -> None:
    done = _fixer_run(tmp_path, MARKUP_NAMES, **env)
    said = " ".join(done.stderr.replace("[rank 0] ", "").split())
    assert done.returncode == 1, done.stderr
    assert shown in said and CULPRIT in said


@pytest.mark.parametrize(
    ("source", "env", "line"),
    [
        (MATCHER_BROKEN, {}, "fixer: internal error (LookupError: a fixer bug)"),
        (MODULE_BROKEN, {}, "Most likely cause"),
        (DEVICE_ERROR, {"FIXER_KB": "/nonexistent/kb"}, "fixer: no knowledge base at /nonexistent/kb"),
    ],
    ids=["matcher", "failing-module", "no-kb"],
)
def test_a_failure_in_the_report_keeps_the_scripts_traceback_and_exit_status(
    tmp_path: Path, source: str, env: dict[str, str], line: str
) -> None:
    done = _fixer_run(tmp_path, source, **env)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("Traceback (most recent call last)") == 1
    assert "RuntimeError: " in done.stderr and line in done.stderr


def test_a_run_without_a_patch_says_why_instead_of_stopping(tmp_path):
    """The error is raised on a line no codemod can rewrite: the report ends with the reason."""
    ran = _fixer_run(tmp_path, DEVICE_ERROR)
    assert ran.returncode == 1
    last = " ".join(ran.stderr.strip().splitlines()[-1:])
    assert last.startswith("fixer: no patch: ") and last.endswith(".")


# The bare message real GPU runs print, raised as is: its text alone leaves a dozen causes close.
BARE = """\
raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!")
"""


def test_a_resume_flag_on_the_command_answers_the_resume_question(tmp_path: Path) -> None:
    said = " ".join(_fixer_run(tmp_path, BARE, "--resume", "last.pt").stderr.split())
    assert "optimizer-state-after-resume · score" in said
    assert "yes, read from the command: --resume: Did this run load a checkpoint" in said
    plain = " ".join(_fixer_run(tmp_path, BARE).stderr.split())
    assert "read from the command" not in plain
