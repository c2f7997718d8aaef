"""Which codemods exist, by the id KB entries name in `fix.codemod`; loaded lazily.

Kept free of LibCST imports so `fixer kb lint` can check ids without paying for the parser.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fixer.patching.base import Codemod

# id -> module under fixer.patching.codemods (the module defines CODEMOD, a Codemod subclass)
CODEMODS: dict[str, str] = {
    "move-to-after-module-assignment": "module_assignment",
}


def load(codemod_id: str) -> type[Codemod]:
    module = importlib.import_module(f"fixer.patching.codemods.{CODEMODS[codemod_id]}")
    codemod: type[Codemod] = module.CODEMOD
    return codemod
