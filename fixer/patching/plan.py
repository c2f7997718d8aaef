"""From an explanation to concrete patches of the user's files: which files, which codemod, which diff.

Only files the traceback names as the user's own code are candidates; never a library's file, never
one that is not on this machine. Nothing is written here: see `fixer.patching.apply`.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass, replace
from pathlib import Path

from fixer.explain.match import Match
from fixer.patching import registry, torch_versions
from fixer.patching.base import Safety, Target, run
from fixer.patching.needs import NEEDS


@dataclass(frozen=True)
class Patch:
    path: Path
    before: str
    after: str
    codemod: str
    summary: str
    applicability: Safety
    entry: str
    why: tuple[str, ...] = ()  # what makes this patch safe, or what it may change
    needs: str | None = None  # the torch the rewritten code needs, and what of the project's may lack it

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
        hunks = difflib.unified_diff(_lines(self.before), _lines(self.after), fromfile=f"a/{name}", tofile=f"b/{name}")
        diff = "".join(line if line.endswith("\n") else f"{line}\n{_NO_NEWLINE}" for line in hunks)
        # A line before `---` is a comment to git apply and patch alike: the need travels with the diff.
        return f"fixer: this patch {self.needs}\n{diff}" if self.needs and diff else diff


_NO_NEWLINE = "\\ No newline at end of file\n"  # the marker git and patch read
_LINE = re.compile(r"[^\n]*\n|[^\n]+$")


def _lines(text: str) -> list[str]:
    """Lines as `git apply` counts them: only \\n ends one (str.splitlines also splits at \\f, \\x1c
    or U+2028, which would make a diff no tool can apply)."""
    return _LINE.findall(text)


def propose(files: dict[Path, tuple[int, ...]], match: Match) -> list[Patch]:
    """The patch the match's codemod makes to the traceback's files (`targets.locate`), to the innermost
    file it changes: one error has one fix, and the file nearest it is where that fix is looked for first.
    Empty when it has none to make."""
    codemod_id = match.card.fix_codemod
    if codemod_id is None or codemod_id not in registry.CODEMODS:
        return []
    codemod = registry.load(codemod_id)
    for number, (path, lines) in enumerate(files.items()):  # innermost file first
        if number and codemod.innermost_only:
            break
        try:
            before = path.read_bytes().decode("utf-8")  # bytes: keep the file's own line endings
        except (OSError, UnicodeDecodeError):
            continue
        edit = run(codemod, before, Target(lines=lines, innermost=number == 0))
        if edit is not None:
            patch = Patch(path, before, edit.code, codemod.id, codemod.summary, edit.safety, match.id, edit.why)
            return [_with_needs(patch)]
    return []


def _with_needs(patch: Patch) -> Patch:
    """A rewrite that needs a newer torch than the project allows says so, and is then unsafe: the
    code would stop importing wherever the project's declared torch is installed."""
    need = NEEDS.get(patch.codemod)
    if need is None:
        return patch
    unmet = torch_versions.unmet(need, patch.path)
    if unmet is None:
        return replace(patch, needs=f"needs {need.text}")
    return replace(patch, needs=unmet, applicability="unsafe", why=(*patch.why, unmet))
