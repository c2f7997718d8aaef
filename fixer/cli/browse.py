"""`fixer show` and `fixer list`: read the KB from the terminal."""

from __future__ import annotations

import json

from fixer.cli.common import NO_MATCH, OK, CliError, catalog


def show(entry_id: str, *, as_json: bool) -> int:
    entry = catalog().get(entry_id)
    if entry is None:
        raise CliError(f"no KB entry {entry_id!r}; `fixer list` shows the ids", NO_MATCH)
    if as_json:
        print(entry.model_dump_json(indent=2))
        return OK
    from fixer.output import render

    render.console().print(render.entry_page(entry))
    return OK


def listing(*, as_json: bool) -> int:
    entries = sorted(catalog(), key=lambda e: e.id)
    if as_json:
        print(json.dumps([{"id": e.id, "title": e.title} for e in entries], indent=2))
        return OK
    from fixer.output import render

    render.console().print(render.entry_list(entries))
    return OK
