"""Each detector on its fixtures (fixtures/<detector id>.yaml beside this file, TorchFix style): the
code under `finds` must make it report its fact, the code under `leaves` must not. A fixture is a
small script of the shape the fact takes in real code; `# <- fails` marks the line the traceback
names, and the script is read as the user's file on this machine."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import ROOT

from fixer.explain.detectors import Code, registered
from fixer.explain.parse import Frame, parse

FIXTURES = Path(__file__).parent / "fixtures"
MARK = "# <- fails"


def _cases() -> list[pytest.param]:
    cases = []
    for file in sorted(FIXTURES.glob("*.yaml")):
        data = yaml.safe_load(file.read_text())
        for verdict in ("finds", "leaves"):
            for number, source in enumerate(data.get(verdict, []), 1):
                cases.append(pytest.param(file.stem, verdict, source, id=f"{file.stem}-{verdict}-{number}"))
    return cases


def _code(tmp_path: Path, source: str) -> Code:
    script = tmp_path / "train.py"
    script.write_text(source)
    marked = [n for n, line in enumerate(source.splitlines(), 1) if line.rstrip().endswith(MARK)]
    assert len(marked) == 1, f"mark the failing line with {MARK!r}"
    line = source.splitlines()[marked[0] - 1].strip()  # as a traceback prints it, comment and all
    return Code.of([Frame(path=str(script), line=marked[0], function="f", code=line, library=None)])


@pytest.mark.parametrize(("detector_id", "verdict", "source"), _cases())
def test_detector_on_its_fixture(tmp_path: Path, detector_id: str, verdict: str, source: str) -> None:
    found = list(registered()[detector_id].run(_code(tmp_path, source)))
    if verdict == "finds":
        assert found, "the detector missed its fact"
        assert all(place.startswith("train.py") for place in found), found
    else:
        assert found == [], "the detector reported a fact that is not there"


def test_every_detector_has_fixtures_that_it_finds_and_leaves() -> None:
    for detector_id in registered():
        data = yaml.safe_load((FIXTURES / f"{detector_id}.yaml").read_text())
        assert data.get("finds") and data.get("leaves"), detector_id


def test_a_fixture_names_a_detector_that_exists() -> None:
    assert {file.stem for file in FIXTURES.glob("*.yaml")} <= set(registered())


def test_a_library_line_that_makes_a_tensor_without_a_device_counts_and_pytorch_s_own_does_not() -> None:
    # the printed line of an installed library (a real ART thread's shape), then PyTorch's own internals
    code = "torch.autograd.backward(preds[:, label], torch.Tensor([1.0] * len(preds)), retain_graph=True)"
    library = Frame(
        path="/env/site-packages/art/classifiers/pytorch.py", line=211, function="f", code=code, library="art"
    )
    found = list(registered()["factory-without-device-on-line"].run(Code.of([library], read_files=False)))
    assert found and found[0].startswith("pytorch.py:211")
    own = Frame(path="/env/site-packages/torch/functional.py", line=9, function="f", code=code, library="torch")
    assert list(registered()["factory-without-device-on-line"].run(Code.of([own], read_files=False))) == []


def test_a_traceback_cut_before_its_exception_line_proves_nothing_by_what_its_last_line_lacks() -> None:
    # https://github.com/microsoft/InnerEye-DeepLearning/issues/198 (benchmarks/realcode): the log printed the
    # message, then frames that stop at the training loop's call; the optimizer step that failed lies deeper
    threads = yaml.safe_load((ROOT / "benchmarks/realcode/threads.yaml").read_text())
    text = next(t["traceback"] for t in threads if t["id"] == "innereye-run-recovery-optimizer-state-on-cpu")
    tb = parse(text)
    assert tb is not None and tb.final.cut
    outside = registered()["outside-optimizer-step"]
    assert list(outside.run(Code.of(tb.frames, read_files=False, cut=tb.final.cut))) == []
    assert list(outside.run(Code.of(tb.frames, read_files=False)))  # whole, the same lines would say it
