"""What every command shares: exit codes, the one-line error, reading input and the KB, progress."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fixer.kb.catalog import Catalog

OK, NO_MATCH, USAGE, NO_TRACEBACK, NOT_APPLIED = 0, 1, 2, 3, 4
# From sysexits.h, so a script can tell fixer's own failure from a verdict about the input.
INTERNAL_ERROR, OUTPUT_ERROR = 70, 74


class CliError(Exception):
    """A one-line error for the user, with the exit code to leave with."""

    def __init__(self, message: str, code: int = USAGE) -> None:
        super().__init__(message)
        self.code = code


def catalog() -> Catalog:
    from fixer.kb.catalog import KBError, load

    try:
        loaded = load()
    except KBError as exc:
        raise CliError(str(exc)) from None
    if loaded.problems:
        print(f"fixer: skipped {len(loaded.problems)} broken KB file(s); run `fixer kb lint`", file=sys.stderr)
    if not len(loaded):
        raise CliError(f"the knowledge base at {loaded.root} has no usable entry; run `fixer kb lint`")
    return loaded


def read_input(source: str, *, passthrough: bool) -> str:
    from fixer import textio

    try:
        if source != "-":
            return textio.read_file(source)
        if textio.stdin_is_terminal():
            print("Paste the traceback, then press Ctrl-D (Ctrl-Z then Enter on Windows):", file=sys.stderr)
        return textio.read_stdin(echo=passthrough)
    except textio.InputError as exc:
        raise CliError(str(exc)) from None


@contextmanager
def progress(total: int, what: str) -> Iterator[Callable[[], None]]:
    """A transient progress bar on stderr when a person is watching; silent for scripts and pipes."""
    if not sys.stderr.isatty():
        yield lambda: None
        return
    from rich.progress import Progress

    from fixer.output import render

    with Progress(console=render.console(stderr=True), transient=True) as bar:
        task = bar.add_task(what, total=total)
        yield lambda: bar.advance(task)


@contextmanager
def status(what: str) -> Iterator[None]:
    """A spinner on stderr for the seconds a probe takes, when a person is watching."""
    if not sys.stderr.isatty():
        yield
        return
    from fixer.output import render

    with render.console(stderr=True).status(what):
        yield
