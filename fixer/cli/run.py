"""`fixer run`: run the user's script (the one command that does) and explain a device error from inside."""

from __future__ import annotations

import atexit
import json
import os
import signal
import sys
from contextlib import suppress
from dataclasses import dataclass, replace
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from fixer.cli.common import CliError, catalog
from fixer.cli.explain import local_patches
from fixer.diagnose.in_process import explained, machine_findings

if TYPE_CHECKING:
    from rich.console import Group

    from fixer.diagnose.findings import Finding
    from fixer.explain.match import Explanation, Matcher
    from fixer.output.render import ColorChoice
    from fixer.ranks import RankReport
    from fixer.runner import Outcome


def run(script: str, script_args: list[str], color: ColorChoice = "auto", report: str | None = None) -> int:
    """The script's own exit status, whatever fixer's report after it meets. With `report`, what the
    failing process showed goes to that file as JSON instead of to the terminal: `fixer run --fix`
    runs each round in a fresh process this way and explains it itself."""
    if not Path(script).is_file():
        raise CliError(f"{script}: no such file")
    outcome, wait = _ran(script, script_args)
    if report is not None:
        _write_report(outcome, Path(report))
    elif not outcome.interrupted and (outcome.text is not None or wait is not None):
        _report(outcome, wait, color)
    return outcome.code


@dataclass(frozen=True)
class Seen:
    """What a failing `fixer run --report` process showed, read back by the process that started it."""

    text: str
    culprit: str | None
    findings: tuple[Finding, ...]


def _write_report(outcome: Outcome, path: Path) -> None:
    """Only a failure leaves a report; fixer failing here is one line, and the round then reads the
    script's exit status alone."""
    from fixer.cli import _internal_error

    if outcome.text is None or outcome.interrupted:
        return
    try:
        findings = (*outcome.findings, *machine_findings(outcome.text))
        body = {
            "text": outcome.text,
            "culprit": outcome.culprit.describe() if outcome.culprit is not None else None,
            "findings": [
                {"probe": f.probe, "verdict": f.verdict, "summary": f.summary, "entries": list(f.entries)}
                for f in findings
            ],
        }
        path.write_text(json.dumps(body), encoding="utf-8")
    except Exception as exc:
        _internal_error(exc)


def read_report(path: Path) -> Seen | None:
    """The report a round's process left, or None when it left none (it passed, or died first)."""
    from fixer.diagnose.findings import Finding

    try:
        body = json.loads(path.read_text(encoding="utf-8"))
        findings = tuple(Finding(f["probe"], f["verdict"], f["summary"], tuple(f["entries"])) for f in body["findings"])
        return Seen(body["text"], body["culprit"], findings)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _ran(script: str, script_args: list[str]) -> tuple[Outcome, timedelta | None]:
    """The run, and how long a rank waits for the others when torchrun started it. After Ctrl-C, fixer
    ends as python does: by SIGINT once every exit handler has run, so the one that does it is
    registered before torch's and the script's (they run last-in, first-out)."""
    atexit.register(_die_of_sigint)
    outcome = None
    try:
        wait = _rank_wait()
        from fixer.runner import run

        outcome = run(script, script_args)
    finally:
        if outcome is None or not outcome.interrupted:
            atexit.unregister(_die_of_sigint)
    return outcome, wait


def _rank_wait() -> timedelta | None:
    from fixer import ranks

    if not ranks.launched(os.environ):
        return None
    try:
        return ranks.timeout(os.environ)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def _die_of_sigint() -> None:
    """A shell shows 130 either way, but a shell loop or make stops only for a child that died of SIGINT."""
    for stream in (sys.stdout, sys.stderr):
        with suppress(AttributeError, OSError, ValueError):  # gone or closed: nothing left to flush
            stream.flush()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)


def _report(outcome: Outcome, wait: timedelta | None, color: ColorChoice) -> None:
    """The script's traceback is out and its exit status is the answer: fixer failing after it (a broken
    KB, a bug) is one line, never a traceback of fixer's or another exit status."""
    from fixer.cli import _internal_error

    try:
        if outcome.text is not None:
            outcome = replace(outcome, findings=(*outcome.findings, *machine_findings(outcome.text)))
        if wait is not None:
            _report_ranks(outcome, wait, color)
        else:
            _explain(outcome, color)
    except CliError as exc:
        print(f"fixer: {exc}", file=sys.stderr)
    except Exception as exc:
        _internal_error(exc)


def _explain(outcome: Outcome, color: ColorChoice) -> None:
    from rich.markup import escape

    from fixer.explain.match import Matcher
    from fixer.explain.project import current, launched
    from fixer.output import render

    assert outcome.text is not None  # only a failed run is explained
    out = render.console(stderr=True, color=color)
    if outcome.culprit is not None:  # module paths and class names are the user's text, not markup
        out.print(f"[bold]fixer:[/bold] the failing module was {escape(outcome.culprit.describe())}")
    result = explained(
        Matcher(catalog(), project=current(), command=launched()), outcome.text, outcome.findings, catalog()
    )
    if result.matches:
        out.print(_explanation_view(result))


def _explanation_view(result: Explanation) -> Group:
    """The explanation, then the patch, or one line on why there is none: a run never just stops."""
    from rich.console import Group
    from rich.text import Text

    from fixer.output import render

    patches = local_patches(result)
    if patches:
        return Group(render.explanation(result, top=3), *(render.patch_view(patch) for patch in patches))
    from fixer.patching.targets import libraries_beside, user_files
    from fixer.patching.why_none import why_no_patch

    assert result.traceback is not None  # only a matched traceback is explained
    tb = result.traceback
    reason = why_no_patch(result.matches[0].entry, user_files(tb), libraries_beside(tb))
    return Group(render.explanation(result, top=3), Text(f"fixer: no patch: {reason}.", style="bold"))


def _report_ranks(outcome: Outcome, wait: timedelta, color: ColorChoice) -> None:
    """Every rank takes part, failed or not: rank 0 prints the job's report even when only another rank failed."""
    from fixer import ranks
    from fixer.explain.match import Matcher
    from fixer.explain.project import current, launched
    from fixer.output import render

    @cache
    def matcher() -> Matcher:  # a rank that succeeded and explains nothing never loads the KB
        return Matcher(catalog(), project=current(), command=launched())

    cause = None
    if outcome.text is not None:
        matches = explained(matcher(), outcome.text, outcome.findings, catalog()).matches
        cause = matches[0].id if matches else None
    report = ranks.local_report(outcome, cause, os.environ)

    def explain(other: RankReport) -> Group | None:
        assert other.text is not None  # combine explains failed ranks only
        result = explained(matcher(), other.text, other.findings, catalog())
        return _explanation_view(result) if result.matches else None

    out = render.console(stderr=True, color=color)
    if not ranks.has_group():
        reason = "no process group when the script ended, so each rank reports on its own"
    else:
        with ranks.gathered(report, wait) as reports:
            if reports is not None:
                if any(r.failed for r in reports):
                    out.print(ranks.combine(reports, explain))
                return
        reason = f"no answer from the other ranks within {wait.total_seconds():g} s (FIXER_RANK_TIMEOUT)"
    if report.failed:
        prefix = f"[rank {report.rank}] "
        out.width = max(out.width - len(prefix), 40)
        with out.capture() as captured:
            out.print(f"[bold]fixer:[/bold] {reason}")
            out.print(ranks.combine([report], explain))
        sys.stderr.write(ranks.prefixed(captured.get(), report.rank))
