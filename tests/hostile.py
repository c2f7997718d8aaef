"""Inputs shaped to make a parser or a regex work hard: each is about 1 MB as fixer reads it.

Shared by tests/test_hostile_input.py (nothing escapes, nothing hangs) and
benchmarks/hostile_input.py (how long each takes).
"""

from __future__ import annotations

MESSAGE = "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
LINE = 16_000  # about textio.MAX_LINE_CHARS: longer lines are cut before parsing
SIZE = 1 << 20


def _traceback(code: str) -> str:
    return f'Traceback (most recent call last):\n  File "train.py", line 3, in step\n    {code}\n{MESSAGE}\n'


def _lines(line: str) -> str:
    return (line + "\n") * (SIZE // (len(line) + 1))


SHAPES: dict[str, str] = {
    "code line of spaces": _traceback("return" + " " * LINE + "x"),
    "code line of names": _traceback("mask, " * (LINE // 6) + "= f(x)"),
    "code line of calls": _traceback("torch.zeros(" * (LINE // 12)),
    "code line of assignments": _traceback("a = " * (LINE // 4)),
    "message of long lines": MESSAGE + "\n" + _lines("x" * LINE)[: SIZE // 17],
    "message of slashes": "RuntimeError: " + "/a" * (LINE // 2) + "\n" + _lines("/a" * (LINE // 2)),
    "message of brackets": MESSAGE + "\n" + _lines("[" * LINE),
    "message of device names": MESSAGE + " " + "cuda:0 and " * (LINE // 11),
    "message of legacy types": "RuntimeError: Input type (" + "torch.cuda.FloatTensor " * (LINE // 23),
    "log of factory calls": _lines("torch.zeros(" * (LINE // 12)) + MESSAGE,
    "log of words": _lines("x " * (LINE // 2)) + MESSAGE,
    "link openers": _lines("[a](" * (LINE // 4)) + MESSAGE,
    "terminal escapes": _lines("\x1b]8;;file:///a\x1b\\" * (LINE // 16)) + MESSAGE,
    "30,000 frames": '  File "a.py", line 1, in f\n    x = 1\n' * 30_000 + MESSAGE,
    "1,000 chained exceptions": (
        _traceback("x") + "\nThe above exception was the direct cause of the following exception:\n\n"
    )
    * 1_000,
    "linked numbered lines": _lines("[1](https://" + "a:" * (LINE // 2)) + MESSAGE,
    "headers of one long name": _lines("File " + "a" * LINE) + MESSAGE,
    "links to alternating files": ("    [1](file:///a.py:1) x\n    [1](file:///b.py:1) y\n" * (SIZE // 50)) + MESSAGE,
    "notebook frames of context": (
        ("Cell In[1], line 9, in f\n" + "      1 )(\n" * 40 + "----> 9 x = g(y)\n\n") * (SIZE // 640) + MESSAGE
    ),
    "one 10 MB line": "RuntimeError: " + "a" * (10 * SIZE),
    "huge numbers": f'  File "a.py", line {"9" * 5000}, in f\n[rank{"9" * 5000}]: {MESSAGE}\n' * 100,
}
