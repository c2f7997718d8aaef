"""Ask the few questions that tell the remaining causes apart, when the traceback cannot.

A bare "cuda:0 and cpu!" ranks a dozen causes within a few points of each other: the text holds
nothing more to read, but the person who ran the code knows whether the run resumed from a
checkpoint. The questions are about facts of the user's own run (kb/facts/questions.yaml), and each
entry says how likely a yes is under its cause. Scores are read as log-odds, `TEMPERATURE` points to
a factor of e, so an answer moves each cause by the log of how much likelier it makes that cause
than a cause that says nothing of the fact: a Bayesian update written in the points the ranking
already shows, with the answer among the reasons. A cause that could not give the answer (`always`
or `never` contradicted) is ruled out. Beside the KB's causes stands one it does not hold, at
`BEYOND` points: when the answers push every known cause below it, the honest verdict is that.

The next question is the one whose answer is expected to do most for the first place (`information`),
among those one of whose answers would change the first place or settle it. Pure and torch-free:
`fixer explain` runs it, and `fixer diagnose` can too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from fixer.explain.match import Match, Reason, ranked
from fixer.kb.index import Question

MARGIN = 25
"""A first place leading the second by this many points is settled: more questions would only annoy.

Measured on the KB's own examples and the dev corpus (159 ranked tracebacks): 14 put a wrong cause
first. Ten of those lead by 20 points or less (bare "cuda:0 and cpu!" messages, and model-not-moved
ahead of its look-alike module causes); the other four lead by 55 or more, on text that points firmly
elsewhere. No wrong first place leads by 21 to 54, so 25 asks about every close miss with a few
points to spare for drift in the similarity scores."""

TEMPERATURE = 12.0
"""Points per factor of e in the odds between two causes. Fitted with `BEYOND` on the labelled pastes fixer
is tuned on (the dev corpus and benchmarks/unseen/tune.yaml, 118 pastes): the values under which the
ranking's scores, read as log-odds, give the real causes the highest likelihood (log-likelihood -87.0;
the best pair found, 12 and 10, gives -86.4; 10 and 30, -90.8; 20 and 20, -131)."""

BEYOND = 20
"""The score of "a cause the KB does not hold": a first place that answers push below it is no longer
the best explanation, and the verdict says so instead of naming a cause at a few points. Of the fitted
range (0 to 20 fit about as well), the highest, so that the answers can reach that verdict."""

WORTH = 0.04
"""A question is worth asking only if its answer is expected to add this much to the chance that the first
place is right. Measured on the 65 tune pastes (benchmarks/interview/tune.yaml) with the census's fourth
wave counted into the priors: with no floor fixer asks 1.9 questions a paste for top-1/top-3 0.63/0.75;
at 0.03 to 0.045, 1.5-1.6 for 0.65/0.75; at 0.05, 1.3 for 0.62/0.72; at 0.07, 0.5 for 0.60/0.72. For a
bare "cuda:0 and cpu!" the questions worth most lie between 0.045 and 0.065 (whether the inputs were
moved at 0.0495), so a floor of 0.05 drops or keeps a good third question as the counts drift; 0.04
keeps a margin below them."""

RULED_OUT = 0.05  # an answer this unlikely under what a cause says (its `always` or `never`) rules it out


@dataclass(frozen=True)
class Answer:
    """A reply to one question: a person's yes, no or don't know (None), or a yes read from the user's
    project or command at `where` (`file:line: the line`, or `the command: --resume`)."""

    question: Question
    reply: bool | None
    where: str | None = None
    from_text: bool = False  # read from the traceback itself, which the scores already weigh: moves nothing
    # A no read from a project that does not show the fact: how likely it would have, had the fact held
    # (the question's `absent`). Such a no is weighed for what it is, never rules a cause out, and leaves
    # the question to ask. None for a reply that is what it says.
    recall: float | None = None


def said_of(match: Match, question: Question) -> bool:
    """Whether this match's entry speaks of the fact: only what a cause says of itself can rule it out."""
    return any(fact == question.fact for fact, _ in match.card.facts)


