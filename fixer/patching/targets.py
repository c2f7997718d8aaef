"""The user's own files a traceback names and saw: the only files fixer may read as its source or patch.

A frame names a path, but the file at that path here may not be the file that ran: a relative path
resolves against wherever fixer runs, and a checkout may hold another version of the script. A file
counts only when it holds the line the traceback printed: at that number, or, since a file edited after
the run (a comment added, a merge) moves its lines, nearest to it within `DRIFT` lines, or else once in
the function the frame names; the line is then read where it is now, and `Located.moved` says so.
Without a printed line, only an absolute path is taken at its word.

Free of LibCST, so `fixer explain` can ask "is there anything to patch here?" for nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from fixer.explain.parse import Frame, Traceback
from fixer.explain.read import as_pasted
from fixer.explain.source import MAX_BYTES

LIBRARY_DIRS = frozenset({"site-packages", "dist-packages"})
_IN_LIBRARY = re.compile(r"(?:^|/)(?:site|dist)-packages(?:/|$)")
_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Skipped:
    """A file at a frame's path that is not the file the traceback saw, and why."""

    path: str  # as the traceback wrote it
    reason: str


@dataclass(frozen=True)
class Moved:
    """A frame's line that the file here holds at another number: the file changed since the run."""

    path: str  # as the traceback wrote it
    printed: int  # the line number the traceback printed
    here: int  # where the file holds that line now

    def __str__(self) -> str:
        return f"the traceback's line {self.printed} is line {self.here} here: the file changed since the run"


@dataclass(frozen=True)
class Located:
    files: dict[Path, tuple[int, ...]] = field(default_factory=dict)  # resolved path -> lines, outermost first
    skipped: tuple[Skipped, ...] = ()
    relative: tuple[str, ...] = ()  # the relative paths taken, read against the current directory
    moved: tuple[Moved, ...] = ()  # frames whose line the file holds at another number


def locate(frames: Traceback | Iterable[Frame], *, libraries: bool = False) -> Located:
    """Each user .py file here that the traceback saw, innermost first, with the lines it names; with
    `libraries`, the installed libraries' files too (never PyTorch's own), for a user who asked to patch
    them: where a library's own line failed, that is where the fix goes.

    A relative path (`File "train.py"`, as Python before 3.9 printed the script it ran) is relative to a
    directory the traceback does not name. It is read against the current directory, unless the
    traceback's absolute user files show that it ran somewhere else: then none of them is under it."""
    frames = tuple(frames.all_frames if isinstance(frames, Traceback) else frames)
    ran_elsewhere = cache(lambda: _ran_elsewhere(frames))  # asked only for a relative path that is here
    lines: dict[Path, list[int]] = {}
    skipped: dict[Path, Skipped] = {}
    texts: dict[Path, Lines | None] = {}
    relative: dict[str, Path] = {}  # relative paths as printed -> the file here they were read as
    existing: dict[str, Path | None] = {}  # by the path as printed: a stat per file, not per frame
    moved: dict[tuple[str, int], Moved] = {}
    for frame in reversed(frames):
        if frame.path not in existing:
            existing[frame.path] = _existing(frame, libraries=libraries)
        path = existing[frame.path]
        if path is None or path in skipped or frame.line is None:
            continue
        if path not in texts:
            read = _lines(path)
            texts[path] = Lines.of(read) if read is not None else None
        is_relative = not Path(frame.path).is_absolute()
        ran_in = ran_elsewhere() if is_relative else None
        anchored = _anchor(frame, texts[path])
        refusal = (
            f"a relative path, and the traceback's own files ran in {ran_in}, not under this directory"
            if ran_in
            else (anchored if isinstance(anchored, str) else None) or (None if libraries else installed_package(path))
        )
        if refusal is not None:
            skipped[path] = Skipped(frame.path, refusal)
            lines.pop(path, None)
        else:
            assert isinstance(anchored, int)  # a refusal otherwise
            lines.setdefault(path, []).append(anchored)
            if anchored != frame.line:
                moved.setdefault((frame.path, frame.line), Moved(frame.path, frame.line, anchored))
            if is_relative:
                relative[frame.path] = path
    files = {path: tuple(reversed(found)) for path, found in lines.items()}
    return Located(
        files,
        tuple(skipped.values()),
        tuple(p for p, path in relative.items() if path in files),
        tuple(m for m in moved.values() if existing[m.path] in files),
    )


