"""Hostile and huge input (tests/hostile.py) is read to an answer: no exception escapes and nothing
hangs. How long each shape takes is benchmarks/hostile_input.py's business; here all of them
together must end well inside a generous bound, which catastrophic backtracking never does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hostile import SHAPES

from fixer.explain.match import Matcher
from fixer.textio import collect

HERE = Path(__file__).parent


@pytest.mark.parametrize("name", SHAPES)
def test_each_shape_is_read_without_an_exception(matcher: Matcher, name: str) -> None:
    text = collect([SHAPES[name].encode()])
    result = matcher.explain(text)
    assert result.traceback is None or len(result.traceback.message) <= 8_000


def test_every_shape_ends_well_inside_a_bound_that_backtracking_would_pass() -> None:
    code = (
        "from hostile import SHAPES\n"
        "from fixer.kb.catalog import load\nfrom fixer.explain.match import Matcher\nfrom fixer.textio import collect\n"
        "matcher = Matcher(load())\n"
        "for text in SHAPES.values():\n    matcher.explain(collect([text.encode()]))\n"
        "print('done')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=HERE, capture_output=True, text=True, timeout=120)
    assert done.stdout == "done\n", done.stderr[-2000:]
