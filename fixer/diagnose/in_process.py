"""What a failing process knows, weighed the same way wherever it is read: `fixer run` (and each round
of `fixer run --fix`) and the excepthook that `fixer.install()` and `%load_ext fixer` set. They differ
only in what they can see; the text, the objects in the failing frames and the machine are ranked here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fixer.diagnose.findings import Finding
    from fixer.explain.match import Explanation, Matcher
    from fixer.kb.catalog import Catalog


def machine_findings(text: str) -> list[Finding]:
    """The machine probes, read in the failing process itself: under torchrun each rank judges its
    own LOCAL_RANK and GPUs, and the script's default device is the one it set."""
    from fixer.diagnose.environment import environment_findings
    from fixer.diagnose.findings import Finding
    from fixer.diagnose.machine import collect
    from fixer.explain.evidence import extract
    from fixer.explain.parse import parse

    tb = parse(text)
    try:
        facts = collect()
    except Exception as exc:  # CUDA may be past answering after the error: say so, keep the report
        return [Finding("env-cuda", "could-not-check", f"reading the devices failed: {type(exc).__name__}: {exc}")]
    return environment_findings(facts, extract(tb) if tb is not None else None, this_process=True)


def explained(matcher: Matcher, text: str, findings: Sequence[Finding], catalog: Catalog) -> Explanation:
    """The traceback's ranking, re-ranked with what the failing process showed: the failing module, the
    objects in its frames (observed, so they weigh most), then the machine (as `diagnose` weighs it)."""
    result = matcher.explain(text)
    if findings and result.traceback is not None:
        from fixer.diagnose.rerank import rerank

        machine = [f for f in findings if f.probe.startswith("env-")]
        live = [f for f in findings if not f.probe.startswith("env-")]
        matches = rerank(result.matches, live, catalog, observed=True)
        result = replace(result, matches=rerank(matches, machine))
    return result
