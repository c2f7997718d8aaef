"""Read one of the user's own files as a syntax tree, when the traceback came from this machine.

Only the stdlib `ast` is used, so explaining stays fast; files are read, never run, and only `.py`
files under a size cap.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

# 500 KB is some 12,000 lines, more than any hand-written training script; parsing a bigger, generated
# file would cost a second or more of every explanation.
MAX_BYTES = 500_000


@lru_cache(maxsize=64)
def parse_source(path: str) -> tuple[ast.Module, list[str]] | None:
    """A user's .py file as a tree and its lines; None for anything too big, missing or not Python."""
    file = Path(path)
    try:
        if file.suffix != ".py" or not file.is_file() or file.stat().st_size > MAX_BYTES:
            return None
        text = file.read_text(encoding="utf-8", errors="replace")
        return ast.parse(text), text.splitlines()
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
