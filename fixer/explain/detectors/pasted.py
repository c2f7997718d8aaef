"""The code a paste shows around its traceback: a Markdown fence, a REPL session, IPython's `In [n]:`
cells, or a snippet pasted just above the traceback.

Users paste the code with the error, and an expert reads the cause off those lines (a tensor moved with
`.cuda()`, the next one made by a factory with no device). Each block that parses is read as a file
named "the paste", at the paste's own line numbers, so a detector's finding says where in the paste it
saw the fact. The failing line is the one the traceback printed, where the block holds it; otherwise
the block's last statement, since a session or a snippet ran top to bottom and stopped there.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from fixer.explain.evidence import ERROR_IN_COMMENT

PASTE = "the paste"  # the name a finding gives the code it read in the paste

_FENCE = re.compile(r"^\s*(?:```|~~~)\s*[\w+-]*\s*$")
_PROMPT = re.compile(r"^\s*(?:>>>|\.\.\.)(?: |$)")
_IPY_IN = re.compile(r"^\s*(?:In \[\d*\]|\s+\.\.\.):(?: |$)")
_HEADER = re.compile(r"^\s*(?:[\w.]+\s+)?Traceback \(most recent call last\):?\s*$|^-{20,}\s*$")
_ERROR_IN_COMMENT = re.compile(ERROR_IN_COMMENT)
_NOT_CODE = re.compile(r'^\s*File "|Traceback \(most recent call last\)|^\s*\w*(?:Error|Exception)\b.*:\s')
_MAX_BLOCK_LINES = 400
_MAX_SNIPPET_LINES = 60  # a snippet is read back this far above the traceback: a long log above it is no snippet
_SNIPPET_MIN_STATEMENTS = 2
_MAX_PASTE_LINES = 5_000


@dataclass(frozen=True)
class Block:
    lines: tuple[str, ...]  # the code, prompts removed, one per line of the paste from `first` on
    first: int  # the paste's line number of the first line (1-based)
    ran: bool  # a session or a snippet that ran to its last line, not a definition shown for reading


def blocks(text: str) -> Iterator[Block]:
    """Every code block of a paste, in the order they appear; of a long log, of its last
    `_MAX_PASTE_LINES` lines, where the code that ran before the traceback is."""
    lines = text.split("\n")
    skipped = max(len(lines) - _MAX_PASTE_LINES, 0)
    lines = lines[skipped:]
    snippet = _above(lines)
    found = [*_fenced(lines), *_prompted(lines, _PROMPT), *_prompted(lines, _IPY_IN), *([snippet] if snippet else [])]
    for block in found:
        yield replace(block, first=block.first + skipped)


def _fenced(lines: list[str]) -> Iterator[Block]:
    start: int | None = None
    for number, line in enumerate(lines):
        if not _FENCE.match(line):
            continue
        if start is None:
            start = number + 1
            continue
        body = lines[start:number]
        if body and not any(_NOT_CODE.search(code) for code in body):
            yield Block(tuple(body[:_MAX_BLOCK_LINES]), start + 1, ran=_runs_before_traceback(lines, number))
        start = None


def _runs_before_traceback(lines: list[str], end: int) -> bool:
    """A fence the traceback follows (after prose, at most) shows what ran; one after it, code for reading."""
    return any(_HEADER.match(line) for line in lines[end + 1 :])


def _prompted(lines: list[str], prompt: re.Pattern[str]) -> Iterator[Block]:
    """The lines typed at a prompt, from the first to the last of a run; what the session printed
    between them is left out, as a blank line, so the code keeps the paste's line numbers."""
    run: list[str] = []
    first = 0
    for number, line in enumerate([*lines, ""]):
        typed = prompt.match(line)
        if typed:
            if not run:
                first = number + 1
            run.append(line[typed.end() :])
        elif run and (_HEADER.match(line) or number - first - len(run) > 40 or number == len(lines)):
            yield Block(tuple(_trimmed(run)[:_MAX_BLOCK_LINES]), first, ran=True)
            run = []
        elif run:
            run.append("")


def _trimmed(run: list[str]) -> list[str]:
    while run and not run[-1].strip():
        run = run[:-1]
    return run


def _above(lines: list[str]) -> Block | None:
    """The code just above the first traceback header, back to the line that stops parsing as code:
    at least two statements, a call among them (prose seldom parses so). A paste with no header may be
    code that says its error in a comment on the line that raised it (`y = f(x)  # RuntimeError: ...`):
    the code then ends with that line."""
    header = next((n for n, line in enumerate(lines) if _HEADER.match(line)), None)
    if header is None:
        said = next((n for n, line in enumerate(lines) if _ERROR_IN_COMMENT.match(line)), None)
        header = None if said is None else said + 1
    if header is None or header == 0:
        return None
    end = header
    while end > 0 and not lines[end - 1].strip():
        end -= 1
    best: Block | None = None
    for start in range(end - 1, max(end - _MAX_SNIPPET_LINES, 0) - 1, -1):
        chunk = lines[start:end]
        if _FENCE.match(lines[start]) or _PROMPT.match(lines[start]) or _IPY_IN.match(lines[start]):
            break
        module = _module(chunk)
        if module is not None and len(module.body) >= _SNIPPET_MIN_STATEMENTS:
            if any(isinstance(n, ast.Call) for n in ast.walk(module)):
                best = Block(tuple(chunk), start + 1, ran=True)
        elif module is None and best is not None and not lines[start].strip():
            break
    return best


def _module(lines: Iterable[str]) -> ast.Module | None:
    try:
        return ast.parse(textwrap.dedent("\n".join(lines)) + "\n")
    except (SyntaxError, ValueError, RecursionError):
        return None


def parsed(block: Block) -> tuple[ast.Module, int] | None:
    """The block as a module at the paste's line numbers, and the first line it kept: a first line that
    does not parse on its own (the tail of a statement cut off above) is dropped until the rest does."""
    lines = list(block.lines)
    first = block.first
    while lines:
        module = _module(lines)
        if module is not None and module.body:
            ast.increment_lineno(module, first - 1)
            return module, first
        lines, first = lines[1:], first + 1
    return None


def failing_line(module: ast.Module, block: Block, printed: Iterable[str]) -> int | None:
    """The line of the block a frame printed as its failing one; else, for a block that ran, its last
    statement's first line; else none (a definition shown for reading has no line that failed)."""
    wanted = {" ".join(code.split()) for code in printed if code and code.strip()}
    for offset, line in enumerate(block.lines):
        if " ".join(line.split()) in wanted:
            return block.first + offset
    if block.ran and module.body:
        return module.body[-1].lineno
    return None
