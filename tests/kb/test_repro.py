"""Every claim in the KB is executed: each entry's repro raises an error fixer maps to that entry,
and its fixed code runs. CPU stand-ins (FakeTensorMode, meta) where possible; real CUDA otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import missing_imports

from fixer.kb.catalog import load
from fixer.kb.repro import run_script, trimmed

_ENTRIES = [e for e in load(Path(__file__).resolve().parents[2] / "kb") if e.repro is not None]
_MARKS = {"cpu": (), "cuda": (pytest.mark.cuda,), "2-gpus": (pytest.mark.cuda, pytest.mark.two_gpus)}
_PARAMS = [pytest.param(e.id, id=e.id, marks=_MARKS.get(e.repro.needs, (pytest.mark.cuda,))) for e in _ENTRIES]


def _skip_without_imports(code: str) -> None:
    missing = missing_imports(code)
    if missing:
        pytest.skip(f"the repro imports {', '.join(missing)}, not installed here")


@pytest.mark.parametrize("entry_id", _PARAMS)
def test_repro_raises_the_error_of_its_own_entry(entry_id, catalog, matcher, tmp_path):
    repro = catalog.get(entry_id).repro
    script = tmp_path / "exercise.py"  # the name `repro.raises` quotes, as the training exercises show it
    script.write_text(repro.code)
    _skip_without_imports(script.read_text())
    run = run_script(script)
    assert run.raised, f"the repro did not raise:\n{run.output[-3000:]}"
    ranked = [m.id for m in matcher.explain(run.output).matches]
    assert ranked[:1] == [entry_id], f"ranked {ranked[:3]} for:\n{run.output[-3000:]}"
    if repro.needs == "cpu" or repro.raises is not None:
        printed = trimmed(run.output, script.name)
        assert repro.raises == printed, f"repro.raises should read:\n{printed}"


@pytest.mark.parametrize("entry_id", _PARAMS)
def test_fixed_code_runs(entry_id, catalog, tmp_path):
    script = tmp_path / "fixed.py"
    script.write_text(catalog.get(entry_id).repro.fixed)
    _skip_without_imports(script.read_text())
    run = run_script(script)
    assert run.returncode == 0, run.output[-3000:]
