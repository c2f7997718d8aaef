"""The JSON contract of `fixer explain --json`: pydantic models, so the shape is typed and documented.

Scripts depend on these field names; add fields freely, never rename or remove one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from fixer import __version__
from fixer.evidence import Evidence
from fixer.match import Match
from fixer.parse import Frame, Traceback

if TYPE_CHECKING:
    from fixer.patching.plan import Patch


class FrameOut(BaseModel):
    path: str
    line: int | None
    function: str | None
    code: str | None
    library: str | None
    user: bool


class ChainedOut(BaseModel):
    exception: str | None
    message: str


class EvidenceOut(BaseModel):
    devices: list[str]
    offending_device: str | None
    common_device: str | None
    argument: str | None
    op: str | None
    libraries: list[str]
    dtype_only: bool


class TracebackOut(BaseModel):
    exception: str | None
    message: str
    frames: list[FrameOut]
    chain: list[ChainedOut]
    rank: int | None
    ranks: list[int]
    evidence: EvidenceOut


class FixOut(BaseModel):
    summary: str
    safety: Literal["safe", "unsafe", "manual"]
    codemod: str | None


class MatchOut(BaseModel):
    id: str
    title: str
    score: int
    why: list[str]
    summary: str
    fix: FixOut


class PatchOut(BaseModel):
    path: str
    entry: str
    codemod: str
    applicability: Literal["safe", "unsafe"]
    summary: str
    diff: str


class ExplainOut(BaseModel):
    fixer_version: str = __version__
    traceback: TracebackOut | None
    matches: list[MatchOut]
    patches: list[PatchOut] = []


def patch_out(patch: Patch) -> PatchOut:
    return PatchOut(
        path=str(patch.path),
        entry=patch.entry,
        codemod=patch.codemod,
        applicability=patch.applicability,
        summary=patch.summary,
        diff=patch.diff,
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
    entry = match.entry
    return MatchOut(
        id=entry.id,
        title=entry.title,
        score=match.score,
        why=[f"{r.text} ({r.points:+d})" for r in match.reasons],
        summary=entry.summary,
        fix=FixOut(summary=entry.fix.summary, safety=entry.fix.safety, codemod=entry.fix.codemod),
    )


def explain_out(tb: Traceback | None, ev: Evidence | None, matches: list[Match], patches: list[Patch]) -> ExplainOut:
    return ExplainOut(
        traceback=traceback_out(tb, ev) if tb is not None and ev is not None else None,
        matches=[match_out(m) for m in matches],
        patches=[patch_out(p) for p in patches],
    )