def chance(match: Match, question: Question) -> float:
    """How likely a yes is under this match's cause: as its entry says, else the fact's base rate."""
    return next((c for fact, c in match.card.facts if fact == question.fact), question.base)


def answer(matches: Sequence[Match], given: Answer) -> list[Match]:
    """Re-rank with one answer; "don't know" is no evidence either way and changes nothing, and neither
    does what the traceback itself shows, since the text's scores count it already."""
    if given.reply is None or given.from_text:
        return list(matches)
    question, yes = given.question, given.reply
    missed = 0.0 if given.recall is None else 1 - given.recall  # a yes the project could hide

    def no(chance: float) -> float:
        return 1 - chance + chance * missed

    base = question.base if yes else no(question.base)
    said = _said(given)
    updated = []
    for match in matches:
        likely = chance(match, question) if yes else no(chance(match, question))
        if likely <= RULED_OUT and said_of(match, question):
            continue
        points = round(TEMPERATURE * math.log(likely / base))
        updated.append(match.moved([Reason(f"{said}: {question.ask}", points)]) if points else match)
    return ranked(updated)


def _said(given: Answer) -> str:
    if given.recall is not None:
        return f"probably not: {given.where}"
    return f"yes, read from {given.where}" if given.where else f"you answered {'yes' if given.reply else 'no'}"


def settled(matches: Sequence[Match]) -> bool:
    """Whether one cause clearly leads; `matches` are best first, as `Matcher.rank` returns them. The
    cause the KB does not hold, at BEYOND, is always in the race: a weak lone guess is no answer, and
    neither is the last known cause left standing after answers pushed the others below it."""
    return not matches or matches[0].score - max(_runner_up(matches), BEYOND) >= MARGIN


def first(matches: Sequence[Match]) -> str | None:
    """The cause in first place, or None where no known cause scores above one the KB does not hold."""
    return matches[0].id if matches and matches[0].score >= BEYOND else None


def within_reach(matches: Sequence[Match], entry_id: str) -> bool:
    """Whether a cause is in the top 3, or among the close causes that follow-up questions weigh when no
    cause clearly leads: where an answer the person gives can still bring it first."""
    place = next((n for n, m in enumerate(matches) if m.id == entry_id), None)
    if place is None:
        return False
    return place < 3 or (not settled(matches) and matches[0].score - matches[place].score < MARGIN)


def _beliefs(matches: Sequence[Match]) -> list[float]:
    """The ranking's scores as probabilities, the cause the KB does not hold last."""
    scores = [m.score for m in matches] + [BEYOND]
    top = max(scores)
    weights = [math.exp((s - top) / TEMPERATURE) for s in scores]
    total = sum(weights)
    return [w / total for w in weights]


def information(matches: Sequence[Match], question: Question) -> float:
    """What asking `question` is expected to add to the chance that the first place is right: after a yes,
    the chance of whichever cause then leads, weighed by how likely a yes is, and the same after a no, less
    that chance now; times how often a user can answer (`known`), since "don't know" tells nothing.

    This is the value of the answer for the one decision fixer makes, the first place. Shannon's expected
    information was tried first and asks what rules out a cause far behind (is it FSDP with CPU offload?)
    before what splits the two leaders; on the 65 tune pastes of benchmarks/interview/tune.yaml it gave
    top-1 0.55 and top-3 0.74 after three questions, this 0.62 and 0.72."""
    beliefs = _beliefs(matches)
    chances = [chance(m, question) for m in matches] + [question.base]
    yes = [b * c for b, c in zip(beliefs, chances, strict=True)]
    no = [b * (1 - c) for b, c in zip(beliefs, chances, strict=True)]
    return question.known * (max(yes) + max(no) - max(beliefs))