def _ran_elsewhere(frames: tuple[Frame, ...]) -> str | None:
    """The folder the traceback's absolute user files are in, when none of them is under the current
    directory: a relative path of the same traceback was relative to there, not to here."""
    named = {f.path for f in frames if f.is_user and f.path.endswith(".py")}  # a deep recursion names few files
    absolute = [Path(path) for path in named if Path(path).is_absolute()]
    if not absolute:
        return None
    here = Path.cwd().resolve()
    if any(path.is_relative_to(here) for path in absolute):
        return None
    return str(max(absolute).parent)


def user_files(frames: Traceback | Iterable[Frame]) -> dict[Path, tuple[int, ...]]:
    return locate(frames).files


def libraries_beside(frames: Traceback | Iterable[Frame]) -> list[Path]:
    """The installed libraries' files that `locate(..., libraries=True)` adds to the user's own: where a
    patch may go when the user asks for one to a library."""
    mine = locate(frames).files
    return [path for path in locate(frames, libraries=True).files if path not in mine]


LIBRARY_FRAMES = 3  # the innermost library frames read: where a library's own line failed, and its callers


def library_files(frames: Traceback | Iterable[Frame]) -> dict[Path, tuple[int, ...]]:
    """The installed libraries' .py files that the innermost library frames ran in, with their lines,
    when they are on this machine and still hold the printed line: read to see what a failing line of
    a library reads, never patched. PyTorch's own files are left out: its internals are not the cause
    a user's fix changes."""
    frames = tuple(frames.all_frames if isinstance(frames, Traceback) else frames)
    inner = [f for f in reversed(frames) if not f.is_user and not _torch_own(f) and f.line and f.path.endswith(".py")][
        :LIBRARY_FRAMES
    ]
    found: dict[Path, list[int]] = {}
    for frame in inner:
        try:  # isfile is False, not an error, for a name too long for the system or with a NUL byte
            path = Path(frame.path).resolve() if os.path.isfile(frame.path) else None
        except (OSError, ValueError):
            continue
        read = _lines(path) if path is not None else None
        anchored = _anchor(frame, Lines.of(read)) if read is not None else None
        if path is not None and isinstance(anchored, int):
            found.setdefault(path, []).append(anchored)
    return {path: tuple(reversed(numbers)) for path, numbers in found.items()}


def _torch_own(frame: Frame) -> bool:
    """A frame in PyTorch itself, whose internals are not what a user's fix changes."""
    return bool(frame.library) and str(frame.library).split(".")[0] == "torch"


def _existing(frame: Frame, *, libraries: bool = False) -> Path | None:
    """The resolved file of a user frame (or, with `libraries`, of a library other than PyTorch) when one
    exists here; None for paths no file can have. Tested on the string first: a traceback of thousands of
    frames names mostly files that are not here."""
    if libraries:
        if not frame.path.endswith(".py") or _torch_own(frame):
            return None
    elif not frame.is_user or not frame.path.endswith(".py") or _IN_LIBRARY.search(frame.path):
        return None
    try:  # isfile is False, not an error, for a name too long for the system or with a NUL byte
        return Path(frame.path).resolve() if os.path.isfile(frame.path) else None
    except (OSError, ValueError):
        return None


def installed_package(path: Path) -> str | None:
    """Why a file outside site-packages is still a library's, or None: installed with `pip --target`
    (a `<package>-<version>.dist-info` beside its package folder), or the source tree of a library
    installed in editable mode. The editable project the user works in (the current directory) is theirs."""
    for folder in path.parents:
        package = path.relative_to(folder).parts[0]
        if package != path.name and _has_metadata(folder, package.replace("-", "_")):
            return f"part of the installed package {package} (its metadata lies beside it), not your code"
    project = Path.cwd().resolve()
    if path.is_relative_to(project):
        return None  # the project's own files; reading every installed distribution is not needed
    for source, name in _editable_sources():
        if path.is_relative_to(source) and not project.is_relative_to(source):
            return f"part of {name}, installed in editable mode from {source}, not your code"
    return None


