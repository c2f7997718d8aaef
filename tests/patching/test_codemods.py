"""Codemod fixtures in the TorchFix style: fixtures/<codemod>/<case>.in.py -> <case>.out.py.

A case without .out.py is code the codemod must leave alone. A line marked `# fixer: error` is where
the traceback points. Every case with an .out.py is also executed: the original must fail with a
device error that fixer puts the codemod's entry first for, and the patched code must run. The
scripts use the `meta` device or FakeTensorMode on `cuda:N` as the stand-in accelerator.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
import yaml

from fixer.kb.repro import run_script
from fixer.patching import base, registry
from fixer.patching.base import Target, run

FIXTURES = Path(__file__).parent / "fixtures"
CASES = sorted(FIXTURES.glob("*/*.in.py"))
VERDICTS: dict[str, dict[str, str]] = yaml.safe_load((FIXTURES / "safety.yaml").read_text())


def _target(source: str) -> Target:
    return Target(lines=tuple(n for n, line in enumerate(source.splitlines(), 1) if "# fixer: error" in line))


def _expected(case: Path) -> Path:
    return case.with_name(case.name.replace(".in.py", ".out.py"))


def _ids(cases: list[Path]) -> list[str]:
    return [f"{c.parent.name}/{c.name.removesuffix('.in.py')}" for c in cases]


def test_every_changing_case_has_a_decided_verdict():
    changing = {(c.parent.name, c.name.removesuffix(".in.py")) for c in CASES if _expected(c).exists()}
    decided = {(codemod, case) for codemod, cases in VERDICTS.items() for case in cases}
    assert decided == changing
    assert {v for cases in VERDICTS.values() for v in cases.values()} == {"safe", "unsafe"}


def test_every_registered_codemod_has_fixtures():
    assert {c.parent.name for c in CASES} == set(registry.CODEMODS)
    for codemod_id in registry.CODEMODS:
        cases = [c for c in CASES if c.parent.name == codemod_id]
        assert any(_expected(c).exists() for c in cases), f"{codemod_id}: no case it changes"
        assert any(not _expected(c).exists() for c in cases), f"{codemod_id}: no case it must leave alone"


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_codemod_output(case: Path):
    codemod = registry.load(case.parent.name)
    source = case.read_text()
    result = run(codemod, source, _target(source))
    expected = _expected(case)
    if expected.exists():
        assert result is not None and result.code == expected.read_text()
        verdict = VERDICTS[case.parent.name][case.name.removesuffix(".in.py")]
        assert (result.safety, bool(result.why)) == (verdict, True), result.why
    else:
        assert result is None, "the codemod changed code it must leave alone"


# A case whose error only an older PyTorch raises says so on its first line; its loop runs in the others.
_NEEDS_OLD_TORCH = "# fixer: needs torch<2.1"
# One whose error no CPU stand-in raises (indexing a CPU tensor with a CUDA index) runs where a GPU is;
# one that asks for CUDA where there is none fails only on a machine without it.
_NEEDS_CUDA = "# fixer: needs cuda"
_NEEDS_NO_CUDA = "# fixer: needs torch without cuda"


def _marks(case: Path) -> list[pytest.MarkDecorator]:
    first = case.read_text().partition("\n")[0]
    if first == _NEEDS_CUDA:
        return [pytest.mark.cuda]
    if first == _NEEDS_NO_CUDA:
        return [pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available, so the original runs")]
    return []


_EXECUTED = [pytest.param(c, id=_ids([c])[0], marks=_marks(c)) for c in CASES if _expected(c).exists()]


@pytest.mark.parametrize("case", _EXECUTED)
def test_original_fails_with_the_entry_error_and_patched_code_runs(case: Path, catalog, matcher):
    if case.read_text().startswith(_NEEDS_OLD_TORCH):
        pytest.skip("the error it fixes is raised only by PyTorch before 2.1 (pytorch#103256)")
    codemod_id = case.parent.name
    entries = {e.id for e in catalog if e.fix.codemod == codemod_id}
    assert entries, f"no KB entry names {codemod_id}"
    with ThreadPoolExecutor(2) as pool:  # two separate processes, each paying for its torch import at once
        before, after = pool.map(run_script, (case, _expected(case)))
    assert before.raised, f"the original did not fail:\n{before.output[-2000:]}"
    ranked = [m.id for m in matcher.explain(before.output).matches]
    assert ranked and ranked[0] in entries, f"ranked {ranked[:3]} for:\n{before.output[-2000:]}"
    assert after.returncode == 0, after.output[-2000:]


@pytest.mark.parametrize(
    "source",
    [
        "x = y.cuda()\n",  # no import: torch.device could not be named
        "import torch.nn as nn\nm = nn.Linear(2, 2).cuda()\n",  # binds nn, not torch
    ],
)
def test_choose_device_leaves_a_file_that_does_not_import_torch_alone(source: str):
    result = run(registry.load("choose-device-at-run-time"), source, Target(lines=(source.count("\n"),)))
    assert result is None


_TAGGER = """import torch


class StreamingTagger:
    def __init__(self, encoder: torch.nn.Module) -> None:
        self.encoder = encoder
        self.framer = torch.nn.Linear(160, 16)

    def step(self, chunk: torch.Tensor) -> torch.Tensor:
        chunk = chunk.to(self.encoder.weight.device)
        frames = self.framer(chunk)  # fixer: error
        return self.encoder(frames)


# The meta device stands in for the GPU: its tensors carry shape and device only.
tagger = StreamingTagger(torch.nn.Linear(16, 4).to("meta"))
assert tagger.step(torch.randn(1, 160)).device.type == "meta"
"""


def test_move_model_moves_a_plain_objects_layer_where_it_is_built(tmp_path: Path):
    """WhisperLiveKit#197's shape: the inputs' device (`self.encoder.weight.device`) can be named in
    `__init__`, so the layer moves once, right after it is built, as the upstream fix did. The meta
    device stands in here: FakeTensorMode cannot move a layer built under it."""
    result = run(registry.load("move-model-to-device"), _TAGGER, _target(_TAGGER))
    assert result is not None and result.safety == "safe"
    built = "        self.framer = torch.nn.Linear(160, 16)\n"
    assert result.code == _TAGGER.replace(built, f"{built}        self.framer.to(self.encoder.weight.device)\n")
    (tmp_path / "before.py").write_text(_TAGGER)
    (tmp_path / "after.py").write_text(result.code)
    before, after = run_script(tmp_path / "before.py"), run_script(tmp_path / "after.py")
    assert before.raised and "is not on the expected device meta" in before.output
    assert after.returncode == 0, after.output[-2000:]


def test_a_file_without_what_a_codemod_requires_is_passed_over_unparsed(monkeypatch: pytest.MonkeyPatch):
    """pykeen's 1,400-line trainer holds no `load_state_dict`: LibCST took 3 s there to change nothing."""

    def parse(_source: str) -> None:
        raise AssertionError("parsed a file the codemod cannot change")

    monkeypatch.setattr(base.cst, "parse_module", parse)
    source = "for batch in loader:\n    loss(model(batch)).backward()\n    optimizer.step()\n"
    assert run(registry.load("optimizer-state-to-param-device"), source, Target(lines=(3,))) is None
