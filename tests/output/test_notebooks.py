"""Each KB exercise as a notebook: a valid one, in the order a reader needs, whose broken cell raises its
entry's error in a real Jupyter kernel (an error fixer explains as that entry), whose check fails on the
learner's unfixed copy and passes on a fixed one, and whose folded solution runs. Each notebook gets its
own kernel, as a reader's would; a kernel costs a start and a torch import, a few seconds of CPU, so
several run at once and each test waits only for its own."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from conftest import missing_imports
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from fixer.explain.match import Matcher
from fixer.kb.catalog import Catalog, load
from fixer.kb.schema import Entry
from fixer.output.notebooks import ATTEMPT_MAGIC, RAISES, entry_notebook, exercise_entries, write_notebooks

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = [entry.id for entry in exercise_entries(load(ROOT / "kb"))]
# Measured on 2 cores for 22 notebooks: 77 s one at a time, 48 s two at once, 40 s three, 42 s four.
KERNELS_AT_ONCE = 3
CELL_TIMEOUT_S = 120
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # IPython colours its tracebacks; a reader copies the plain text


def _exercise(catalog: Catalog, entry_id: str) -> Entry:
    entry = catalog.get(entry_id)
    assert entry is not None and entry.repro is not None
    missing = missing_imports(entry.repro.code + "\n" + entry.repro.fixed, entry.repro.loads)
    if missing:
        pytest.skip(f"the repro imports {', '.join(missing)}, not installed here")
    return entry


def _execute(notebook: nbformat.NotebookNode, cwd: Path) -> nbformat.NotebookNode:
    """Runs it as `jupyter nbconvert --execute` would: past the tagged cell's error, stopping at any other.
    The outputs so far stay in the notebook, so a failing fixed cell shows its own error to the test. The
    kernel's own log goes to a file beside it, not between pytest's progress dots."""
    client = NotebookClient(
        notebook, timeout=CELL_TIMEOUT_S, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    )
    with (cwd / "kernel.log").open("w") as log, contextlib.suppress(CellExecutionError):
        client.execute(stderr=log)
    return notebook


@pytest.fixture(scope="module")
def executed(
    request: pytest.FixtureRequest, catalog: Catalog, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[nbformat.NotebookNode]]]:
    """The notebooks of the selected tests, all started at once; `-k one-entry` starts only that one."""
    selected = {
        item.callspec.params.get("entry_id")
        for item in request.session.items
        if isinstance(item, pytest.Function) and item.module is request.module and hasattr(item, "callspec")
    }
    with ThreadPoolExecutor(KERNELS_AT_ONCE) as pool:
        runs = {}
        for entry in exercise_entries(catalog):
            assert entry.repro is not None
            if entry.id in selected and not missing_imports(
                entry.repro.code + "\n" + entry.repro.fixed, entry.repro.loads
            ):
                runs[entry.id] = pool.submit(_execute, entry_notebook(entry), tmp_path_factory.mktemp(entry.id))
        yield runs


def _cells(notebook: nbformat.NotebookNode) -> dict[str, nbformat.NotebookNode]:
    return {cell.id: cell for cell in notebook.cells}


def _error(cell: nbformat.NotebookNode) -> nbformat.NotebookNode:
    errors = [output for output in cell.outputs if output.output_type == "error"]
    assert errors, f"the cell raised nothing; its outputs: {cell.outputs}"
    return errors[0]


def test_exercises_are_the_entries_with_a_cpu_repro_in_kb_order(catalog: Catalog) -> None:
    expected = [e.id for e in catalog if e.repro is not None and e.repro.needs == "cpu"]
    assert [e.id for e in exercise_entries(catalog)] == expected
    assert 0 < len(expected) < len(catalog)


@pytest.mark.parametrize("entry_id", EXERCISES)
def test_notebook_is_valid_and_reads_broken_code_why_then_the_learners_turn(entry_id: str, catalog: Catalog) -> None:
    entry = _exercise(catalog, entry_id)
    assert entry.repro is not None
    notebook = entry_notebook(entry)
    nbformat.validate(notebook)
    assert notebook.metadata.kernelspec.name == "python3"
    intro, broken_heading, broken, why, turn, attempt, check, solution_heading, fixed, more = notebook.cells
    assert [c.cell_type for c in notebook.cells] == [
        "markdown", "markdown", "code", "markdown", "markdown", "code", "code", "markdown", "code", "markdown",
    ]  # fmt: skip
    assert intro.source.startswith(f"# {entry.title}\n") and entry.summary.strip() in intro.source
    assert broken_heading.source.startswith("## The broken code")
    assert broken.source == entry.repro.code.rstrip() and broken.metadata.tags == [RAISES]
    assert why.source.startswith("## Why") and entry.cause.strip() in why.source
    assert turn.source.startswith("## Your turn") and entry.fix.summary.strip() in turn.source
    assert attempt.source == f"{ATTEMPT_MAGIC}\n{entry.repro.code.rstrip()}"  # the fix is left to the learner
    assert check.metadata.tags == [RAISES] and "attempt.py" in check.source
    assert solution_heading.source.startswith("## A solution")
    assert fixed.source == entry.repro.fixed.rstrip() and fixed.metadata.jupyter.source_hidden is True
    assert RAISES not in fixed.metadata.tags
    assert f"fixer show {entry.id}" in more.source


@pytest.mark.parametrize(
    ("entry_id", "stand_in"),
    [
        ("default-cuda-vs-cuda-n", "FakeTensorMode plays the GPU"),
        ("numpy-on-cuda-tensor", "Meta tensors play the GPU"),
        ("torch-load-without-map-location", "No GPU needed"),
    ],
)
def test_intro_names_what_stands_in_for_the_gpu(entry_id: str, stand_in: str, catalog: Catalog) -> None:
    assert stand_in in entry_notebook(_exercise(catalog, entry_id)).cells[0].source


def test_entry_whose_repro_needs_hardware_or_is_missing_makes_no_notebook(catalog: Catalog) -> None:
    entry = _exercise(catalog, EXERCISES[0])
    assert entry.repro is not None
    on_gpu = entry.model_copy(update={"repro": entry.repro.model_copy(update={"needs": "cuda"})})
    for unfit in (on_gpu, entry.model_copy(update={"repro": None})):
        with pytest.raises(ValueError, match=entry.id):
            entry_notebook(unfit)
        assert exercise_entries([unfit]) == []


def test_write_notebooks_writes_each_exercise_by_id_and_the_same_bytes_again(catalog: Catalog, tmp_path: Path) -> None:
    out = tmp_path / "new" / "notebooks"
    paths = write_notebooks(catalog, out)
    assert paths == [out / f"{entry_id}.ipynb" for entry_id in EXERCISES]
    assert sorted(out.iterdir()) == sorted(paths)
    first = {path: path.read_bytes() for path in paths}
    for path in paths:
        nbformat.validate(nbformat.read(path, as_version=4))
    write_notebooks(catalog, out)
    assert {path: path.read_bytes() for path in paths} == first


@pytest.mark.parametrize("entry_id", EXERCISES)
def test_broken_cell_raises_an_error_of_its_entrys_family_in_a_kernel(
    entry_id: str, catalog: Catalog, executed: dict[str, Future[nbformat.NotebookNode]]
) -> None:
    entry = _exercise(catalog, entry_id)
    error = _error(_cells(executed[entry_id].result())["broken"])
    assert any(re.search(s.pattern, error.evalue) for s in entry.signatures), f"{error.ename}: {error.evalue}"


@pytest.mark.parametrize("entry_id", EXERCISES)
def test_fixer_ranks_the_entry_first_on_the_traceback_the_notebook_shows(
    entry_id: str, catalog: Catalog, matcher: Matcher, executed: dict[str, Future[nbformat.NotebookNode]]
) -> None:
    _exercise(catalog, entry_id)
    error = _error(_cells(executed[entry_id].result())["broken"])
    shown = _ANSI.sub("", "\n".join(error.traceback))
    assert shown.rstrip().endswith(f"{error.ename}: {error.evalue}".rstrip())
    ranked = [m.id for m in matcher.explain(shown).matches]
    assert ranked[:1] == [entry_id], f"ranked {ranked[:3]} for:\n{shown[-3000:]}"


@pytest.mark.parametrize("entry_id", EXERCISES)
def test_fixed_cell_runs_in_the_same_kernel_after_the_broken_one(
    entry_id: str, catalog: Catalog, executed: dict[str, Future[nbformat.NotebookNode]]
) -> None:
    _exercise(catalog, entry_id)
    fixed = _cells(executed[entry_id].result())["fixed"]
    assert fixed.execution_count is not None, "execution stopped before the fixed cell"
    errors = [f"{o.ename}: {o.evalue}" for o in fixed.outputs if o.output_type == "error"]
    assert errors == []


@pytest.mark.parametrize("entry_id", EXERCISES)
def test_the_check_fails_on_the_unfixed_copy_with_the_error_it_raises(
    entry_id: str, catalog: Catalog, executed: dict[str, Future[nbformat.NotebookNode]]
) -> None:
    entry = _exercise(catalog, entry_id)
    error = _error(_cells(executed[entry_id].result())["check"])
    assert error.ename == "AssertionError" and error.evalue.startswith("not fixed yet: it still stops with")
    assert any(re.search(s.pattern, error.evalue) for s in entry.signatures), error.evalue


@pytest.mark.parametrize("entry_id", EXERCISES[:3])
def test_the_check_passes_once_the_copy_is_fixed(entry_id: str, catalog: Catalog, tmp_path: Path) -> None:
    entry = _exercise(catalog, entry_id)
    assert entry.repro is not None
    notebook = entry_notebook(entry)
    _cells(notebook)["attempt"].source = f"{ATTEMPT_MAGIC}\n{entry.repro.fixed}"  # as a learner would fix it
    check = _cells(_execute(notebook, tmp_path))["check"]
    assert [o.text for o in check.outputs if o.output_type == "stream"] == ["Fixed: attempt.py runs to the end.\n"]
