"""Detectors: small functions that each report one fact about the user's code, by reading it.

A traceback's text rarely names the cause; the code around it often does ("a layer is assigned to
`model.out_head` after `model.to(device)`", "`self.anchors` is a plain tensor attribute", "the failing
line reads optimizer state"). KB entries name the detectors that support or rule them out, as they
name probes and codemods, and `fixer kb lint` checks the names. Each detector reads only what
`Code` holds (the printed failing lines, the user's files when they are on this machine, the
paste), never runs it, and holds for code fixer has never seen: no project's names are built in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from fixer.explain.detectors.code import Code


@dataclass(frozen=True)
class Detector:
    id: str
    reads: str  # "failing lines", "your files" or "the paste": what it needs to see anything
    finds: str  # the fact, in a few words, for lint and the docs
    run: Callable[[Code], Iterable[str]]  # one line per place the fact holds: "train.py:31: ..."


DETECTORS: dict[str, Detector] = {}


def detector(id: str, *, reads: str, finds: str) -> Callable[[Callable[[Code], Iterable[str]]], Callable]:
    def register(run: Callable[[Code], Iterable[str]]) -> Callable[[Code], Iterable[str]]:
        DETECTORS[id] = Detector(id, reads, finds, run)
        return run

    return register


def detect(code: Code) -> dict[str, tuple[str, ...]]:
    """Every detector's findings on this code, keyed by detector id; detectors that find nothing are left out.
    A paste with no code line and no file here has nothing to read (and costs no detector import)."""
    if not code.lines and not code.showing:
        return {}
    _load()
    found = {}
    for entry in DETECTORS.values():
        where = tuple(dict.fromkeys(entry.run(code)))
        if where:
            found[entry.id] = where
    return found


def _load() -> None:
    from fixer.explain.detectors import copies, data, lines, loading, models, modules  # noqa: F401  (they register on import)


def registered() -> dict[str, Detector]:
    _load()
    return DETECTORS


__all__ = ["DETECTORS", "Code", "Detector", "detect", "detector", "registered"]