@cache
def _has_metadata(folder: Path, package: str) -> bool:
    try:
        return any(folder.glob(f"{package}-*.dist-info"))  # an egg-info beside a package is setuptools' develop mode
    except OSError:
        return False


@cache
def _editable_sources() -> tuple[tuple[Path, str], ...]:
    """(source folder, distribution) of every editable install this interpreter sees (PEP 610)."""
    import json
    from importlib import metadata

    found = []
    for dist in metadata.distributions():
        try:
            direct = json.loads(dist.read_text("direct_url.json") or "{}")
        except (OSError, ValueError):
            continue
        url = direct.get("url", "")
        if direct.get("dir_info", {}).get("editable") and url.startswith("file://"):
            found.append((Path(url.removeprefix("file://")).resolve(), dist.metadata["Name"] or "a package"))
    return tuple(found)


DRIFT = 20  # lines either way a file edited since the run may have moved the failing line


@dataclass(frozen=True)
class Lines:
    """A file's lines, and where each line's words occur: a deep recursion checks thousands of frames
    against the same file."""

    text: list[str]
    at: dict[tuple[str, ...], list[int]]

    @classmethod
    def of(cls, text: list[str]) -> Lines:
        at: dict[tuple[str, ...], list[int]] = {}
        for number, line in enumerate(text, 1):
            at.setdefault(tuple(as_pasted(line).split()), []).append(number)
        return cls(text, at)


def _anchor(frame: Frame, lines: Lines | None) -> int | str:
    """The number the frame's line has in this file, or why the file is not the one the frame ran."""
    number = frame.line or 0
    if frame.code is None:
        if Path(frame.path).is_absolute():
            return number
        return "a relative path, and the traceback shows no code line to check that it is this file"
    holds = lines.at.get(tuple(frame.code.split()), []) if lines is not None else []
    if number in holds:
        return number
    near = sorted((abs(n - number), n) for n in holds if abs(n - number) <= DRIFT)
    if near and (len(near) == 1 or near[0][0] < near[1][0]):
        return near[0][1]
    inside = [n for n in holds if lines is not None and _in_function(lines.text, n, frame.function)]
    if len(inside) == 1:
        return inside[0]
    # A console that wrapped the paste put spaces inside a word, or a formatter changed the spacing and the
    # quotes since the run: the same line once both are ignored, at the printed number or the nearest one.
    if lines is not None:
        key = _squeezed(frame.code)
        around = range(max(number - DRIFT, 1), min(number + DRIFT, len(lines.text)) + 1)
        near = sorted((abs(n - number), n) for n in around if _squeezed(lines.text[n - 1]) == key)
        if near and (len(near) == 1 or near[0][0] < near[1][0]):
            return near[0][1]
    return f"its line {number} is not the traceback's `{frame.code.strip()}`, so it is another file of that name"


def _squeezed(line: str) -> str:
    return "".join(as_pasted(line).split()).replace("'", '"')


def _in_function(text: list[str], number: int, function: str | None) -> bool:
    """Whether line `number` lies in the body of the innermost `def function` above it."""
    if not function or function.startswith("<"):
        return False
    define = re.compile(rf"^(\s*)(?:async\s+)?def\s+{re.escape(function)}\s*\(")
    for above in range(number - 1, 0, -1):
        found = define.match(text[above - 1])
        if found:
            indent = len(found.group(1))
            return all(_inside(line, indent) for line in text[above:number])
    return False


def _inside(line: str, indent: int) -> bool:
    """A line of a body indented past `indent`: blank, deeper, or the `)` closing a long signature."""
    stripped = line.lstrip()
    return not stripped or len(line) - len(stripped) > indent or stripped.startswith(")")


def _lines(path: Path) -> list[str] | None:
    """The file's lines as Python numbers them (LF, CRLF or CR), or None when too big or unreadable."""
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None
    return _LINE_END.split(text)
