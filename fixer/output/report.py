"""The JSON contract of `fixer explain --json`: typed dataclasses, whose JSON Schema pydantic writes for
the docs (`schema()`); printing one needs no pydantic, so `fixer explain --json` does not import it.
They are records written once and printed: only `__init__` is generated, since each
generated method is compiled when the module loads, a millisecond per class on every run.

Scripts depend on these field names; add fields freely, never rename or remove one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from typing import TYPE_CHECKING, Any, Literal

from fixer import __version__
from fixer.explain.evidence import Evidence
from fixer.explain.match import Match
from fixer.explain.narrow import Answer, Certainty, answer, said_of
from fixer.explain.parse import Frame, Traceback

if TYPE_CHECKING:
    from pathlib import Path

    from fixer.kb.index import Outside
    from fixer.patching.plan import Patch


@dataclass(kw_only=True, eq=False, repr=False)
class FrameOut:
    path: str
    line: int | None
    function: str | None
    code: str | None
    library: str | None
    user: bool


@dataclass(kw_only=True, eq=False, repr=False)
class ChainedOut:
    exception: str | None
    message: str


@dataclass(kw_only=True, eq=False, repr=False)
class EvidenceOut:
    devices: list[str]
    offending_device: str | None
    common_device: str | None
    argument: str | None
    op: str | None
    libraries: list[str]
    dtype_only: bool


@dataclass(kw_only=True, eq=False, repr=False)
class TracebackOut:
    exception: str | None
    message: str
    frames: list[FrameOut]
    chain: list[ChainedOut]
    rank: int | None
    ranks: list[int]
    evidence: EvidenceOut


@dataclass(kw_only=True, eq=False, repr=False)
class FixOut:
    summary: str
    safety: Literal["safe", "unsafe", "manual"]
    codemod: str | None


@dataclass(kw_only=True, eq=False, repr=False)
class MatchOut:
    id: str
    title: str
    score: int
    why: list[str]
    summary: str
    fix: FixOut


@dataclass(kw_only=True, eq=False, repr=False)
class PatchOut:
    path: str
    entry: str
    codemod: str
    applicability: Literal["safe", "unsafe"]
    why: list[str]  # what makes this patch safe, or what it may change
    summary: str
    diff: str
    needs: str | None = None  # the torch the rewrite needs; when the project may lack it, why (then unsafe)


@dataclass(kw_only=True, eq=False, repr=False)
class RankedOut:
    id: str
    score: int


@dataclass(kw_only=True, eq=False, repr=False)
class AnswerOut:
    fact: str  # the fact of the run it settles (kb/facts/questions.yaml)
    question: str
    reply: bool | None  # null: "don't know"
    where: str | None = None  # file:line and the line, the command, or the traceback, when one of them answered
    from_text: bool = False  # the traceback itself answered: the ranking already weighed it, so it moved nothing
    # a no read from a project that does not show the fact: how likely the project would have shown it
    recall: float | None = None


@dataclass(kw_only=True, eq=False, repr=False)
class UncertainOut:
    """Why the first place is not certain, and what would settle it."""

    lead: int  # points between the first and the second match
    question: str | None  # the yes/no question expected to tell the most (asked at a terminal)
    question_entry: str | None  # the highest-ranked cause whose entry speaks of that fact
    question_fact: str | None  # the fact of the run it asks about; answer it with `fixer explain --answer FACT=yes`
    question_check: str | None  # how the user finds the answer
    if_yes: list[RankedOut] = field(default_factory=list)  # the first three causes after a yes
    if_no: list[RankedOut] = field(default_factory=list)  # and after a no
    probe: str | None  # a probe one of the two names and the other does not
    probe_checks: str | None  # what that probe looks at and the command that runs it


@dataclass(kw_only=True, eq=False, repr=False)
class OutsideOut:
    """The message is PyTorch's own or a library's (kb/messages/<library>.yaml), and no KB entry covers
    its cause yet."""

    library: str  # who raises it: pytorch, or the library's name
    where: str  # the file (and line) in that library that raises it
    versions: list[str]  # the library's releases read that raise it
    reason: str  # why no entry covers it


@dataclass(kw_only=True, eq=False, repr=False)
class ExplainOut:
    fixer_version: str = __version__
    traceback: TracebackOut | None
    matches: list[MatchOut]
    confident: bool | None = None  # null when nothing matched
    uncertain: UncertainOut | None = None  # set when confident is false
    answers: list[AnswerOut] = field(default_factory=list)  # the questions settled, by the project or the user
    beyond_kb: bool = False  # no known cause scores above one the KB does not hold (nothing read it, or the answers)
    outside_kb: OutsideOut | None = None  # set when the message is PyTorch's own and no entry covers it
    patches: list[PatchOut] = field(default_factory=list)
    # Installed libraries' files where the failing code lies and `--libraries` would let the patch look
    library_files: list[str] = field(default_factory=list)
    slow_regexes: dict[str, str] = field(default_factory=dict)  # team entries skipped for time: file -> the regex


def patch_out(patch: Patch) -> PatchOut:
    return PatchOut(
        path=str(patch.path),
        entry=patch.entry,
        codemod=patch.codemod,
        applicability=patch.applicability,
        why=list(patch.why),
        summary=patch.summary,
        diff=patch.diff,
        needs=patch.needs,
    )


def frame_out(frame: Frame) -> FrameOut:
    return FrameOut(
        path=frame.path,
        line=frame.line,
        function=frame.function,
        code=frame.code,
        library=frame.library,
        user=frame.is_user,
    )


def traceback_out(tb: Traceback, ev: Evidence) -> TracebackOut:
    return TracebackOut(
        exception=tb.exception,
        message=tb.message,
        frames=[frame_out(f) for f in tb.frames],
        chain=[ChainedOut(exception=e.type, message=e.message) for e in tb.chain],
        rank=tb.rank,
        ranks=list(tb.ranks),
        evidence=EvidenceOut(
            devices=list(ev.devices),
            offending_device=ev.offending,
            common_device=ev.common,
            argument=ev.argument,
            op=ev.op,
            libraries=sorted(ev.libraries),
            dtype_only=ev.dtype_only,
        ),
    )


def match_out(match: Match) -> MatchOut:
    card = match.card
    return MatchOut(
        id=card.id,
        title=card.title,
        score=match.score,
        why=[f"{r.text} ({r.points:+d})" for r in match.reasons],
        summary=card.summary,
        fix=FixOut(summary=card.fix_summary, safety=card.fix_safety, codemod=card.fix_codemod),
    )


def explain_out(
    tb: Traceback | None,
    ev: Evidence | None,
    matches: list[Match],
    patches: list[Patch],
    known: Certainty | None,
    slow: dict[str, str] | None = None,
    answers: Sequence[Answer] = (),
    ranking: Sequence[Match] = (),
    outside: Outside | None = None,
    library_files: Sequence[Path] = (),
) -> ExplainOut:
    """`matches` as shown (the top N); `known` judged on all of them, the `ranking` (default: `matches`),
    which the next question's outcomes re-rank."""
    return ExplainOut(
        traceback=traceback_out(tb, ev) if tb is not None and ev is not None else None,
        matches=[match_out(m) for m in matches],
        confident=known.confident if known else None,
        uncertain=uncertain_out(known, ranking or matches) if known and not known.confident else None,
        answers=[
            AnswerOut(
                fact=a.question.fact,
                question=a.question.ask,
                reply=a.reply,
                where=a.where,
                from_text=a.from_text,
                recall=a.recall,
            )
            for a in answers
        ],
        beyond_kb=bool(known and known.beyond),
        outside_kb=OutsideOut(
            library=outside.library, where=outside.where, versions=list(outside.versions), reason=outside.reason
        )
        if outside
        else None,
        patches=[patch_out(p) for p in patches],
        library_files=[str(path) for path in library_files],
        slow_regexes=dict(slow or {}),
    )


