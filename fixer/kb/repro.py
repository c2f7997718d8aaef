"""Run an entry's `repro` code for real (rustc's error index: the failing example must fail with *its*
error, the corrected one must run).

Each snippet runs as its own script in a fresh interpreter: it imports torch, some stand-ins for an
accelerator can abort the process, and a real file gives the traceback real frames and code lines,
as the user's would have. Keep the file while explaining its output: fixer reads the source around
the frames, as it would read a user's script.
"""

from __future__ import annotations

import re
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


_FRAME = re.compile(r'^  File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')
_FOLDED = "  [frames inside torch and other libraries]"  # how many depends on the library's version
_RANK = re.compile(r"^\[rank\d+\]:\s?")  # torchrun and torch.distributed prefix each line of a rank
_INSTALLED = re.compile(r"""(?:[A-Za-z]:)?[^\s"']*[\\/](?:site|dist)-packages[\\/]""")
_MARKERS = re.compile(r"^\s*[\^~]+\s*$")  # Python 3.11+ underlines: they vary with the Python version


def trimmed(output: str, script: str) -> str:
    """The last traceback in `output`, as a learner needs it: the script's own frames with their lines,
    each run of library frames folded to one line, then the error. The same on every machine and Python
    version, so the KB can keep it (`repro.raises`) and a test can hold it to what the code prints."""
    lines = [_RANK.sub("", line) for line in output.splitlines()]
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    if not starts:
        return ""
    kept, folded, i = [lines[starts[-1]]], 0, starts[-1] + 1
    while i < len(lines) and lines[i].startswith(" "):
        frame = _FRAME.match(lines[i])
        i += 1
        body = []
        while i < len(lines) and lines[i].startswith("    ") and not _FRAME.match(lines[i]):
            if not _MARKERS.match(lines[i]):
                body.append(lines[i])
            i += 1
        if frame and Path(frame["path"]).name == script:
            if folded:
                kept.append(_FOLDED)
                folded = 0
            kept.append(f'  File "{script}", line {frame["line"]}, in {frame["function"]}')
            kept.extend(body[:1])
        else:
            folded += 1
    if folded:
        kept.append(_FOLDED)
    kept.extend(_short_paths(line, script).rstrip() for line in lines[i:] if not _MARKERS.match(line))
    return "\n".join(kept).rstrip() + "\n"


def _short_paths(line: str, script: str) -> str:
    """Paths in the error's own text (torch.compile quotes the user's frames): the script by its name, a
    library file from its package on."""
    line = re.sub(rf'[^\s"\']*[\\/]{re.escape(script)}\b', script, line)
    return _INSTALLED.sub("", line)


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
