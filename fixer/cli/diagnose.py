"""`fixer diagnose`: probe this machine (and files) and re-rank a traceback's causes. Runs no user code."""

from __future__ import annotations

import argparse
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fixer.cli.common import OK, CliError, catalog, read_input, status
from fixer.cli.explain import can_ask, narrowed

if TYPE_CHECKING:
    from fixer.diagnose.findings import Finding
    from fixer.explain.match import Explanation, Match
    from fixer.explain.parse import Traceback
    from fixer.output.render import ColorChoice

TOP = 3


def diagnose(args: argparse.Namespace) -> int:
    from fixer.diagnose.environment import environment_findings, read_machine, undecided
    from fixer.diagnose.rerank import rerank
    from fixer.textio import file_problem

    for flag, path in (("--checkpoint", args.checkpoint), ("--exported", args.exported)):
        problem = file_problem(path) if path else None
        if problem:
            raise CliError(f"{flag} {problem}")
    text = read_input(args.traceback, passthrough=False) if args.traceback else None
    result = _explain(text) if text is not None else None
    evidence = result.evidence if result is not None else None
    with status("checking this machine (importing torch in a child process)"):
        machine = read_machine()
    origin = None
    if result is not None and result.traceback is not None:
        from fixer.diagnose.provenance import provenance

        origin = provenance(result.traceback, machine.get("torch_dir") if isinstance(machine, dict) else None)
    findings = environment_findings(machine, evidence, origin=origin)
    why_not = undecided(machine, evidence, origin) if isinstance(machine, dict) else None
    if origin is not None:
        findings.insert(0, _origin_finding(origin.why if why_not is None else why_not, here=why_not is None))
    # The files given are read either way; what they mean next to this machine's devices counts only
    # when the machine decides, as for its own facts.
    facts = machine if isinstance(machine, dict) and why_not is None else None
    if args.checkpoint:
        from fixer.diagnose.checkpoint import checkpoint_findings

        findings += checkpoint_findings(Path(args.checkpoint), facts)
    if args.exported:
        from fixer.diagnose.exported import exported_findings

        with status("reading the exported program"):
            findings += exported_findings(Path(args.exported), facts, evidence.devices if evidence else ())
    matches: list[Match] = []
    if result is not None and result.traceback is not None:
        findings += _traceback_probes(result.traceback, result.matches[:TOP])
        matches = rerank(result.matches, findings)
        if not (args.json or args.markdown) and can_ask(no_input=args.no_input):
            matches = narrowed(replace(result, matches=matches)).matches
    unchecked = _unchecked(matches[:TOP], findings)
    shown = matches[:TOP]
    if args.json:
        from fixer.output.report import to_json

        print(to_json(_json(findings, shown, unchecked), redact=args.redact))
    elif args.markdown:
        from fixer.output.issue_report import issue_markdown
        from fixer.output.redact import redact

        block = issue_markdown("diagnose", findings, shown, result.traceback if result is not None else None)
        print(redact(block) if args.redact else block, end="")
    else:
        _print(findings, shown, unchecked, args.color)
    return OK


def _explain(text: str) -> Explanation:
    from fixer.explain.match import Matcher
    from fixer.explain.project import current

    return Matcher(catalog(), project=current()).explain(text)


def _traceback_probes(tb: Traceback, matches: list[Match]) -> list[Finding]:
    """The source probes the leading candidates name, on the user's files the traceback points to."""
    from fixer.diagnose import user_code

    wanted = {probe for match in matches for probe in match.entry.diagnostics}
    findings: list[Finding] = []
    if "user-frame-tensor-factories" in wanted:
        findings += user_code.factory_findings(tb)
    if "user-frame-module-constructors" in wanted:
        findings += user_code.constructor_findings(tb)
    return findings


def _unchecked(matches: list[Match], findings: list[Finding]) -> dict[str, str]:
    """The leading candidates' probes that did not run here, and the command that runs each."""
    from fixer.diagnose.probes import PROBES, RUNS_IN

    ran = {f.probe for f in findings}
    skipped: dict[str, str] = {}
    for match in matches:
        for probe_id in match.entry.diagnostics:
            probe = PROBES.get(probe_id)
            if probe is not None and probe_id not in ran and probe_id not in skipped:
                skipped[probe_id] = f"{probe.looks_at}: {RUNS_IN[probe.where]}"
    return skipped


def _origin_finding(why: str, *, here: bool) -> Finding:
    """Said first: whether what this machine shows can decide anything about the traceback."""
    from fixer.diagnose.findings import Finding

    if here:
        return Finding("traceback-origin", "info", f"produced here: {why}", facts={"produced_here": True})
    said = f"not shown to be produced here ({why}), so this machine's state decides nothing about it"
    return Finding("traceback-origin", "info", said, facts={"produced_here": False})


def _json(findings: list[Finding], matches: list[Match], unchecked: dict[str, str]) -> dict[str, Any]:
    from fixer.output.report import match_out

    return {
        "findings": [vars(f) for f in findings],
        "matches": [asdict(match_out(m)) for m in matches],
        "not_checked": unchecked,
    }


def _print(findings: list[Finding], matches: list[Match], unchecked: dict[str, str], color: ColorChoice) -> None:
    from fixer.output import render

    out = render.console(color=color)
    out.print(render.findings_view(findings))
    if matches:
        out.print(render.candidates(matches))
    if unchecked:
        out.print("\n[bold]Not checked here[/bold] (these probes need your running code or a file):")
        for probe_id, how in unchecked.items():
            out.print(f"  {probe_id}: {how}")
