"""Every claim in the KB is executed: each entry's repro raises an error fixer maps to that entry,
and its fixed code runs. CPU stand-ins (FakeTensorMode, meta) where possible; real CUDA otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import missing_imports

from fixer.kb.catalog import load
from fixer.kb.repro import Run, run_script, trimmed
from fixer.kb.schema import Repro

_ENTRIES = [e for e in load(Path(__file__).resolve().parents[2] / "kb") if e.repro is not None]
_MARKS = {"cpu": (), "cuda": (pytest.mark.cuda,), "2-gpus": (pytest.mark.cuda, pytest.mark.two_gpus)}
_PARAMS = [pytest.param(e.id, id=e.id, marks=_MARKS.get(e.repro.needs, (pytest.mark.cuda,))) for e in _ENTRIES]
_SCRIPTS = {"repro": "exercise.py", "fixed": "fixed.py"}  # `repro.raises` quotes exercise.py, as training shows it


@pytest.fixture(scope="module")
def started(request, tmp_path_factory) -> Iterator[dict[tuple[str, str], Future[Run]]]:
    """The selected tests' CPU scripts started up front, two at a time: each is its own process paying a
    torch import, and CI has two cores. Each test waits for its own; accelerator scripts run in their test."""
    kinds = {"test_repro_raises_the_error_of_its_own_entry": "repro", "test_fixed_code_runs": "fixed"}
    selected = {
        (item.callspec.params["entry_id"], kinds[item.originalname])
        for item in request.session.items
        if item.module is request.module and item.originalname in kinds
    }
    with ThreadPoolExecutor(2) as pool:
        runs = {}
        for entry in _ENTRIES:
            if entry.repro.needs != "cpu" or missing_imports(
                entry.repro.code + "\n" + entry.repro.fixed, entry.repro.loads
            ):
                continue
            for kind, code in (("repro", entry.repro.code), ("fixed", entry.repro.fixed)):
                if (entry.id, kind) not in selected:
                    continue
                script = tmp_path_factory.mktemp(f"{entry.id}-{kind}") / _SCRIPTS[kind]
                script.write_text(code)
                runs[entry.id, kind] = pool.submit(run_script, script)
        yield runs


def _run(started: dict[tuple[str, str], Future[Run]], entry_id: str, kind: str, repro: Repro, directory: Path) -> Run:
    if (entry_id, kind) in started:
        return started[entry_id, kind].result()
    code = repro.code if kind == "repro" else repro.fixed
    missing = missing_imports(code, repro.loads)
    if missing:
        pytest.skip(f"the repro imports {', '.join(missing)}, not installed here")
    script = directory / _SCRIPTS[kind]
    script.write_text(code)
    return run_script(script)


@pytest.mark.parametrize("entry_id", _PARAMS)
def test_repro_raises_the_error_of_its_own_entry(entry_id, catalog, matcher, started, tmp_path):
    repro = catalog.get(entry_id).repro
    run = _run(started, entry_id, "repro", repro, tmp_path)
    assert run.raised, f"the repro did not raise:\n{run.output[-3000:]}"
    ranked = [m.id for m in matcher.explain(run.output).matches]
    assert ranked[:1] == [entry_id], f"ranked {ranked[:3]} for:\n{run.output[-3000:]}"
    if repro.needs == "cpu" or repro.raises is not None:
        printed = trimmed(run.output, _SCRIPTS["repro"])
        assert repro.raises == printed, f"repro.raises should read:\n{printed}"


@pytest.mark.parametrize("entry_id", _PARAMS)
def test_fixed_code_runs(entry_id, catalog, started, tmp_path):
    run = _run(started, entry_id, "fixed", catalog.get(entry_id).repro, tmp_path)
    assert run.returncode == 0, run.output[-3000:]
