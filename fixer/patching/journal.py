"""The way back from `fixer patch --apply`: what each run wrote, kept outside the user's project.

Each applied run leaves one record in the user's cache directory (`$XDG_CACHE_HOME/fixer/applied`,
`~/.cache/fixer/applied` by default, `FIXER_CACHE_DIR` to move it): the project it wrote in, and for
each file its text before and a fingerprint of its text after. `fixer patch --revert` takes the newest
record of the project back, through the same safe write as `--apply`, and only into files that still
hold exactly what fixer wrote: an edit made since is never lost. Undoing drops the record, so the
next `--revert` undoes the run before it.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

from fixer import cache
from fixer.patching.plan import Patch

_VERSION = 1


@dataclass(frozen=True)
class Written:
    """One file a run patched: its text before, and the fingerprint of what fixer wrote over it."""

    path: Path
    before: str
    after_sha256: str
    entry: str

    def undo(self) -> Patch:
        """The patch back to `before`, when the file still holds exactly what fixer wrote; else why not."""
        try:
            current = self.path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise Unrevertable(self.path, f"cannot read it ({exc})") from None
        if _sha256(current) != self.after_sha256:
            raise Unrevertable(self.path, "changed since fixer patched it; not reverted, so that edit is kept")
        return Patch(self.path, current, self.before, "revert", "undo fixer's patch", "safe", self.entry)


class Unrevertable(Exception):
    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")


@dataclass(frozen=True)
class Record:
    """One applied run: the file it is kept in, its project, and what it wrote."""

    file: Path
    root: Path
    written: tuple[Written, ...]


def directory() -> Path:
    return cache.directory() / "applied"


def record(patches: list[Patch], root: Path) -> Path:
    """Keep what this run wrote; the newest record of a project is the first one `--revert` undoes."""
    folder = directory()
    folder.mkdir(parents=True, exist_ok=True)
    body = {
        "version": _VERSION,
        "root": str(root.resolve()),
        "files": [
            {"path": str(p.path), "before": p.before, "after_sha256": _sha256(p.after), "entry": p.entry}
            for p in patches
        ],
    }  # fmt: skip
    name = f"{time.time_ns()}-{_sha256(str(root.resolve()))[:12]}.json"
    path = folder / name
    path.write_text(json.dumps(body, indent=1), encoding="utf-8")
    return path


def rerecord(previous: Path | None, patches: list[Patch], root: Path) -> Path:
    """Record `patches` in place of the record `previous`: a series of rounds keeps one record, from
    each file's text before the first round, so that one `--revert` undoes all of them."""
    written = record(patches, root)
    if previous is not None:
        previous.unlink(missing_ok=True)
    return written


def latest(root: Path) -> Record | None:
    """The newest record of this project, or None; records that cannot be read are passed over."""
    folder, project = directory(), str(root.resolve())
    try:
        files = sorted((p for p in folder.glob("*.json") if p.is_file()), key=lambda p: p.name, reverse=True)
    except OSError:
        return None
    for file in files:
        try:
            body = json.loads(file.read_text(encoding="utf-8"))
            if body.get("version") != _VERSION or body.get("root") != project:
                continue
            written = tuple(
                Written(Path(item["path"]), item["before"], item["after_sha256"], item["entry"])
                for item in body["files"]
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue
        return Record(file, Path(project), written)
    return None


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
