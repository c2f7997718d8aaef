"""Jupyter notebooks of the KB's exercises: each entry's repro as a lesson a reader runs, not reads.

Seeing the error come out of one's own kernel, then fixing it oneself until a check passes, teaches
what a page of prose cannot; the entry's own fix waits, folded, below the check. Only repros that need
no accelerator qualify (`needs: cpu`, a FakeTensorMode or meta stand-in where a GPU would be), so every
notebook runs on a laptop, Binder or a CPU Colab.

Cells carry fixed ids, so writing the notebooks again gives the same files and no spurious diff.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from fixer.kb.schema import Entry

# The Jupyter convention nbclient and nbconvert honour: the cell's error is expected, run on past it.
RAISES = "raises-exception"
_META = re.compile(r"""["']meta["']""")  # the device named in `.to("meta")`, `torch.device('meta')`
_KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}


# The learner's copy is written to a file the check then runs as a script of its own, so what is checked
# is the cell as edited, whatever ran in the kernel before it.
ATTEMPT_MAGIC = "%%writefile attempt.py"
YOUR_TURN = (
    "## Your turn\n\nThe next cell holds the broken code again: change it so that it runs, run it (it saves "
    "your version as `attempt.py`), then run the check below it. Until the code is fixed the check fails, "
    "saying with what error.\n\n*Hint:* {hint}"
)
CHECK = """import runpy

try:
    runpy.run_path("attempt.py", run_name="__main__")
except Exception as error:
    raise AssertionError(f"not fixed yet: it still stops with {type(error).__name__}: {error}") from error
print("Fixed: attempt.py runs to the end.")"""
SOLUTION_HEADING = (
    "## A solution\n\nThe cell below is folded away (click it to show the code); try your own fix first. It "
    "runs as it stands."
)
_HIDDEN = {"source_hidden": True}  # JupyterLab and Notebook 7 fold the cell's code until it is clicked


def _stand_in(code: str) -> str:
    """Says what plays the GPU, so a reader on a CPU knows why no GPU is asked for."""
    if "FakeTensorMode" in code:
        return "FakeTensorMode plays the GPU (its tensors have a device and a shape, no memory): this runs on a CPU."
    if _META.search(code):
        return "Meta tensors play the GPU (a device whose memory nothing reads): this runs on a CPU."
    return "No GPU needed: this error shows on a CPU as it is."


def entry_notebook(entry: Entry) -> nbformat.NotebookNode:
    """Broken code and why, then the learner's turn: a copy to fix, a check that runs it, and a folded
    solution. Raises ValueError for an entry whose repro needs hardware, since the notebook promises to
    run anywhere."""
    repro = entry.repro
    if repro is None or repro.needs != "cpu":
        raise ValueError(f"{entry.id}: only an entry whose repro runs on a CPU makes a notebook")
    cells = [
        new_markdown_cell(f"# {entry.title}\n\n{entry.summary.strip()}\n\n*{_stand_in(repro.code)}*", id="intro"),
        new_markdown_cell("## The broken code\n\nThe next cell raises the error.", id="broken-heading"),
        new_code_cell(repro.code.rstrip(), id="broken", metadata={"tags": [RAISES]}),
        new_markdown_cell(f"## Why\n\n{entry.cause.strip()}", id="why"),
        new_markdown_cell(YOUR_TURN.format(hint=entry.fix.summary.strip()), id="your-turn"),
        new_code_cell(f"{ATTEMPT_MAGIC}\n{repro.code.rstrip()}", id="attempt", metadata={"tags": ["exercise"]}),
        new_code_cell(CHECK, id="check", metadata={"tags": [RAISES]}),
        new_markdown_cell(SOLUTION_HEADING, id="solution-heading"),
        new_code_cell(repro.fixed.rstrip(), id="fixed", metadata={"tags": ["solution"], "jupyter": _HIDDEN}),
        new_markdown_cell(f"More on this error, with the fix's steps: `fixer show {entry.id}`", id="more"),
    ]
    notebook = new_notebook(
        cells=cells, metadata={"kernelspec": dict(_KERNELSPEC), "language_info": {"name": "python"}}
    )
    nbformat.validate(notebook)
    return notebook


def exercise_entries(entries: Iterable[Entry]) -> list[Entry]:
    """The entries a CPU can demonstrate; the caller reports the rest, which need a GPU or several."""
    return [entry for entry in entries if entry.repro is not None and entry.repro.needs == "cpu"]


def write_notebooks(entries: Iterable[Entry], out_dir: Path) -> list[Path]:
    """One `<id>.ipynb` per exercise, named by id so `fixer show <id>` and the file name agree."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for entry in exercise_entries(entries):
        path = out_dir / f"{entry.id}.ipynb"
        nbformat.write(entry_notebook(entry), path)
        paths.append(path)
    return paths
