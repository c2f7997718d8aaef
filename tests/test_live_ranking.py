"""What the failing process shows decides the answer: six bugs, each under `fixer run`, under
`fixer.install()` and under `%load_ext fixer` in a real kernel, with the meta device standing in for a
GPU. The message is the same meta-kernel wording for most of them; the objects tell them apart."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from conftest import first_causes
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
BUGS = ROOT / "tests" / "live_bugs"
CAUSES = {
    "loss_weight": "loss-weight-on-cpu",
    "model_not_moved": "model-not-moved",
    "inputs_not_moved": "inputs-not-moved",
    "plain_attribute": "plain-tensor-attribute",
    "plain_list": "submodules-in-plain-container",
    "factory_in_forward": "tensor-created-without-device",
}
ENV = {**os.environ, "DEVICE": "meta", "PYTHONPATH": str(ROOT), "COLUMNS": "200", "NO_COLOR": "1"}


def _script(bug: str) -> str:
    return (BUGS / f"{bug}.py").read_text()


def _run(bug: str, where: Path, hooked: bool) -> subprocess.CompletedProcess:
    """The script under `fixer run`, or run by python with `fixer.install()` first."""
    script = where / f"{bug}.py"
    script.write_text(("import fixer\nfixer.install()\n" if hooked else "") + _script(bug))
    command = [sys.executable, script.name] if hooked else [sys.executable, "-m", "fixer", "run", script.name]
    return subprocess.run(command, cwd=where, env=ENV, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, bool], subprocess.CompletedProcess]:
    """All twelve processes, three at once: each pays a torch import."""
    with ThreadPoolExecutor(3) as pool:
        started = {
            (bug, hooked): pool.submit(_run, bug, tmp_path_factory.mktemp(bug), hooked)
            for bug in CAUSES
            for hooked in (False, True)
        }
        return {key: run.result() for key, run in started.items()}


@pytest.mark.parametrize("bug", CAUSES)
def test_fixer_run_puts_the_observed_cause_first(bug, runs):
    done = runs[bug, False]
    assert done.returncode == 1
    assert first_causes(done.stderr)[:1] == [CAUSES[bug]], done.stderr[-3000:]


@pytest.mark.parametrize("bug", CAUSES)
def test_install_puts_the_observed_cause_first(bug, runs):
    done = runs[bug, True]
    assert done.returncode == 1
    assert first_causes(done.stderr)[:1] == [CAUSES[bug]], done.stderr[-3000:]


def _in_a_kernel(bug: str, where: Path) -> str:
    """The script as a notebook cell after `%load_ext fixer`; what the cell showed besides its error (rich
    shows the explanation as a display, in a notebook)."""
    cells = [nbformat.v4.new_code_cell("%load_ext fixer"), nbformat.v4.new_code_cell(_script(bug))]
    cells[1].metadata["tags"] = ["raises-exception"]
    notebook = nbformat.v4.new_notebook(cells=cells)
    client = NotebookClient(notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(where)}})
    with (where / "kernel.log").open("w") as log:
        client.execute(stderr=log, env=ENV)
    outputs = notebook.cells[1].outputs
    return "".join(o.get("text") or o.get("data", {}).get("text/plain", "") for o in outputs)


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """All six notebooks at once, each in its own kernel: a kernel costs a start and a torch import."""
    with ThreadPoolExecutor(3) as pool:
        runs = {bug: pool.submit(_in_a_kernel, bug, tmp_path_factory.mktemp(bug)) for bug in CAUSES}
        return {bug: run.result() for bug, run in runs.items()}


@pytest.mark.parametrize("bug", CAUSES)
def test_load_ext_in_a_notebook_puts_the_observed_cause_first(bug, kernels):
    assert first_causes(kernels[bug])[:1] == [CAUSES[bug]], kernels[bug][-3000:]
