"""Fold probe verdicts into the ranking: a confirmed cause moves up, a ruled-out one down."""

from __future__ import annotations

from dataclasses import replace

from fixer.diagnose.findings import RERANK_POINTS, Finding
from fixer.explain.match import Match, Reason, ranked


def rerank(matches: list[Match], findings: list[Finding]) -> list[Match]:
    updated = []
    for match in matches:
        reasons = [
            Reason(f"{finding.probe}: {finding.summary}", RERANK_POINTS[finding.verdict])
            for finding in findings
            if match.id in finding.entries and RERANK_POINTS[finding.verdict]
        ]
        if not reasons:
            updated.append(match)
            continue
        score = max(0, min(100, match.score + sum(r.points for r in reasons)))
        updated.append(replace(match, score=score, reasons=(*reasons, *match.reasons)))
    return ranked(updated)
