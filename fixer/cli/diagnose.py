"""`fixer diagnose`: probe this machine (and files) and re-rank a traceback's causes. Runs no user code."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from fixer.cli.common import OK, catalog, read_input, status

if TYPE_CHECKING:
    from fixer.match import Match


def diagnose(args: argparse.Namespace) -> int:
    from fixer.diagnose.checkpoint import checkpoint_findings
    from fixer.diagnose.environment import probe_environment
    from fixer.diagnose.rerank import rerank

    text = read_input(args.traceback, passthrough=False) if args.traceback else None
    with status("checking this machine (importing torch in a child process)"):
        findings = probe_environment()
    env = findings[0].facts if findings and findings[0].probe == "env" else None
    if args.checkpoint:
        findings += checkpoint_findings(Path(args.checkpoint), env)
    matches: list[Match] = []
    if text is not None:
        from fixer.match import Matcher

        result = Matcher(catalog()).explain(text)
        matches = rerank(result.matches, findings)
    if args.json:
        from fixer.report import match_out

        payload = {
            "findings": [vars(f) for f in findings],
            "matches": [match_out(m).model_dump() for m in matches[:3]],
        }
        print(json.dumps(payload, indent=2, default=list))
    else:
        from fixer import render

        out = render.console()
        out.print(render.findings_view(findings))
        if matches:
            out.print(render.candidates(matches[:3]))
    return OK
