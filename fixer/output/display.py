"""How wide fixer's text may be, chosen once per command: `--width` is a global option, so the
dispatcher sets it here for the length of one command instead of threading it through every printer.

No rich import: `fixer explain --json` passes through here and must stay light."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

# rich lays text out to a number of columns; no line fixer prints comes near this one, so a pipe or a
# file gets each paragraph on one line and each table at its natural width.
UNWRAPPED = 100_000

_width: int | None = None


@contextmanager
def using_width(width: int | None) -> Iterator[None]:
    global _width
    _width = width
    try:
        yield
    finally:
        _width = None


def width(is_terminal: bool) -> int | None:
    """`--width` first, then COLUMNS when set, then a terminal's own width (None: rich measures it);
    text bound for a pipe or a file is not wrapped at all, since no terminal asked for the breaks."""
    if _width is not None:
        return _width
    if is_terminal or os.environ.get("COLUMNS", "").strip().isdigit():
        return None
    return UNWRAPPED


def plain(color: str) -> bool:
    """No escape codes at all: `--color never`, or NO_COLOR (https://no-color.org) unless `--color always`."""
    return color == "never" or (color == "auto" and bool(os.environ.get("NO_COLOR")))
