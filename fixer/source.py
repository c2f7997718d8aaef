"""Read the user's own code around each frame, when the traceback came from this machine.

The failing line rarely shows the cause: a mask made on the CPU two lines up, a head replaced after
`model.to(device)`, a tensor kept as a plain attribute in `__init__`. The enclosing function and
class (or, for a script, the module up to the failing line) do. Only the stdlib `ast` is used, so
explaining stays fast; files are read, never run, and only `.py` files under a size cap.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from fixer.parse import Frame
from fixer.patching.targets import user_files

MAX_BYTES = 2_000_000
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def user_scopes(frames: Iterable[Frame]) -> tuple[str, ...]:
    """Source of the scopes enclosing each user frame's line, innermost first, without repeats; only
    in the files the traceback saw (`targets.locate`), never another file that has the same name."""
    seen: dict[str, None] = {}
    for path, lines in user_files(frames).items():
        for line in reversed(lines):
            for text in _scopes_at(str(path), line):
                seen.setdefault(text, None)
    return tuple(seen)


def _scopes_at(path: str, line: int) -> tuple[str, ...]:
    parsed = parse_source(path)
    if parsed is None:
        return ()
    tree, lines = parsed
    enclosing = [
        node
        for node in ast.walk(tree)
        if isinstance(node, _SCOPES) and node.lineno <= line <= (node.end_lineno or node.lineno)
    ]
    enclosing.sort(key=lambda node: -node.lineno)
    if not enclosing:  # a script: what ran before the failing line
        return ("\n".join(lines[:line]),)
    return tuple("\n".join(lines[node.lineno - 1 : node.end_lineno]) for node in enclosing)


@lru_cache(maxsize=64)
def parse_source(path: str) -> tuple[ast.Module, list[str]] | None:
    """A user's .py file as a tree and its lines; None for anything too big, missing or not Python."""
    file = Path(path)
    try:
        if file.suffix != ".py" or not file.is_file() or file.stat().st_size > MAX_BYTES:
            return None
        text = file.read_text(encoding="utf-8", errors="replace")
        return ast.parse(text), text.splitlines()
    except (OSError, SyntaxError, ValueError, RecursionError):
        return None
