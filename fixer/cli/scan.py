"""`fixer scan PATH...`: every traceback in many logs, grouped by cause and by fingerprint."""

from __future__ import annotations

import csv
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from fixer.cli.common import NO_TRACEBACK, OK, CliError, progress, team_kb

if TYPE_CHECKING:
    from fixer.fleet.scan import Found, Triage
    from fixer.output.render import ColorChoice

SHOWN_GROUPS = 20


def scan(paths: list[str], *, workers: int | None, dask: str | None, form: str, color: ColorChoice = "auto") -> int:
    from fixer.fleet.scan import expand, triage
    from fixer.fleet.scan import scan as scan_files

    missing = [path for path in paths if not Path(path).exists()]
    if missing:
        raise CliError(f"{missing[0]}: no such file or directory")
    files = expand(paths)
    team = tuple(str(directory) for directory in team_kb())
    if dask:
        found = _on_dask(files, dask, team)
    else:
        with progress(len(files), f"scanning {len(files)} files") as advance:
            found = scan_files(files, workers=workers or os.cpu_count() or 1, team=team, advance=advance)
    result = triage(found, len(files))
    if form == "json":
        print(json.dumps(_document(result, found), indent=2))
    elif form == "csv":
        _csv(found)
    else:
        _table(result, color)
    return OK if found else NO_TRACEBACK


def _on_dask(files: list[str], address: str, team: tuple[str, ...]) -> list[Found]:
    try:
        from fixer.fleet.dask import scan_on_dask
    except ImportError:
        raise CliError("--dask needs Dask: pip install 'fixer[fleet]'") from None
    try:
        return scan_on_dask(files, address, team)
    except (OSError, TimeoutError) as exc:
        raise CliError(f"cannot reach the Dask scheduler at {address}: {exc}") from None


def _document(result: Triage, found: list[Found]) -> dict[str, object]:
    return {
        "files": result.files,
        "tracebacks": result.tracebacks,
        "causes": [{"cause": cause, "tracebacks": n, "files": f} for cause, n, f in result.causes],
        "groups": [
            {
                "fingerprint": g.fingerprint,
                "cause": g.cause,
                "exception": g.exception,
                "message": g.message,
                "tracebacks": g.count,
                "files": len(g.files),
                "first": {"file": g.first[0], "line": g.first[1]},
            }
            for g in result.groups
        ],
        "found": [asdict(item) for item in found],
    }


def _csv(found: list[Found]) -> None:
    from fixer.fleet.scan import Found

    columns = list(Found.__dataclass_fields__)
    writer = csv.DictWriter(sys.stdout, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for item in found:
        writer.writerow(asdict(item))


def _table(result: Triage, color: ColorChoice) -> None:
    from fixer.output import render

    render.console(color=color).print(render.triage_view(result, SHOWN_GROUPS))
