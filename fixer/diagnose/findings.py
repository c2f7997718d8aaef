"""What a probe reports: a verdict on some KB entries, with the facts it saw."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Verdict = Literal["confirms", "rules-out", "could-not-check", "info"]
RERANK_POINTS = {"confirms": 30, "rules-out": -40, "could-not-check": 0, "info": 0}
# A cause confirmed by the failing process itself (`fixer run`, the hooks): the objects were seen at the
# failure, which outweighs what any message's wording can say, so it comes first.
OBSERVED_POINTS = 70


@dataclass(frozen=True)
class Finding:
    probe: str
    verdict: Verdict
    summary: str
    entries: tuple[str, ...] = ()
    facts: dict[str, Any] = field(default_factory=dict)
