"""Fold probe verdicts into the ranking: a confirmed cause moves up, a ruled-out one down."""

from __future__ import annotations

from fixer.diagnose.findings import OBSERVED_POINTS, RERANK_POINTS, Finding
from fixer.explain.match import Match, Reason, ranked
from fixer.kb.catalog import Catalog
from fixer.kb.index import Card


def rerank(
    matches: list[Match], findings: list[Finding], catalog: Catalog | None = None, *, observed: bool = False
) -> list[Match]:
    """`observed`: the findings were seen in the failing process, so a confirmation weighs OBSERVED_POINTS
    and a confirmed cause the message alone did not suggest joins the ranking (from `catalog`)."""
    points = {**RERANK_POINTS, "confirms": OBSERVED_POINTS} if observed else RERANK_POINTS
    known = {match.id for match in matches}
    joining = {
        entry_id
        for finding in findings
        if observed and finding.verdict == "confirms"
        for entry_id in finding.entries
        if entry_id not in known
    }
    found = (catalog.get(entry_id) for entry_id in sorted(joining)) if catalog is not None else ()
    matches = [*matches, *(Match(Card.of(entry), score=0, reasons=()) for entry in found if entry is not None)]
    updated = []
    for match in matches:
        reasons = [
            Reason(f"{finding.probe}: {finding.summary}", points[finding.verdict])
            for finding in findings
            if match.id in finding.entries and points[finding.verdict]
        ]
        updated.append(match.moved(reasons) if reasons else match)
    return ranked(updated)
