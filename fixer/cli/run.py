"""`fixer run`: run the user's script (the one command that does) and explain a device error from inside."""

from __future__ import annotations

import sys
from pathlib import Path

from fixer.cli.common import CliError, catalog
from fixer.cli.explain import local_patches


def run(script: str, script_args: list[str]) -> int:
    if not Path(script).is_file():
        raise CliError(f"{script}: no such file")
    from fixer.runner import run

    outcome = run(script, script_args)
    if outcome.text is None:
        return outcome.code
    sys.stderr.write(outcome.text)
    from fixer import render
    from fixer.match import Matcher

    out = render.console(stderr=True)
    if outcome.culprit is not None:
        out.print(f"[bold]fixer:[/bold] the failing module was {outcome.culprit.describe()}")
    result = Matcher(catalog()).explain(outcome.text)
    if outcome.findings and result.matches:
        from dataclasses import replace

        from fixer.diagnose.rerank import rerank

        result = replace(result, matches=rerank(result.matches, list(outcome.findings)))
    if result.matches:
        out.print(render.explanation(result, top=3))
        for patch in local_patches(result):
            out.print(render.patch_view(patch))
    return outcome.code
