"""Every claim in the KB is executed: each entry's repro raises an error fixer maps to that entry,
and its fixed code runs. CPU stand-ins (FakeTensorMode, meta) where possible; real CUDA otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixer.catalog import load
from fixer.repro import run_script, verification

_ENTRIES = [e for e in load(Path(__file__).resolve().parents[1] / "kb") if e.repro is not None]
_PARAMS = [pytest.param(e.id, id=e.id, marks=() if verification(e) == "cpu" else pytest.mark.cuda) for e in _ENTRIES]


@pytest.mark.parametrize("entry_id", _PARAMS)
def test_repro_raises_the_error_of_its_own_entry(entry_id, catalog, matcher, tmp_path):
    script = tmp_path / "repro.py"
    script.write_text(catalog.get(entry_id).repro.code)
    run = run_script(script)
    assert run.raised, f"the repro did not raise:\n{run.output[-3000:]}"
    ranked = [m.id for m in matcher.explain(run.output).matches]
    assert ranked[:1] == [entry_id], f"ranked {ranked[:3]} for:\n{run.output[-3000:]}"


@pytest.mark.parametrize("entry_id", _PARAMS)
def test_fixed_code_runs(entry_id, catalog, tmp_path):
    script = tmp_path / "fixed.py"
    script.write_text(catalog.get(entry_id).repro.fixed)
    run = run_script(script)
    assert run.returncode == 0, run.output[-3000:]