def next_question(
    matches: Sequence[Match], questions: Iterable[Question], answered: Iterable[Answer] = (), worth: float = WORTH
) -> Question | None:
    """The unanswered question expected to do most for the first place, among those an answer to which
    would change the first place or settle the ranking and that are expected to add at least `worth` to
    its chance of being right: any other is not worth the person's time. None when none is left. A
    `worth` of 0 asks whatever could still change the first place, as a person who keeps answering would
    be asked: what the lint uses to check that each cause can be reached."""
    if not matches:
        return None
    done = {a.question.fact for a in answered if a.recall is None}
    leader = first(matches)
    best: tuple[float, Question] | None = None
    for question in questions:
        if question.fact in done or not question.asked:
            continue
        outcomes = [answer(matches, Answer(question, reply)) for reply in (True, False)]
        if not any(first(o) != leader or settled(o) for o in outcomes):
            continue
        gain = information(matches, question)
        if gain < worth:
            continue
        if best is None or gain > best[0] + 1e-9:
            best = (gain, question)
    return best[1] if best else None


@dataclass(frozen=True)
class Narrowed:
    matches: list[Match]
    answers: tuple[Answer, ...]


def interview(
    matches: Sequence[Match],
    questions: Sequence[Question],
    ask: Callable[[Question], bool | None],
    limit: int = 3,
    answered: Sequence[Answer] = (),
    worth: float = WORTH,
) -> Narrowed:
    """Ask until one cause clearly leads, `limit` questions are spent, or nothing left is worth asking.
    `ask` returns yes, no or None for "don't know", and raises EOFError (as `input` does at the end of
    input) when the person wants no more questions: what was learned so far is kept. `answered` are
    the answers already known (what the user's project shows), not asked again; `worth` is
    `next_question`'s."""
    current = list(matches)
    answers = list(answered)
    asked = 0
    while asked < limit and current and not settled(current):
        question = next_question(current, questions, answers, worth)
        if question is None:
            break
        try:
            reply = ask(question)
        except EOFError:
            break
        asked += 1
        given = Answer(question, reply)
        answers.append(given)
        current = answer(current, given)
    return Narrowed(current, tuple(answers))


def _runner_up(matches: Sequence[Match]) -> int:
    """The score of the next cause, or, for a lone cause, of the one the KB does not hold."""
    return matches[1].score if len(matches) > 1 else BEYOND


def _lead(matches: Sequence[Match]) -> int:
    """Points between the first cause and the next, or, for a lone cause, the one the KB does not hold."""
    return matches[0].score - _runner_up(matches)


@dataclass(frozen=True)
class Certainty:
    """Whether the first cause clearly leads; if not, what would tell the leaders apart."""

    confident: bool
    lead: int  # points between the first and the second cause
    question: Question | None = None  # its answer re-ranks the leaders
    probe: str | None = None  # else a probe one of the two leaders names and the other does not
    beyond: bool = False  # no known cause scores above one the KB does not hold, after the answers if any


def certainty(
    matches: Sequence[Match], questions: Sequence[Question] = (), answers: Sequence[Answer] = ()
) -> Certainty | None:
    """None with nothing ranked and nothing answered; a close race is said plainly, with the one question
    or probe that would settle it, rather than handed over as a confident first place."""
    replied = any(a.reply is not None and not a.from_text for a in answers)
    beyond = first(matches) is None and (replied or bool(matches))
    if not matches:
        return Certainty(False, 0, beyond=True) if beyond else None
    lead = _lead(matches)
    if settled(matches) and not beyond:
        return Certainty(True, lead)
    one, two = matches[0].card.diagnostics, matches[1].card.diagnostics if len(matches) > 1 else ()
    probe = next((p for p in (*one, *two) if (p in one) != (p in two)), None)
    return Certainty(False, lead, next_question(matches, questions, answers), probe, beyond)
