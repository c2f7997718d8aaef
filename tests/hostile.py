"""Inputs shaped to make a parser or a regex work hard: each is about `size` bytes (1 MB by default)
as fixer reads it, except the shapes of one line, which textio cuts at MAX_LINE_CHARS whatever its size.

Shared by tests/test_hostile_input.py (nothing escapes, nothing hangs) and
benchmarks/hostile_input.py (how long each takes, at 1, 4 and 16 MB).
"""

from __future__ import annotations

MESSAGE = "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
LINE = 16_000  # about textio.MAX_LINE_CHARS: longer lines are cut before parsing
SIZE = 1 << 20
_CHAINED = "\nThe above exception was the direct cause of the following exception:\n\n"


def _traceback(code: str) -> str:
    return f'Traceback (most recent call last):\n  File "train.py", line 3, in step\n    {code}\n{MESSAGE}\n'


def _repeated(unit: str, size: int) -> str:
    return unit * max(1, size // len(unit))


def _lines(line: str, size: int) -> str:
    return _repeated(line + "\n", size)


def _recursion(size: int) -> str:
    """A model that calls itself: Python prints the same three frames over and over."""
    cycle = (
        '  File "/home/user/project/model.py", line 41, in forward\n    return self.block(x) + torch.zeros(3)\n'
        '  File "/usr/lib/python3/site-packages/torch/nn/modules/module.py", line 1736, in _call_impl\n'
        "    return forward_call(*args, **kwargs)\n"
        '  File "/home/user/project/model.py", line 57, in block\n    return self.forward(x.cuda())\n'
    )
    return "Traceback (most recent call last):\n" + _repeated(cycle, size) + MESSAGE


def _distinct_frames(size: int) -> str:
    frame = '  File "/home/user/project/layer_{0}.py", line {0}, in f{0}\n    y{0} = torch.zeros(3) + self.w{0}(x)\n'
    count = max(1, size // len(frame.format(10_000)))
    return "Traceback (most recent call last):\n" + "".join(frame.format(n) for n in range(count)) + MESSAGE


def shapes(size: int = SIZE) -> dict[str, str]:
    chained = _traceback("out = model(x.cuda(), torch.zeros(3), mask=mask)") + _CHAINED
    return {
        "code line of spaces": _traceback("return" + " " * LINE + "x"),
        "code line of names": _traceback("mask, " * (LINE // 6) + "= f(x)"),
        "code line of calls": _traceback("torch.zeros(" * (LINE // 12)),
        "code line of assignments": _traceback("a = " * (LINE // 4)),
        "message of long lines": MESSAGE + "\n" + _lines("x" * LINE, size),
        "message of slashes": "RuntimeError: " + "/a" * (LINE // 2) + "\n" + _lines("/a" * (LINE // 2), size),
        "message of brackets": MESSAGE + "\n" + _lines("[" * LINE, size),
        "message of device names": MESSAGE + " " + "cuda:0 and " * (LINE // 11),
        "message of legacy types": "RuntimeError: Input type (" + "torch.cuda.FloatTensor " * (LINE // 23),
        "log of factory calls": _lines("torch.zeros(" * (LINE // 12), size) + MESSAGE,
        "log of words": _lines("x " * (LINE // 2), size) + MESSAGE,
        "lines of spaces and tabs": _lines(" \t" * (LINE // 2), size) + MESSAGE,
        "log padded with spaces": _lines("epoch 1 " + " " * 200 + "| loss 0.1" + " " * 200, size) + MESSAGE,
        "link openers": _lines("[a](" * (LINE // 4), size) + MESSAGE,
        "terminal escapes": _lines("\x1b]8;;file:///a\x1b\\" * (LINE // 16), size) + MESSAGE,
        "frames of one line": _repeated('  File "a.py", line 1, in f\n    x = 1\n', size) + MESSAGE,
        "a deep recursion": _recursion(size),
        "distinct frames with code": _distinct_frames(size),
        "chained exceptions": _repeated(_traceback("x") + _CHAINED, size),
        "chained tracebacks with code": _repeated(chained, size),
        "linked numbered lines": _lines("[1](https://" + "a:" * (LINE // 2), size) + MESSAGE,
        "headers of one long name": _lines("File " + "a" * LINE, size) + MESSAGE,
        "links to alternating files": _repeated("    [1](file:///a.py:1) x\n    [1](file:///b.py:1) y\n", size)
        + MESSAGE,
        "notebook frames of context": (
            _repeated("Cell In[1], line 9, in f\n" + "      1 )(\n" * 40 + "----> 9 x = g(y)\n\n", size) + MESSAGE
        ),
        "one long line": "RuntimeError: " + "a" * (10 * size),
        "huge numbers": _repeated(f'  File "a.py", line {"9" * 5000}, in f\n[rank{"9" * 5000}]: {MESSAGE}\n', size),
    }


SHAPES = shapes()
