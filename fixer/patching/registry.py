"""Which codemods exist, by the id KB entries name in `fix.codemod`; loaded lazily.

A codemod lives in `fixer/patching/codemods/<id with underscores>.py` and defines CODEMOD. Ids are
found from the file names alone, so `fixer kb lint` can check them without importing LibCST.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from typing import TYPE_CHECKING

from fixer.patching import codemods

if TYPE_CHECKING:
    from fixer.patching.base import Codemod

CODEMODS: dict[str, str] = {info.name.replace("_", "-"): info.name for info in pkgutil.iter_modules(codemods.__path__)}

# What every file a codemod could change holds, by codemod id: a file without it is passed over before
# LibCST is imported (a third of a second) or parses it (seconds, for a long file with nothing to change).
_REQUIRES: dict[str, re.Pattern[str]] = {
    "move-partner-to-cpu-copy": re.compile("cpu"),  # the copy: .cpu(), .to("cpu"), torch.device("cpu")
    "optimizer-state-to-param-device": re.compile(r"\bload_state_dict\b"),  # the restore it follows
    "torch-load-add-map-location": re.compile(r"\bload\b"),  # torch.load, th.load, load imported from torch
}


def may_change(codemod_id: str, source: str) -> bool:
    """False when the codemod surely has nothing to change in `source`."""
    required = _REQUIRES.get(codemod_id)
    return required is None or required.search(source) is not None


def load(codemod_id: str) -> type[Codemod]:
    module = importlib.import_module(f"{codemods.__name__}.{CODEMODS[codemod_id]}")
    codemod: type[Codemod] = module.CODEMOD
    if codemod.id != codemod_id:
        raise LookupError(f"{module.__name__} defines codemod {codemod.id!r}, not {codemod_id!r}")
    return codemod
