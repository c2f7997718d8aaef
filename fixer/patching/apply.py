"""Write a patch, and only when it is still the patch of the file as it is now, in the user's project.

A patch is written only to a file the user owns and may write, under the project directory (the
working directory, or `--root`), outside any installed library or Python installation, with one link;
through a temporary file beside it and a rename, so a crash never leaves half a file, keeping the
file's mode, group and line endings. The file is checked once more just before the rename, so an
edit made while fixer wrote is never lost.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
import tempfile
from pathlib import Path

from fixer.patching.plan import Patch
from fixer.patching.targets import LIBRARY_DIRS


class PatchError(Exception):
    """The patch was not written to `path`; `reason` says why, in a few words."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def apply(patch: Patch, root: Path) -> None:
    path = patch.path
    _check_place(path, root.resolve())
    before = _stat(path, follow=False)  # a link swapped in for the file is not the file fixer read or wrote
    _check_file(path, before)
    if _digest(path) != patch.digest:
        raise PatchError(path, "changed since fixer read it; run fixer again")
    temporary = _write_temporary(path, patch.after.encode("utf-8"), before)
    try:
        if _fingerprint(_stat(path, follow=False)) != _fingerprint(before) or _digest(path) != patch.digest:
            raise PatchError(path, "changed since fixer read it; run fixer again")
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _check_place(path: Path, root: Path) -> None:
    if LIBRARY_DIRS.intersection(path.parts):
        raise PatchError(path, "belongs to an installed library; fixer only edits your own files")
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        if path.is_relative_to(Path(prefix).resolve()) and not root.is_relative_to(Path(prefix).resolve()):
            raise PatchError(path, f"belongs to the Python installation {prefix}; fixer only edits your own files")
    if not path.is_relative_to(root):
        raise PatchError(
            path, f"outside the project {root}; fixer edits only files under it (--root DIR names another)"
        )


def _check_file(path: Path, info: os.stat_result) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise PatchError(path, "is now a symbolic link; fixer replaces only the regular file it read")
    if not stat.S_ISREG(info.st_mode):
        raise PatchError(path, "not a regular file")
    if info.st_uid != os.geteuid():
        raise PatchError(
            path, f"owned by uid {info.st_uid}, not by you (uid {os.geteuid()}); fixer edits only your own files"
        )
    if not info.st_mode & stat.S_IWUSR:  # by the mode bits: root may write anything, but the user said no
        raise PatchError(path, "read-only; fixer does not override a file's permissions")
    if info.st_nlink > 1:
        raise PatchError(
            path, f"has {info.st_nlink} hard links and replacing it would split them; fixer leaves it alone"
        )
    directory = _stat(path.parent)
    own_directory = directory.st_uid == os.geteuid()
    if (own_directory and not directory.st_mode & stat.S_IWUSR) or not os.access(path.parent, os.W_OK):
        raise PatchError(path, "its directory is read-only, and fixer writes a temporary file beside it")


def _write_temporary(path: Path, content: bytes, like: os.stat_result) -> str:
    """The new content in a file beside `path`, with its mode and group, ready to be renamed over it."""
    try:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".fixer")
    except OSError as exc:
        raise PatchError(path, f"cannot write beside it ({exc.strerror or exc})") from None
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, stat.S_IMODE(like.st_mode))
        if like.st_gid != os.getegid():
            os.chown(temporary, -1, like.st_gid)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise PatchError(path, f"cannot write beside it ({exc.strerror or exc})") from None
    return temporary


def _stat(path: Path, *, follow: bool = True) -> os.stat_result:
    try:
        return os.stat(path, follow_symlinks=follow)
    except OSError as exc:
        raise PatchError(path, f"cannot read ({exc.strerror or exc})") from None


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise PatchError(path, f"cannot read ({exc.strerror or exc})") from None


def _fingerprint(info: os.stat_result) -> tuple[int, ...]:
    """What changes when anyone writes or touches the file."""
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
