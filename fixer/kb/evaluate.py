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
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, field_validator

Ranker = Callable[[str], list[str]]


class CorpusError(Exception):
    """A corpus that cannot be scored; the message says why on one line, for `fixer kb accuracy`."""


class CorpusItem(BaseModel):
    """One item as the corpus file holds it; other fields (source, cause, fix...) are for people."""

    model_config = ConfigDict(extra="ignore", coerce_numbers_to_str=True)

    id: str
    traceback: str
    expect: tuple[str, ...] = ()
    decidable: bool | None = None  # whether the paste alone decides the cause (benchmarks/unseen/)
    half: str | None = None  # tune or holdout, where one file holds both (benchmarks/census/)

    @field_validator("expect", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        """`expect: some-id` and `expect: [a, b]` (any of them is right) both appear in corpora."""
        return (value,) if isinstance(value, str) else value or ()


_CORPUS = TypeAdapter(list[CorpusItem])


@dataclass(frozen=True)
class Labelled:
    id: str
    text: str
    expect: tuple[str, ...]
    decidable: bool | None = None
    half: str | None = None


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


NEW_CAUSE = "new:"  # a census label for a cause no entry has yet


def countable(item: Labelled) -> bool:
    """Whether an item may be counted into what fixer learns (priors): a holdout item is only ever
    scored, or fixer would be tuned on its own test; a `new:` label names a cause no entry has."""
    return item.half != "holdout" and not any(cause.startswith(NEW_CAUSE) for cause in item.expect)


def load_corpus(path: Path) -> list[Labelled]:
    """The labelled items; unlabelled ones (no `expect`) are kept in the file for people, not scored."""
    try:
        data = yaml.safe_load(path.read_bytes())  # bytes: PyYAML honours a UTF-16 BOM
    except OSError as exc:
        raise CorpusError(exc.strerror or str(exc)) from None
    except yaml.YAMLError as exc:
        raise CorpusError(f"not YAML text ({str(exc).splitlines()[0]})") from None
    try:
        raw = _CORPUS.validate_python(data or [])
    except ValidationError as exc:
        raise CorpusError(_problem(exc)) from None
    return [Labelled(item.id, item.traceback, item.expect, item.decidable, item.half) for item in raw if item.expect]


def _problem(exc: ValidationError) -> str:
    """The first problem in the corpus's own terms (item number, field), not pydantic's model names."""
    error = exc.errors()[0]
    where = error["loc"]
    if not where:
        return "expected a list of items, each with id, traceback and expect"
    item = f"item {int(where[0]) + 1}"
    if len(where) == 1:
        return f"{item}: expected a mapping with id, traceback and expect"
    return f"{item}: {where[1]}: {error['msg']}"


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
