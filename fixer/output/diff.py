"""Unified diffs on their way out: byte for byte, coloured only for a person at a terminal.

A diff is the one output users feed back to a program (`git apply`, `patch`), so it never passes
through anything that wraps, crops, expands tabs or drops a carriage return.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import BinaryIO, Literal

Kind = Literal["header", "hunk", "added", "removed", "context"]
# git's defaults: bold file headers, cyan hunk headers, green additions, red removals.
SGR: dict[Kind, str] = {"header": "1", "hunk": "36", "added": "32", "removed": "31", "context": ""}
_HUNK = re.compile(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_LINE = re.compile(r"[^\n]*\n|[^\n]+$")  # only \n ends a diff line: \r, \f and U+2028 are content


def lines(diff: str) -> Iterator[tuple[Kind, str, str]]:
    """Each line of the diff as (kind, text, ending); the ending is "\\n" or "" for a last line without.

    Hunk bodies are counted from their `@@` header, so a removed line that reads `-- comment` is not
    taken for a file header."""
    old = new = 0
    for match in _LINE.finditer(diff):
        line = match.group()
        text, end = (line[:-1], "\n") if line.endswith("\n") else (line, "")
        kind: Kind
        hunk = _HUNK.match(text)
        if old or new:
            kind = {"+": "added", "-": "removed"}.get(text[:1], "context")  # type: ignore[assignment]
            old -= kind != "added" and not text.startswith("\\")
            new -= kind != "removed" and not text.startswith("\\")
        elif hunk:
            kind = "hunk"
            old, new = (int(n) if n is not None else 1 for n in hunk.group(1, 2))
        else:
            kind = "header" if text.startswith(("--- ", "+++ ")) else "context"
        yield kind, text, end


def write(diff: str, stream: BinaryIO, *, color: bool) -> None:
    """Write the diff to a binary stream: exactly its bytes, or each line wrapped in SGR codes."""
    if color:
        diff = "".join(
            f"\x1b[{SGR[kind]}m{text}\x1b[0m{end}" if SGR[kind] else text + end for kind, text, end in lines(diff)
        )
    stream.write(diff.encode("utf-8", errors="surrogateescape"))
    stream.flush()
