"""Where the KB lives: the built-in directory and the team directories added to it. Kept apart from
the catalog so that finding the KB imports neither YAML nor pydantic."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path


class KBError(Exception):
    """A KB file that cannot be read or does not fit the schema; says which file and why."""


def default_root() -> Path:
    """`$FIXER_KB`, else the KB shipped inside the wheel, else `kb/` of a source checkout."""
    override = os.environ.get("FIXER_KB")
    if override:
        return Path(override)
    package = Path(__file__).resolve().parents[1]
    shipped = package / "_kb"
    return shipped if shipped.is_dir() else package.parent / "kb"


TEAM_PATH_VARIABLE = "FIXER_KB_PATH"


def team_dirs(given: Sequence[str | Path] = ()) -> tuple[Path, ...]:
    """The team directories: those in `$FIXER_KB_PATH` (separated like PATH), then those given on the
    command line, so a `--kb` can override what the environment sets for every command."""
    listed = os.environ.get(TEAM_PATH_VARIABLE, "").split(os.pathsep)
    return tuple(Path(d) for d in [*listed, *given] if str(d))


__all__ = ["TEAM_PATH_VARIABLE", "KBError", "default_root", "team_dirs"]
