"""Code shown in a paste (fixer.explain.detectors.pasted) is read as code: fences, REPL sessions,
IPython cells and a snippet above the traceback, tied to the failing line where the paste shows one."""

from __future__ import annotations

import ast

import yaml
from conftest import ROOT

from fixer.explain.detectors import Code, pasted
from fixer.explain.match import Matcher
from fixer.explain.parse import parse

CENSUS = {item["id"]: item for item in yaml.safe_load((ROOT / "benchmarks/census/census.yaml").read_text())}


def _tune(item_id: str) -> str:
    item = CENSUS[item_id]
    assert item["half"] == "tune"  # the holdout is only ever scored
    return str(item["traceback"])


def _shown(text: str) -> list[tuple[str, int, str]]:
    """Each code block read, as (file, failing line, that statement's code)."""
    tb = parse(text)
    assert tb is not None
    code = Code.of(tb.all_frames, tb.text)
    return [(s.file, s.line, ast.unparse(s.failing) if s.failing else "") for s in code.shown]


def test_a_real_repl_session_is_read_up_to_the_line_that_failed() -> None:
    assert _shown(_tune("cleanrl-sac-legacy-floattensor-cuda")) == [
        ("the paste", 2, "torch.FloatTensor((1 - 0) / 2.0, device='cuda:0')")
    ]


def test_a_real_quoted_fence_above_the_traceback_is_read_up_to_its_last_statement() -> None:
    assert _shown(_tune("pyannote-pipeline-to-int-device")) == [("the paste", 3, "pipeline = pipeline.to(0)")]


def test_a_fence_holding_the_traceback_is_not_code() -> None:
    text = '```\nTraceback (most recent call last):\n  File "a.py", line 1, in <module>\n    f()\nValueError: x\n```\n'
    assert list(pasted.blocks(text)) == []


def test_ipython_cells_keep_their_line_numbers_and_drop_the_output() -> None:
    text = "In [1]: import torch\n\nIn [2]: a = torch.ones(2).cuda()\n\nIn [3]: a + torch.ones(2)\n---------\n"
    (block,) = [b for b in pasted.blocks(text) if b.first == 1]
    assert block.lines == ("import torch", "", "a = torch.ones(2).cuda()", "", "a + torch.ones(2)")


def test_prose_above_a_traceback_is_no_snippet() -> None:
    text = "I ran the training again and it failed (see below).\nAny idea?\nTraceback (most recent call last):\n"
    assert list(pasted.blocks(text)) == []


def test_a_fence_that_shows_the_failing_line_ties_the_detectors_to_it(matcher: Matcher) -> None:
    text = (
        "My forward:\n\n```python\ndef forward(self, x):\n    x = self.encoder(x)\n"
        "    mask = torch.ones(x.shape[0], x.shape[1])\n    return self.head(x * mask)\n```\n\n"
        "```\nTraceback (most recent call last):\n"
        '  File "model.py", line 12, in forward\n    return self.head(x * mask)\n'
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"
        "```\n"
    )
    explained = matcher.explain(text)
    assert explained.matches[0].id == "tensor-created-without-device"
    assert any("the paste:6" in reason.text for reason in explained.matches[0].reasons)


def test_a_session_that_moves_one_tensor_and_makes_the_next_without_a_device(matcher: Matcher) -> None:
    text = (
        ">>> import torch\n>>> x = torch.randn(4, 3).cuda()\n>>> w = torch.randn(3, 2)\n>>> x @ w\n"
        'Traceback (most recent call last):\n  File "<stdin>", line 1, in <module>\n'
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"
    )
    explained = matcher.explain(text)
    assert explained.matches[0].id == "tensor-created-without-device"
    assert "factory-meets-moved-on-failing-line" in explained.evidence.facts


def test_code_that_says_its_error_in_a_comment_is_read_up_to_that_line(matcher: Matcher) -> None:
    """pytorch#30865: a script whose last line carries `# RuntimeError: ...`, and no traceback; the
    `# torch.Size([...])` comment two lines above it is output, not the error."""
    text = _tune("pytorch-stft-window-on-cpu")
    code = Code.of((), text)
    assert [(s.file, s.line) for s in code.shown] == [("the paste", 14)]
    explained = matcher.explain(text)
    assert explained.matches[0].id == "tensor-created-without-device"
    assert any("the paste:14" in reason.text for reason in explained.matches[0].reasons)


def test_a_comment_that_names_no_error_makes_no_snippet() -> None:
    text = "x = torch.ones(2).cuda()\ny = x + torch.ones(2)  # shape: torch.Size([2])\n"
    assert list(pasted.blocks(text)) == []
