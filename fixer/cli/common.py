"""What every command shares: exit codes, the one-line error, reading input and the KB, progress."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fixer.kb.catalog import Catalog
    from fixer.kb.index import Index

OK, NO_MATCH, USAGE, NO_TRACEBACK, NOT_APPLIED, FAILED_LOG = 0, 1, 2, 3, 4, 5
# From sysexits.h, so a script can tell fixer's own failure from a verdict about the input.
INTERNAL_ERROR, OUTPUT_ERROR = 70, 74


class CliError(Exception):
    """A one-line error for the user, with the exit code to leave with."""

    def __init__(self, message: str, code: int = USAGE) -> None:
        super().__init__(message)
        self.code = code


_team_kb: tuple[str, ...] = ()
_drafts = False


@contextmanager
def using_team_kb(directories: Sequence[str], drafts: bool = False) -> Iterator[None]:
    """Every command reads the KB through `catalog()`; `--kb` and `--drafts` are global options, so the
    dispatcher names the team directories here for the length of one command instead of threading them
    through each."""
    global _team_kb, _drafts
    _team_kb, _drafts = tuple(directories), drafts
    _catalog.cache_clear()  # each command reads the files anew (tests run many in one process)
    _kb_index.cache_clear()
    try:
        yield
    finally:
        _team_kb, _drafts = (), False
        _catalog.cache_clear()
        _kb_index.cache_clear()


def team_kb() -> tuple[Path, ...]:
    from fixer.kb.paths import team_dirs

    return team_dirs(_team_kb)


def catalog() -> Catalog:
    return _catalog(team_kb(), _drafts)


@lru_cache(maxsize=1)
def _catalog(team: tuple[Path, ...], drafts: bool) -> Catalog:
    """Loaded once per command, which may read it twice (`explain --example`), so problems show once."""
    from fixer.kb.catalog import KBError, load

    try:
        loaded = load(team=team, drafts=drafts)
    except KBError as exc:
        raise CliError(str(exc)) from None
    _say_skipped(loaded.problems, loaded.drafts, len(loaded), loaded.root)
    return loaded


def kb_index() -> Index:
    """The KB as `explain` ranks it, from the index cache: no YAML parsed, no entry validated."""
    return _kb_index(team_kb(), _drafts)


@lru_cache(maxsize=1)
def _kb_index(team: tuple[Path, ...], drafts: bool) -> Index:
    from fixer.kb.index import load
    from fixer.kb.paths import KBError, default_root

    root = default_root()
    try:
        index = load(root, team, drafts=drafts)
    except KBError as exc:
        raise CliError(str(exc)) from None
    _say_skipped(index.problems, index.drafts, len(index.entries), root)
    return index


def _say_skipped(problems: tuple[str, ...], drafts: tuple[str, ...], usable: int, root: Path) -> None:
    if problems:
        first = problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
        print(f"fixer: skipped a KB file: {first}; run `fixer kb lint`", file=sys.stderr)
    if drafts:
        more = f" (and {len(drafts) - 1} more)" if len(drafts) > 1 else ""
        print(f"fixer: left out a draft entry, TODOs unwritten: {drafts[0]}{more}; --drafts uses it", file=sys.stderr)
    if not usable:
        raise CliError(f"the knowledge base at {root} has no usable entry; run `fixer kb lint`")


def say_slow(slow: dict[str, str]) -> None:
    """Each team entry skipped because a regex of its ran out of time, on stderr: the answer came without it."""
    if slow:
        from fixer.explain.literals import slow_notice

        for owner, pattern in slow.items():
            print(f"fixer: {slow_notice(owner, pattern)}", file=sys.stderr)


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
