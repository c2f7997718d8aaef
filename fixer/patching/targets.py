"""The user's own files a traceback names, present on this machine: the only files fixer may patch.

Free of LibCST, so `fixer explain` can ask "is there anything to patch here?" for nothing.
"""

from __future__ import annotations

from pathlib import Path

from fixer.parse import Traceback

LIBRARY_DIRS = frozenset({"site-packages", "dist-packages"})


def user_files(tb: Traceback) -> dict[Path, tuple[int, ...]]:
    """Each user .py file that exists here, innermost first, with the lines the traceback names."""
    lines: dict[Path, list[int]] = {}
    for frame in reversed(tb.all_frames):
        path = Path(frame.path)
        if not frame.is_user or path.suffix != ".py" or LIBRARY_DIRS.intersection(path.parts):
            continue
        if path.is_file() and frame.line:
            lines.setdefault(path.resolve(), []).append(frame.line)
    return {path: tuple(reversed(found)) for path, found in lines.items()}
