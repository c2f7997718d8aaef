"""fixer's one cache directory: `$FIXER_CACHE_DIR`, else `$XDG_CACHE_HOME/fixer`, else `~/.cache/fixer`.
It holds the KB's index (`index/`) and the records of applied patches (`applied/`)."""

from __future__ import annotations

import os
from pathlib import Path


def directory() -> Path:
    configured = os.environ.get("FIXER_CACHE_DIR")
    if configured:
        return Path(configured)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "fixer"


__all__ = ["directory"]
