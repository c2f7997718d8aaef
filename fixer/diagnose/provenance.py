"""Whether a traceback was produced here: on this machine, from these files, by this Python's torch.

Only then may this machine's state confirm or rule out one of its causes; a paste from a colleague's
GPU box says nothing about a laptop without CUDA. It counts as produced here when the user files it
names are on this machine and hold, at the lines it names, the code it printed (`targets.locate`; a file
whose lines moved since the run is read for its code, but is not the file as it ran), and
its torch frames, if any, are this interpreter's torch. Anything less (no file of the user's named,
none of them here, another version of them here, another torch's frames) is "not shown to be here".
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from fixer.explain.libraries import normalise_path
from fixer.explain.parse import Traceback
from fixer.patching.targets import locate


@dataclass(frozen=True)
class Provenance:
    here: bool
    why: str  # one line: what shows it ran here, or what is missing


def provenance(tb: Traceback, torch_dir: str | None) -> Provenance:
    """`torch_dir`: this interpreter's torch package folder, when known."""
    if not any(f.is_user and f.path.endswith(".py") for f in tb.all_frames):
        return Provenance(False, "the traceback names no file of yours, so nothing shows it ran on this machine")
    located = locate(tb)
    if not located.files:
        if located.skipped:
            first = located.skipped[0]
            return Provenance(False, f"{first.path} is here, but it is not the file that ran ({first.reason})")
        return Provenance(False, "none of the traceback's files is on this machine")
    if located.moved:
        first_moved = located.moved[0]
        return Provenance(False, f"{first_moved.path} is here, but not as it ran ({first_moved})")
    other = _other_torch(tb, torch_dir) if torch_dir else None
    if other is not None:
        return Provenance(False, f"its torch frames are in {other}, not in this Python's torch ({torch_dir})")
    return Provenance(True, "the traceback's files are here and hold the lines it printed")


def _other_torch(tb: Traceback, torch_dir: str) -> str | None:
    """The torch folder of a torch frame that is not this interpreter's, or None."""
    mine = os.path.realpath(torch_dir)
    for frame in tb.all_frames:
        if not (frame.library or "").startswith("torch"):
            continue
        path = normalise_path(frame.path)
        cut = path.rfind("/torch/")
        if cut < 0:
            continue
        folder = path[: cut + len("/torch")]
        if os.path.realpath(folder) != mine:
            return folder
    return None
