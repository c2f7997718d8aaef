"""Exercises for new engineers, made from the KB's own repros: the broken snippet, the traceback it
really prints (with a stand-in device, so on any CPU), and a choice among four causes.

The wrong choices are the causes fixer itself ranks next for that traceback, so an exercise asks what
an expert reads in the snippet, not what the message alone already says. The path runs from the causes
users meet most often (counted over the real tracebacks behind the priors and the KB's examples) to the
subtle ones. The site's Training page and `fixer train` both read this, so they ask the same questions.
"""

from __future__ import annotations

import io
import random
import tokenize
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from fixer.explain import priors
from fixer.explain.match import Matcher
from fixer.kb.catalog import Catalog
from fixer.kb.schema import Entry

CHOICES = 4


@dataclass(frozen=True)
class Exercise:
    entry: Entry
    snippet: str
    traceback: str
    choices: tuple[Entry, ...]  # in the order shown; the entry itself is one of them

    @property
    def answer(self) -> int:
        return next(i for i, choice in enumerate(self.choices) if choice.id == self.entry.id)


def path(catalog: Catalog) -> list[Entry]:
    """The entries that make an exercise, most often met first."""
    seen: Counter[str] = Counter()
    for causes in priors.load(catalog.root).values():
        for cause, prior in causes.items():
            seen[cause] += prior.count
    usable = [e for e in catalog if e.repro is not None and e.repro.needs == "cpu" and e.repro.raises]
    return sorted(usable, key=lambda e: (-(seen[e.id] + len(e.examples)), e.id))


def exercises(catalog: Catalog, only: Sequence[str] = (), seed: int | None = None) -> list[Exercise]:
    """One exercise per entry of the path (or of `only`, in the path's order). With a `seed`, a quiz
    drawn from it: the exercises in a random order and each one's choices shuffled anew, so that a
    second round tests the reading and not the memory of where the answer was. Without one, the order
    the site's Training page prints, the same on every machine."""
    matcher = Matcher(catalog)
    chosen = [e for e in path(catalog) if not only or e.id in only]
    draw = random.Random(seed) if seed is not None else None
    if draw is not None:
        draw.shuffle(chosen)
    return [_exercise(entry, catalog, matcher, draw or random.Random(entry.id)) for entry in chosen]


def _exercise(entry: Entry, catalog: Catalog, matcher: Matcher, draw: random.Random) -> Exercise:
    assert entry.repro is not None and entry.repro.raises is not None  # path() keeps only these
    ranked = [m.id for m in matcher.explain(entry.repro.raises).matches]
    others = [*ranked, *entry.related, *sorted(e.id for e in catalog)]
    wrong: list[str] = []
    for other in others:
        if other != entry.id and other not in wrong and catalog.get(other) is not None:
            wrong.append(other)
    choices = [entry, *(catalog.entries[i] for i in wrong[: CHOICES - 1])]
    draw.shuffle(choices)
    snippet, traceback = _without_comments(entry.repro.code, entry.repro.raises)
    return Exercise(entry=entry, snippet=snippet, traceback=traceback, choices=tuple(choices))


def _without_comments(code: str, traceback: str) -> tuple[str, str]:
    """The snippet and its traceback with the repro's comments taken out: written for a reader of the
    KB, they name the cause the exercise asks for (`# made on the CPU`). A line that held only a comment
    stays, blank, so the traceback's line numbers still point at the snippet's lines; a code line the
    traceback prints is printed as the snippet now shows it."""
    cuts = {
        start[0]: start[1]
        for kind, _, start, _, _ in tokenize.generate_tokens(io.StringIO(code).readline)
        if kind == tokenize.COMMENT
    }
    lines = code.split("\n")
    printed: dict[str, str] = {}
    for number, column in cuts.items():
        line = lines[number - 1]
        lines[number - 1] = line[:column].rstrip()
        if lines[number - 1].strip():
            printed[f"    {line.strip()}"] = f"    {lines[number - 1].strip()}"
    shown = "\n".join(printed.get(line, line) for line in traceback.split("\n"))
    return "\n".join(lines), shown
