"""Score a ranking function on a labelled corpus of real tracebacks: top-1 and top-3, per entry too.

Shared by `fixer kb accuracy`, the accuracy test and `benchmarks/accuracy.py`, so all three count
the same way (as shared/tools/corpus_accuracy.py does: an item whose `expect` is a list accepts any
of its ids).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

Ranker = Callable[[str], list[str]]


@dataclass(frozen=True)
class Labelled:
    id: str
    text: str
    expect: tuple[str, ...]


@dataclass
class Tally:
    n: int = 0
    top1: int = 0
    top3: int = 0

    def add(self, hit1: bool, hit3: bool) -> None:
        self.n += 1
        self.top1 += hit1
        self.top3 += hit3

    @property
    def top1_rate(self) -> float:
        return self.top1 / self.n if self.n else 0.0

    @property
    def top3_rate(self) -> float:
        return self.top3 / self.n if self.n else 0.0


@dataclass
class Score:
    overall: Tally = field(default_factory=Tally)
    per_entry: dict[str, Tally] = field(default_factory=dict)
    misses: list[tuple[str, tuple[str, ...], list[str]]] = field(default_factory=list)


def load_corpus(path: Path) -> list[Labelled]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    items = []
    for raw in data:
        expect = raw.get("expect")
        if not expect:
            continue
        wanted = tuple(expect) if isinstance(expect, list) else (expect,)
        items.append(Labelled(id=str(raw["id"]), text=str(raw["traceback"]), expect=wanted))
    return items


def evaluate(rank: Ranker, items: Iterable[Labelled]) -> Score:
    score = Score()
    for item in items:
        got = rank(item.text)
        hit1 = bool(got) and got[0] in item.expect
        hit3 = any(g in item.expect for g in got[:3])
        score.overall.add(hit1, hit3)
        score.per_entry.setdefault(item.expect[0], Tally()).add(hit1, hit3)
        if not hit1:
            score.misses.append((item.id, item.expect, got[:3]))
    return score
