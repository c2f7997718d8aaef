"""Scan job logs: find every traceback, rank its cause as `fixer explain` does, and group what was found.

`scan_file` is a pure function of a file's bytes and the KB, so the same call runs in this process, in
a pool of local processes (`scan`), or on the workers of a Dask cluster (`fixer.fleet.dask`). Each
process builds its matcher once. The code each traceback shows is read, as explain reads it; the files
its frames name are not: the logs come from other machines, whose files are not here.

A fingerprint groups the same failure across jobs, as Sentry groups events: the exception type, the
normalised message (devices as kinds, numbers and paths as placeholders) and the user frames by file
name and function, hashed. Two ranks of one job that fail alike share it; so do two jobs.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePath

from fixer import textio
from fixer.explain.literals import cover, one_input, slow_notice
from fixer.explain.match import Explanation, Matcher
from fixer.explain.narrow import settled
from fixer.explain.normalise import normalise
from fixer.explain.parse import Traceback
from fixer.kb.catalog import load

MAX_SHOWN_MESSAGE = 200
# Most log lines are progress: the KB's messages are sought only in lines (and chunks of lines) that
# hold a word every message needs one of. The words come from the KB's messages (`cover`); these go
# first because errors use them and progress lines seldom do.
_ERROR_WORDS = ("rror", "xception", "evice", "cuda", "numpy", "backend")


@dataclass(frozen=True)
class Found:
    """One traceback in one log."""

    file: str
    line: int
    exception: str | None
    message: str  # its first line, cut at MAX_SHOWN_MESSAGE characters
    cause: str | None  # the KB entry ranked first, if any
    score: int
    certain: bool  # the first place leads clearly (see fixer.explain.narrow)
    fingerprint: str
    rank: int | None = None


@dataclass(frozen=True)
class FileScan:
    """What one file gave: its tracebacks, or why it was skipped (a FIFO, a device, binary data)."""

    found: list[Found]
    skipped: str | None = None
    slow: tuple[str, ...] = ()  # team regexes this process skipped for time, as `slow_notice` names them

    def notices(self) -> tuple[str, ...]:
        """What to tell the user about this file, a line each."""
        return ((f"skipped {self.skipped}",) if self.skipped else ()) + self.slow


@lru_cache(maxsize=4)
def _matcher(team: tuple[str, ...]) -> tuple[Matcher, Callable[[str], bool]]:
    """The matcher, and whether a text may hold one of its messages."""
    matcher = Matcher(load(team=[Path(d) for d in team]), read_files=False)
    gate = cover((regex.needs for regex in matcher.known_messages.regexes), _ERROR_WORDS)
    return matcher, (lambda text: True) if gate is None else (lambda text: gate.search(text.lower()) is not None)


def scan_file(path: str, team: tuple[str, ...] = ()) -> FileScan:
    """Every traceback in the file at `path`; a file that cannot be read is skipped, with the reason."""
    matcher, may_hold = _matcher(team)
    known = matcher.known_messages
    try:
        with one_input() as reading:
            blocks = textio.file_blocks(Path(path), lambda line: may_hold(line) and known.holds_any(line), may_hold)
    except textio.InputError as exc:
        return FileScan([], str(exc))
    found: list[Found] = []
    skipped = dict(reading.skipped)
    for block in blocks:
        result = matcher.explain(block.text)  # explain's own reading and ranking, block by block
        skipped.update(result.slow)
        item = _found(path, block, result)
        if item is not None:
            found.append(item)
    return FileScan(found, slow=tuple(slow_notice(owner, pattern) for owner, pattern in skipped.items()))


def _found(path: str, block: textio.Block, result: Explanation) -> Found | None:
    tb, matches = result.traceback, result.matches
    if tb is None or not (tb.exception or tb.message or tb.frames):
        return None
    first = matches[0] if matches else None
    line = tb.message.strip().split("\n", 1)[0] if tb.message.strip() else ""
    return Found(
        file=path,
        line=block.line,
        exception=tb.exception,
        message=line[:MAX_SHOWN_MESSAGE],
        cause=first.id if first else None,
        score=first.score if first else 0,
        certain=settled(matches),
        fingerprint=fingerprint(tb),
        rank=tb.rank,
    )


def fingerprint(tb: Traceback) -> str:
    exception = (tb.exception or "").rsplit(".", 1)[-1]
    frames = [f"{PurePath(f.path.replace(chr(92), '/')).name}:{f.function}" for f in tb.all_frames if f.is_user]
    parts = [exception, normalise(tb.message.strip().split("\n", 1)[0]), *frames]
    return hashlib.sha1("\n".join(parts).encode("utf-8", "replace")).hexdigest()[:12]


def expand(paths: Sequence[str]) -> list[str]:
    """The files named, and every file under the directories named, sorted; hidden ones left out. Links
    to folders are not followed, so a link that loops cannot make the walk endless."""
    files: list[str] = []
    for given in paths:
        root = Path(given)
        if root.is_dir():
            for folder, dirs, names in os.walk(root):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                files += [os.path.join(folder, name) for name in sorted(names) if not name.startswith(".")]
        else:
            files.append(given)
    return files


def scan(
    files: Sequence[str],
    *,
    workers: int = 1,
    team: tuple[str, ...] = (),
    advance: Callable[[], None] = lambda: None,
) -> tuple[list[Found], list[str]]:
    """Every traceback in every file, on `workers` processes, and why each skipped file was skipped;
    `advance` is called once a file."""
    if workers <= 1:
        return _gathered((scan_file(path, team) for path in files), advance)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        chunks = max(1, len(files) // (workers * 8))
        return _gathered(pool.map(scan_file, files, [team] * len(files), chunksize=chunks), advance)


def _gathered(results: Iterable[FileScan], advance: Callable[[], None]) -> tuple[list[Found], list[str]]:
    found: list[Found] = []
    notices: dict[str, None] = {}  # each worker names a slow team regex again: said once
    for result in results:
        found += result.found
        notices.update(dict.fromkeys(result.notices()))
        advance()
    return found, list(notices)


@dataclass
class Group:
    """Tracebacks with one fingerprint."""

    fingerprint: str
    cause: str | None
    exception: str | None
    message: str
    count: int = 0
    files: set[str] = field(default_factory=set)
    first: tuple[str, int] = ("", 0)


@dataclass(frozen=True)
class Triage:
    causes: list[tuple[str | None, int, int]]  # cause, tracebacks, files: most tracebacks first
    groups: list[Group]  # most tracebacks first
    files: int
    tracebacks: int


def triage(found: Iterable[Found], files: int) -> Triage:
    groups: dict[str, Group] = {}
    by_cause: Counter[str | None] = Counter()
    cause_files: defaultdict[str | None, set[str]] = defaultdict(set)
    total = 0
    for item in found:
        total += 1
        group = groups.get(item.fingerprint)
        if group is None:
            group = groups[item.fingerprint] = Group(
                item.fingerprint, item.cause, item.exception, item.message, first=(item.file, item.line)
            )
        group.count += 1
        group.files.add(item.file)
        by_cause[item.cause] += 1
        cause_files[item.cause].add(item.file)
    causes = sorted(
        ((cause, n, len(cause_files[cause])) for cause, n in by_cause.items()), key=lambda c: (-c[1], c[0] or "~")
    )
    ordered = sorted(groups.values(), key=lambda g: (-g.count, g.fingerprint))
    return Triage(causes, ordered, files, total)
