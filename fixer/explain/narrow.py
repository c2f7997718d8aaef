"""Ask the few follow-up questions that tell the remaining causes apart, when the traceback cannot.

A bare "cuda:0 and cpu!" ranks a dozen causes within a few points of each other: the text holds
nothing more to read, but the person who ran the code knows whether the run resumed from a
checkpoint. Each KB entry carries questions with the points a yes or a no is worth to it, so one
answer re-ranks exactly as a probe's verdict does (`fixer.diagnose.rerank`), with the answer shown
among the reasons. Pure and torch-free: `fixer explain` runs it, and `fixer diagnose` can too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from fixer.explain.match import Match, Reason, ranked
from fixer.kb.index import Question

MARGIN = 25
"""A first place leading the second by this many points is settled: more questions would only annoy.

Measured on the KB's own examples and the dev corpus (159 ranked tracebacks): 14 put a wrong cause
first. Ten of those lead by 20 points or less (bare "cuda:0 and cpu!" messages, and model-not-moved
ahead of its look-alike module causes); the other four lead by 55 or more, on text that points firmly
elsewhere. No wrong first place leads by 21 to 54, so 25 asks about every close miss with a few
points to spare for drift in the similarity scores, and costs questions on the 22 right first places
that lead by less (truthful answers keep those first: the tests check it on every open KB example)."""


@dataclass(frozen=True)
class Asked:
    """One entry's question: its author gave the points a yes or a no is worth to that entry only."""

    entry: str
    question: Question

    @property
    def text(self) -> str:
        return self.question.ask


def settled(matches: Sequence[Match]) -> bool:
    """Whether one cause clearly leads; `matches` are best first, as `Matcher.rank` returns them."""
    return len(matches) < 2 or matches[0].score - matches[1].score >= MARGIN


def within_reach(matches: Sequence[Match], entry_id: str) -> bool:
    """Whether a cause is in the top 3, or among the close causes that follow-up questions weigh when no
    cause clearly leads: where an answer the person gives can still bring it first."""
    place = next((n for n, m in enumerate(matches) if m.id == entry_id), None)
    if place is None:
        return False
    return place < 3 or (not settled(matches) and matches[0].score - matches[place].score < MARGIN)


def answer(matches: Sequence[Match], question: Asked, reply: bool | None) -> list[Match]:
    """Re-rank with a yes or no; "don't know" (None) is no evidence either way and changes nothing."""
    if reply is None:
        return list(matches)
    points = question.question.if_yes if reply else question.question.if_no
    if not points:
        return list(matches)
    reason = Reason(f"you answered {'yes' if reply else 'no'}: {question.text}", points)
    updated = [
        replace(m, score=max(0, min(100, m.score + points)), reasons=(reason, *m.reasons))
        if m.id == question.entry
        else m
        for m in matches
    ]
    return ranked(updated)


def next_question(matches: Sequence[Match], asked: Iterable[Asked]) -> Asked | None:
    """The question whose answers, yes and no taken alike, leave the clearest leader, among the
    questions of the causes still within `MARGIN` of the first: causes further behind are what the
    text already argues against. A question neither answer of which changes the leader or settles
    the ranking is not worth the person's time. Ties go to the higher-ranked cause's question."""
    if not matches:
        return None
    done = {a.text for a in asked}
    contenders = [m for m in matches if matches[0].score - m.score < MARGIN]
    best: tuple[int, Asked] | None = None
    for match in contenders:
        for question in match.card.questions:
            if question.ask in done:
                continue
            candidate = Asked(match.id, question)
            outcomes = [answer(matches, candidate, reply) for reply in (True, False)]
            if not any(o[0].id != matches[0].id or settled(o) for o in outcomes):
                continue
            clarity = sum(_lead(o) for o in outcomes)
            if best is None or clarity > best[0]:
                best = (clarity, candidate)
    return best[1] if best else None


def interview(matches: Sequence[Match], ask: Callable[[str], bool | None], limit: int = 3) -> list[Match]:
    """Ask until one cause clearly leads, `limit` questions are spent, or nothing left is worth
    asking. `ask` returns yes, no or None for "don't know", and raises EOFError (as `input` does at
    the end of input) when the person wants no more questions: what was learned so far is kept."""
    current = list(matches)
    asked: list[Asked] = []
    while len(asked) < limit and not settled(current):
        question = next_question(current, asked)
        if question is None:
            break
        try:
            reply = ask(question.text)
        except EOFError:
            break
        asked.append(question)
        current = answer(current, question, reply)
    return current


def _lead(matches: Sequence[Match]) -> int:
    return matches[0].score - matches[1].score if len(matches) > 1 else 100


@dataclass(frozen=True)
class Certainty:
    """Whether the first cause clearly leads; if not, what would tell the leaders apart."""

    confident: bool
    lead: int  # points between the first and the second cause
    question: Asked | None = None  # its answer re-ranks the leaders
    probe: str | None = None  # else a probe one of the two leaders names and the other does not


def certainty(matches: Sequence[Match]) -> Certainty | None:
    """None with nothing ranked; a close race is said plainly, with the one question or probe that
    would settle it, rather than handed over as a confident first place."""
    if not matches:
        return None
    lead = _lead(matches)
    if settled(matches):
        return Certainty(True, lead)
    first, second = matches[0].card.diagnostics, matches[1].card.diagnostics
    probe = next((p for p in (*first, *second) if (p in first) != (p in second)), None)
    return Certainty(False, lead, next_question(matches, ()), probe)
