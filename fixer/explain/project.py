"""Read the traceback, the user's project and the command that ran before asking about any of them.

A question such as "is the model a loaded `torch.export` program?" is one the user's own code often
answers: a line calling `torch.export.load` says yes, with its file and line to show for it. fixer
reads the project it runs in (the git work tree around the current directory), its Python files and
notebooks, for the lines each question's `look` regexes describe. A yes is read this way; a no only
for the few facts the user's own code must show (a call to `torch.compile`, a process group), and only
as a likely no: where the traceback ran the project's code and the whole project was read without a
sighting. A call missing from the project can still be made by a library or a config, so the question
is still asked.

Only the code the run can execute counts: comments and string literals are not calls, a project's
tests exercise paths its run need not take, and fixer's own tree names every cause's code on purpose.
Reading stays cheap and bounded: hidden directories, virtual environments and installed packages are
skipped, and so are files past `MAX_BYTES` and every file after `MAX_FILES`. Where fixer saw the run
start (`fixer run`, the hook), the command line answers too: `--resume` says the run resumed. And a
question the traceback answers itself (a message naming cuda:1 says the process sees several GPUs) is
not asked; the ranking already weighs that text, so such an answer moves nothing.
"""

from __future__ import annotations

import io
import os
import re
import shlex
import sys
import tokenize
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from fixer.kb.index import Question

MAX_FILES = 2000
MAX_BYTES = 1_000_000
SUFFIXES = (".py", ".ipynb")
_SKIPPED = {"__pycache__", "node_modules", "site-packages", "dist-packages", "build", "dist", "tests", "test"}
_TESTS = re.compile(r"^(?:test_.*|.*_test|conftest)\.py$")  # a project's tests exercise paths its run need not take


def root_of(start: Path) -> Path | None:
    """The git work tree holding `start`, or None outside one: a home directory or a download folder is
    no project, and reading all of it would be slow and say nothing about this run."""
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def current() -> Path | None:
    """The project around the current directory, where fixer runs beside the user's code; FIXER_PROJECT
    names another directory, or turns the reading off (`none`) where no command line can: the hook,
    `fixer run`, a CI job."""
    chosen = os.environ.get("FIXER_PROJECT")
    if chosen is not None:
        if chosen.strip().lower() in ("", "none", "0", "off"):
            return None
        return Path(chosen) if Path(chosen).is_dir() else None
    try:
        root = root_of(Path.cwd())
    except OSError:  # the current directory was removed
        return None
    return None if root is not None and _is_fixers_own(root) else root


def _is_fixers_own(root: Path) -> bool:
    """Whether `root` is fixer's own source tree, which names every cause's code on purpose (in its
    detectors, codemods and tests) and so answers nothing about anyone's run."""
    package = Path(__file__).resolve().parents[1]
    return package.parent == root.resolve()


def launched() -> str:
    """The command line that started this process, as a shell would take it: under the hook it is the
    user's run; under `fixer run` and `run --fix` it names the script or command fixer runs."""
    return shlex.join(getattr(sys, "orig_argv", sys.argv))


@dataclass(frozen=True)
class Sightings:
    found: dict[str, str]  # fact -> where the project shows a yes to it (`file:line: the line`)
    files: int  # the files read
    whole: bool  # every file of the project was read: what it lacks, it lacks


