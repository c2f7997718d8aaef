"""A fix series: the rounds of `fixer run --fix`, kept as one change to the user's files.

Each round writes its own patches, but the user reviews, keeps or undoes the series as a whole: a
file's combined patch runs from its text before the first round to its text after the last, and the
journal holds that one record, so one `fixer patch --revert` undoes every round.

A round is judged by its error's signature, which must tell "the patch did nothing" from "the patch
worked and the next line failed": the exception, the message's first line and the innermost frame of
the user's code by file, function and source text. Line numbers are left out, since every patch
that inserts a line shifts the ones below it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePath

from fixer.explain.parse import Traceback
from fixer.patching.plan import Patch

Signature = tuple[str, ...]


def signature(tb: Traceback) -> Signature:
    """What stays the same when a patch did not change the error, and changes when it moved it."""
    exception = (tb.exception or "").rsplit(".", 1)[-1]
    message = tb.message.strip().split("\n", 1)[0]
    innermost = next((f for f in reversed(tb.all_frames) if f.is_user), None)
    if innermost is None:
        return (exception, message)
    name = PurePath(innermost.path.replace("\\", "/")).name
    return (exception, message, name, innermost.function or "", " ".join((innermost.code or "").split()))


@dataclass(frozen=True)
class Round:
    """One run of the command: how it ended, the cause fixer put first, and what was written after it."""

    status: int
    error: Signature | None = None  # None when the run passed, or failed with nothing fixer could read
    cause: str | None = None
    written: tuple[Patch, ...] = ()


@dataclass
class Series:
    rounds: list[Round] = field(default_factory=list)
    _patches: dict[Path, list[Patch]] = field(default_factory=dict)  # per file, in the order written

    def add(self, finished: Round) -> None:
        self.rounds.append(finished)
        for patch in finished.written:
            self._patches.setdefault(patch.path, []).append(patch)

    def repeats(self, error: Signature) -> int | None:
        """The earlier round (1-based) that failed with this same error, or None."""
        return next((n for n, done in enumerate(self.rounds, 1) if done.error == error), None)

    def combined(self) -> list[Patch]:
        """Per file, one patch from its first text to its last: what the series changed, as one diff.
        Unsafe when any round's patch of the file was; its reasons are every round's."""
        combined = []
        for path, patches in self._patches.items():
            unsafe = any(p.applicability == "unsafe" for p in patches)
            combined.append(
                Patch(
                    path,
                    patches[0].before,
                    patches[-1].after,
                    ", ".join(dict.fromkeys(p.codemod for p in patches)),
                    "; ".join(dict.fromkeys(p.summary for p in patches)),
                    "unsafe" if unsafe else "safe",
                    ", ".join(dict.fromkeys(p.entry for p in patches)),
                    tuple(dict.fromkeys(why for p in patches for why in p.why)),
                    "; ".join(dict.fromkeys(p.needs for p in patches if p.needs)) or None,
                )
            )
        return combined
