"""Run an entry's `repro` code for real (rustc's error index: the failing example must fail with *its*
error, the corrected one must run).

Each snippet runs as its own script in a fresh interpreter: it imports torch, some stand-ins for an
accelerator can abort the process, and a real file gives the traceback real frames and code lines,
as the user's would have. Keep the file while explaining its output: fixer reads the source around
the frames, as it would read a user's script.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from fixer.kb.schema import Entry

Verification = Literal["cpu", "cuda-only", "none"]
TIMEOUT_S = 120


@dataclass(frozen=True)
class Run:
    returncode: int
    output: str

    @property
    def raised(self) -> bool:
        return self.returncode != 0 and "Traceback (most recent call last)" in self.output


def verification(entry: Entry) -> Verification:
    """How the entry's claim is checked: on any CPU machine, only where CUDA exists, or not at all."""
    if entry.repro is None:
        return "none"
    return "cpu" if entry.repro.needs == "cpu" else "cuda-only"


def run_script(script: Path, *, timeout: float = TIMEOUT_S) -> Run:
    try:
        done = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=script.parent,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Run(returncode=-1, output=f"timed out after {timeout:.0f} s")
    return Run(returncode=done.returncode, output=done.stdout + done.stderr)
