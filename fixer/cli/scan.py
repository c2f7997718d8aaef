"""`fixer scan PATH...`: every traceback in many logs, grouped by cause and by fingerprint."""

from __future__ import annotations

import csv
import json
import os
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING

from fixer.cli.common import NO_TRACEBACK, OK, CliError, progress, team_kb

if TYPE_CHECKING:
    from fixer.fleet.scan import Found, Triage
    from fixer.output.render import ColorChoice

SHOWN_GROUPS = 20


def scan(paths: list[str], *, workers: int | None, dask: str | None, form: str, color: ColorChoice = "auto") -> int:
    from fixer.fleet.scan import expand, triage
    from fixer.fleet.scan import scan as scan_files
    from fixer.textio import file_problem, shown

    for path in paths:
        try:
            os.stat(path)
        except (OSError, ValueError):
            raise CliError(file_problem(path) or f"{shown(path)}: cannot read") from None
    files = expand(paths)
    # A FIFO, a device or a socket among the logs is skipped before any worker could block on it.
    problems = {path: problem for path in files if (problem := file_problem(path))}
    readable = [path for path in files if path not in problems]
    team = tuple(str(directory) for directory in team_kb())
    if dask:
        found, skipped = _on_dask(readable, dask, team)
    else:
        with progress(len(readable), f"scanning {len(readable)} files") as advance:
            found, skipped = scan_files(readable, workers=workers or os.cpu_count() or 1, team=team, advance=advance)
    for notice in [*(f"skipped {problem}" for problem in problems.values()), *skipped]:
        print(f"fixer: {notice}", file=sys.stderr)
    result = triage(found, len(files))
    if form == "json":
        print(json.dumps(_document(result, found), indent=2))
    elif form == "csv":
        _csv(found)
    else:
        _table(result, color)
    return OK if found else NO_TRACEBACK


def _on_dask(files: list[str], address: str, team: tuple[str, ...]) -> tuple[list[Found], list[str]]:
    try:
        from fixer.fleet.dask import scan_on_dask
    except ImportError as exc:
        raise CliError(
            f"--dask needs Dask and distributed ({exc}): pip install 'dask[distributed]>=2024.1' "
            "(the fleet extra, pip install -e '.[fleet]' in fixer's clone)"
        ) from None
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
