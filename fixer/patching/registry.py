"""Which codemods exist, by the id KB entries name in `fix.codemod`; loaded lazily.

A codemod lives in `fixer/patching/codemods/<id with underscores>.py` and defines CODEMOD. Ids are
found from the file names alone, so `fixer kb lint` can check them without importing LibCST.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING

from fixer.patching import codemods

if TYPE_CHECKING:
    from fixer.patching.base import Codemod

CODEMODS: dict[str, str] = {info.name.replace("_", "-"): info.name for info in pkgutil.iter_modules(codemods.__path__)}


def load(codemod_id: str) -> type[Codemod]:
    module = importlib.import_module(f"{codemods.__name__}.{CODEMODS[codemod_id]}")
    codemod: type[Codemod] = module.CODEMOD
    if codemod.id != codemod_id:
        raise LookupError(f"{module.__name__} defines codemod {codemod.id!r}, not {codemod_id!r}")
    return codemod
