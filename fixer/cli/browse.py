"""`fixer show` and `fixer list`: read the KB from the terminal."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from fixer.cli.common import NO_MATCH, OK, CliError, catalog

if TYPE_CHECKING:
    from fixer.output.render import ColorChoice


def show(entry_id: str, *, as_json: bool, color: ColorChoice = "auto") -> int:
    entry = catalog().get(entry_id)
    if entry is None:
        raise CliError(f"no KB entry {entry_id!r}; `fixer list` shows the ids", NO_MATCH)
    if as_json:
        print(entry.model_dump_json(indent=2))
        return OK
    from fixer.output import render

    render.console(color=color).print(render.entry_page(entry))
    return OK


def questions(*, as_json: bool, color: ColorChoice = "auto") -> int:
    """The questions by fact, as `--answer FACT=yes` names them; one fixer never asks (`asked: false`,
    read from the project only) is listed too, and said to be, since `--answer` still takes it."""
    facts = sorted(catalog().facts.values(), key=lambda f: f.id)
    if as_json:
        listed = [{"fact": f.id, "question": f.ask, "check": f.check, "asked": f.asked} for f in facts]
        print(json.dumps(listed, indent=2))
        return OK
    from fixer.output import render

    render.console(color=color).print(render.question_list(facts))
    return OK


def listing(*, as_json: bool, color: ColorChoice = "auto") -> int:
    entries = sorted(catalog(), key=lambda e: e.id)
    if as_json:
        print(json.dumps([{"id": e.id, "title": e.title} for e in entries], indent=2))
        return OK
    from fixer.output import render

    render.console(color=color).print(render.entry_list(entries))
    return OK