def uncertain_out(known: Certainty, ranking: Sequence[Match]) -> UncertainOut:
    """With the next question, the ranking each answer would leave: an editor or a bot can show both
    without running fixer again."""
    question = known.question
    after = {
        reply: [RankedOut(id=m.id, score=m.score) for m in answer(ranking, Answer(question, reply))[:3]]
        for reply in (True, False)
        if question is not None
    }
    return UncertainOut(
        lead=known.lead,
        question=question.ask if question else None,
        question_entry=next((m.id for m in ranking if question and said_of(m, question)), None),
        question_fact=question.fact if question else None,
        question_check=question.check if question else None,
        if_yes=after.get(True, []),
        if_no=after.get(False, []),
        probe=known.probe,
        probe_checks=_how_to_run(known.probe) if known.probe else None,
    )


def _how_to_run(probe: str) -> str:
    from fixer.diagnose.probes import how_to_run  # the probe table, only for a ranking that is not settled

    return how_to_run(probe)


def to_json(document: Any, *, redact: bool = False) -> str:
    """One of the documents above as `--json` prints it: indented, non-ASCII kept as written; with
    `redact`, every string as `fixer.output.redact` leaves it."""
    data = _plain(document)
    if redact:
        from fixer.output.redact import redact_data

        data = redact_data(json.loads(json.dumps(data, default=str)))
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)


def _plain(value: object) -> object:
    """Dataclasses as dicts, tuples as lists, the rest as is: `asdict` without its deep copies, which
    cost a third of a second on a traceback of thousands of frames."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def schema() -> dict[str, Any]:
    """The JSON Schema of `fixer explain --json`, for the docs."""
    from pydantic import TypeAdapter

    return TypeAdapter(ExplainOut).json_schema()
