"""Write a patch, and only when it is still the patch of the file as it is now.

The write is atomic (a temporary file beside the target, then a rename), keeps the file's mode, and
refuses when the file changed since it was read or lies under site-packages.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile

from fixer.patching.plan import Patch
from fixer.patching.targets import LIBRARY_DIRS


class PatchError(Exception):
    """The patch was not written; the message says why, in one line."""


def apply(patch: Patch) -> None:
    path = patch.path
    if LIBRARY_DIRS.intersection(path.parts):
        raise PatchError(f"{path} belongs to an installed library; fixer only edits your own files")
    try:
        current = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PatchError(f"{path}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None
    if hashlib.sha256(current.encode()).hexdigest() != patch.digest:
        raise PatchError(f"{path} changed since fixer read it; run fixer again")
    mode = path.stat().st_mode
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".fixer")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(patch.after.encode("utf-8"))
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise PatchError(f"{path}: cannot write ({exc.strerror or exc})") from None