def sightings(root: Path, questions: Sequence[Question]) -> Sightings:
    """Where the project shows a yes to each question that says what to look for: the first line found
    for each fact, in code, not in a comment or a string."""
    wanted = [q for q in questions if q.look]
    found: dict[str, str] = {}
    files = 0
    for path in _sources(root):
        if files == MAX_FILES or len(found) == len(wanted):
            return Sightings(found, files, whole=False)
        files += 1
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        lowered = text.lower()
        prose: dict[int, list[tuple[int, int]]] | None = None  # tokenised only where a regex matched: rare
        for question in wanted:
            if question.fact in found or not any(r.may_match(lowered) for r in question.look):
                continue
            for number, line in enumerate(text.splitlines(), 1):
                hit = next((m for r in question.look if (m := r.compiled().search(line))), None)
                if hit is None:
                    continue
                if path.suffix == ".py":
                    prose = _prose(text) if prose is None else prose
                    if any(start <= hit.start() < end for start, end in prose.get(number, ())):
                        continue
                shown = " ".join(line.split())[:80]
                found[question.fact] = f"{path.relative_to(root).as_posix()}:{number}: {shown}"
                break
    return Sightings(found, files, whole=True)


def absences(seen: Sightings, questions: Sequence[Question], root: Path, paths: Iterable[str]) -> dict[str, str]:
    """Fact -> why the project says no to it: for the questions whose fact the user's own code must show
    (`absent`), where the whole project was read without a sighting and the traceback ran this project's
    code, so that what it lacks is what the run lacked. A project fixer merely stands in, or one read in
    part, says nothing by what it lacks."""
    if not seen.whole or not _runs_here(root, paths):
        return {}
    said = f"nothing in the {seen.files} Python file{'' if seen.files == 1 else 's'} of this project shows it"
    return {q.fact: said for q in questions if q.absent is not None and q.fact not in seen.found}


def _runs_here(root: Path, paths: Iterable[str]) -> bool:
    """Whether a frame names a file of the project that is on disk here."""
    base = root.resolve()
    for path in paths:
        try:
            file = Path(path).resolve()
            if file.is_relative_to(base) and file.is_file():
                return True
        except (OSError, ValueError):  # a name too long for the system, or with a NUL byte
            continue
    return False


def _prose(text: str) -> dict[int, list[tuple[int, int]]]:
    """Line -> the column spans of comments and string literals in Python source: a call named in a
    docstring or a comment is not one the code makes. Unreadable source has none."""
    spans: dict[int, list[tuple[int, int]]] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in (tokenize.COMMENT, tokenize.STRING):
                (row, col), (end_row, end_col) = token.start, token.end
                for line in range(row, end_row + 1):
                    spans.setdefault(line, []).append(
                        (col if line == row else 0, end_col if line == end_row else sys.maxsize)
                    )
    except (tokenize.TokenError, SyntaxError):
        return spans
    return spans


def in_command(command: str, questions: Sequence[Question]) -> dict[str, str]:
    """Fact -> where the command that started the run shows a yes to it (`the command: --resume`)."""
    found: dict[str, str] = {}
    for question in questions:
        for regex in question.command:
            hit = regex.compiled().search(command)
            if hit:
                found[question.fact] = f"the command: {hit.group(0)}"
                break
    return found


def in_traceback(messages: Sequence[str], frames: Sequence[str], questions: Sequence[Question]) -> dict[str, str]:
    """Fact -> where the traceback itself shows a yes to it (`the traceback: cuda:1`): its message lines
    for the devices it names, its frame lines for where it failed, one line at a time."""
    found: dict[str, str] = {}
    for question in questions:
        searched = ((question.shown, messages), (question.frames, frames))
        hit = next(
            (m for rs, lines in searched for r in rs for line in lines if (m := r.compiled().search(line))), None
        )
        if hit:
            found[question.fact] = f"the traceback: {hit.group(0)}"
    return found


def _sources(root: Path) -> Iterator[Path]:
    """The project's Python files and notebooks, in a stable order, skipping what is not the project's."""
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = sorted(
            d
            for d in subdirectories
            if not d.startswith(".") and d not in _SKIPPED and not (Path(directory, d) / "pyvenv.cfg").exists()
        )
        for name in sorted(files):
            if not name.endswith(SUFFIXES) or _TESTS.match(name):
                continue
            path = Path(directory, name)
            try:
                if path.stat().st_size > MAX_BYTES:
                    continue
            except OSError:
                continue
            yield path
