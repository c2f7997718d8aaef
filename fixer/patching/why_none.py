"""Why there is no patch, said about what is actually missing: a codemod, the files, or a match in them.

Free of LibCST, so `fixer run` and `fixer explain` can say it without paying for the import.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fixer.kb.schema import Entry


def why_no_patch(entry: Entry, files: dict[Path, tuple[int, ...]], beside: Sequence[Path] = ()) -> str:
    """One sentence; `files` are the traceback's own files found here (`targets.locate`), `beside` the
    installed libraries' files it names, which the codemod reads only when asked (`--libraries`)."""
    if entry.fix.codemod is None:
        reason = " ".join((entry.fix.manual_because or "its fix needs a person").split())
        return f"{entry.id} has no automatic patch: {reason}"
    if not files and beside:
        return (
            f"the {entry.fix.codemod} codemod has nothing of yours to read: the failing code lies in an installed "
            f"library ({beside[0]}), which `fixer patch --libraries` lets it read, for a patch to send upstream"
        )
    if not files:
        return (
            f"the {entry.fix.codemod} codemod has nothing to read: the traceback names no file of yours "
            "that is on this machine as it ran"
        )
    names = ", ".join(sorted(path.name for path in files))
    return (
        f"the {entry.fix.codemod} codemod found no code of the shape it can rewrite in {names}, "
        "so the fix is yours to make"
    )
