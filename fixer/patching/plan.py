"""From an explanation to concrete patches of the user's files: which files, which codemod, which diff.

Only files the traceback names as the user's own code are candidates; never a library's file, never
one that is not on this machine. Nothing is written here: see `fixer.patching.apply`.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass
from pathlib import Path

from fixer.explain.match import Match
from fixer.patching import registry
from fixer.patching.base import Safety, Target, run


@dataclass(frozen=True)
class Patch:
    path: Path
    before: str
    after: str
    codemod: str
    summary: str
    applicability: Safety
    entry: str

    @property
    def digest(self) -> str:
        """Fingerprint of the file as read, so a later write can refuse if it changed meanwhile."""
        return hashlib.sha256(self.before.encode()).hexdigest()

    @property
    def diff(self) -> str:
        """Paths relative to the working directory when the file is under it, as `git apply` wants."""
        try:
            name = str(self.path.relative_to(Path.cwd()))
        except ValueError:
            name = str(self.path).lstrip("/")
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=f"a/{name}",
                tofile=f"b/{name}",
            )
        )


def propose(files: dict[Path, tuple[int, ...]], match: Match) -> list[Patch]:
    """The patches the match's codemod makes to the traceback's files (`targets.locate`): none when it
    has none to make."""
    codemod_id = match.entry.fix.codemod
    if codemod_id is None or codemod_id not in registry.CODEMODS:
        return []
    codemod = registry.load(codemod_id)
    patches = []
    for path, lines in files.items():
        try:
            before = path.read_bytes().decode("utf-8")  # bytes: keep the file's own line endings
        except (OSError, UnicodeDecodeError):
            continue
        after = run(codemod, before, Target(lines=lines))
        if after is not None:
            patches.append(Patch(path, before, after, codemod.id, codemod.summary, codemod.safety, match.entry.id))
    return patches
