"""Repair what a paste did to a traceback, so the parser sees the lines Python printed.

Users paste what they have: coloured terminal output, editor and notebook links, quoted replies,
lines every logger prefixed with a timestamp, lines hard-wrapped at 80 columns, a whole traceback run
together on one line (an issue title), curly quotes from a chat client. Each repair here is small,
linear in the text, and undoes one of those; none invents a line that was not pasted.
"""

from __future__ import annotations

import itertools
import re
import textwrap
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator

from fixer.explain.libraries import file_name

_ANSI = re.compile(
    # CSI colour codes, OSC strings (terminal hyperlinks: ESC ]8;;URI ESC \ text ESC ]8;; ESC \), 2-byte escapes
    r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]"
)
# Keras wraps the inner message in bold; when a page loses ESC, `[1m`/`[0m` remain.
_ANSI_LEFTOVER = re.compile(r"\[(?:0|1|22|3\d|9\d)m")
# Markdown links that issue trackers and notebooks wrap around paths: `[Cell In[5]](vscode-...)`. The text
# holds brackets one level deep at most, so a run of `[` costs one step each, not a scan to the line's end.
_LINK = re.compile(r"\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]\((?:https?|file|vscode[\w+-]*):[^)\s]*\)")
# VS Code links each numbered source line of a notebook traceback to its file and line, `    [254](https://
# file+.vscode-resource.vscode-cdn.net/.../torch/serialization.py:254) code`, so the file is known even where
# the frame's header was cut from the paste. A host is followed by the path's `/`: no backtracking between them.
_NUMBERED_LINK = re.compile(
    r"^\s*(?:(?P<arrow>-+>)\s*)?\[(?P<line>\d+)\]\((?:(?:https?|file|vscode[\w+-]*)://[^/)\s]*(?=/)"
    r"|(?:https?|file|vscode[\w+-]*):)(?P<path>[^)\s]*?\.pyx?):(?P=line)\)"
)
_FILE_HEADER = re.compile(r"\s*File\b")
# A file name, tried only where a name can begin (after a space, a slash, a bracket, a quote).
_FILE_NAME = re.compile(r"(?<![^\s/\\\[\]\"(])(?P<name>[^\s/\\\[\]\"(]+\.pyx?)\b")
# Reply marks: `> `, nested `>> ` or `> > `, and the `| ` margin some forums and chat clients draw.
_QUOTE_MARKS = (re.compile(r"^(?:> ?)+"), re.compile(r"^\| ?"))
_CURLY = str.maketrans({"‘": "'", "’": "'", "‛": "'", "′": "'", "“": '"', "”": '"', "„": '"', "″": '"'})
# What loggers put before each line they print: ray's `(pid=..., ip=...)`, ISO and short timestamps,
# glog's `W0104 13:46:27.896000 80302 run.py:792]`, Python logging's `ERROR:root:`, and a level after
# a timestamp. Applied again and again, so a timestamp followed by a level goes too.
_LOG_PREFIX = re.compile(
    r"^(?:\((?:\w+ )?pid=[^)\n]*\) ?"
    r"|\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?(?: ?[-|] ?| )?"
    r"|\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)? "
    r"|[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w./-]+:\d+\] ?"
    r"|(?:ERROR|WARNING|INFO|DEBUG|CRITICAL):[\w.]*:"
    r"|(?:ERROR|WARNING|INFO|DEBUG|CRITICAL)\s*(?:[-:|] ?| (?=Traceback|File ))"
    r")"
)
# A prefix only goes when the traceback itself carries it: log lines printed around a plain traceback
# keep theirs, which tells the parser where its message ends.
_TRACEBACK_LINE = re.compile(r'^\s*(?:Traceback \(most recent call last\)|File ["\w/.~\\])')
_FRAME_HEADER = re.compile(r'File "[^"\n]+", line \d+(?:, in ?[^\s,]+)?')
# An exception class by its (dotted) name: `RuntimeError`, `torch._dynamo.exc.TorchRuntimeError`.
EXCEPTION_NAME = r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)"
_EXCEPTION_START = re.compile(rf"(?<![\w.'\"(]){EXCEPTION_NAME}\s*:")
# What may stand before a frame on its line: indentation, and torchrun's `[rankN]:`.
_LINE_PREFIX = re.compile(r"\s*(?:\[(?:rank|default)\d+\]:\s*)?")
# Lines that never continue the line above, however long it is: a ruler, a header, a frame, an exception.
_STARTS_ITS_OWN = re.compile(
    r"^(?:\s|-{3,}|={3,}|\S*\s*Traceback \(most recent call last\)|File "
    rf"|{EXCEPTION_NAME}\b)"
)
_RULER = re.compile(r"[-=_*~ ]+")
_HEADER_START = re.compile(r'^\s*File "')
# A frame header a mail client wrapped at a space ends its line unfinished (`File "x.py", line 3, in`),
# and the next line finishes it (`forward`).
_HEADER_BEGUN = re.compile(r'(?:^|\s)(?P<header>File(?: "[^"\n]*"?(?:,(?: line(?: \d+(?:,(?: in)?)?)?)?)?)?)\s*$')
_HEADER_WHOLE = re.compile(r'File "[^"\n]+", line \d+, in \S')
_HEADER_ROWS = 3  # the most lines one wrapped header is joined from
# rich.traceback (Lightning, typer, many CLIs) draws the traceback in a box: a header rule, then per frame
# `│ path.py:55 in fn │` (wrapped at the box's width) and numbered source lines, `❱` at the failing one.
_BOX_TOP = re.compile(r"^\s*╭─+ Traceback \(most recent call last\) ─+╮\s*$")
_BOX_BOTTOM = re.compile(r"^\s*╰─+╯\s*$")
_BOX_ROW = re.compile(r"^\s*│ ?(?P<text>.*?)(?P<pad>\s*)│?\s*$")
_BOX_SOURCE = re.compile(r"^(?P<arrow>❱ ?)?\s*(?P<line>\d+)(?: (?P<code>.*))?$")
_BOX_FRAME = re.compile(r"^(?P<path>\S.*?\.pyx?):(?P<line>\d+) in (?P<function>\S+)$")
_LINE_END = re.compile(r"\.pyx?:\d+$")
_WRAP_WIDTH_MIN = 60


def clean(text: str) -> str:
    """Drop colours, unify line ends (a bare CR, a progress bar redrawing itself, ends a line too),
    then undo what pasting did: links, quoting, logger prefixes, run-together lines, hard wraps."""
    text = _ANSI.sub("", text)
    text = _ANSI_LEFTOVER.sub("", text)
    text = _LINK.sub(r"\1", "\n".join(_linked_headers(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))))
    text = as_pasted(text)
    lines = _unboxed(_unquoted(text.split("\n")))
    lines = _unwrapped(_without_log_prefixes(lines))
    return "\n".join(piece for line in _rejoined_code(_rejoined_headers(lines)) for piece in _split_run_together(line))


def _linked_headers(lines: list[str]) -> list[str]:
    """A frame header put back where a paste cut it but VS Code's links on the frame's numbered lines
    still name its file: before a run of lines linked to a file that the last header did not name.
    The header takes the number of the run's arrowed line (the failing one), else of its first line."""
    out: list[str] = []
    named: str | None = None  # the file the last frame header named
    for i, line in enumerate(lines):
        link = _NUMBERED_LINK.match(line)
        if link is None:
            header = _FILE_HEADER.match(line)
            found = _FILE_NAME.search(line, header.end()) if header else None
            named = found.group("name") if found else named
        elif file_name(path := link.group("path")) != named:
            named = file_name(path)
            run = _run_linked_to(itertools.islice(lines, i, None), path)
            failing = next((found for found in run if found.group("arrow")), link)
            out.append(f'File "{path}", line {failing.group("line")}')
        out.append(line)
    return out


def _run_linked_to(lines: Iterable[str], path: str) -> Iterator[re.Match[str]]:
    for line in lines:
        link = _NUMBERED_LINK.match(line)
        if link is None or link.group("path") != path:
            return
        yield link


def _unquoted(lines: list[str]) -> list[str]:
    """A quoted reply loses its marks when most lines carry them, and an indented paste (a Markdown
    code block, a mail client's indent) its common indentation."""
    for mark in _QUOTE_MARKS:
        nonblank = [line for line in lines if line.strip()]
        if nonblank and sum(bool(mark.match(line)) for line in nonblank) * 2 > len(nonblank):
            lines = [mark.sub("", line, count=1) for line in lines]
    return textwrap.dedent("\n".join(lines)).split("\n")


def _unboxed(lines: list[str]) -> list[str]:
    """A rich.traceback box as the traceback Python prints: the header, each frame with its failing line.
    Each frame in the box is its `path:line in function` rows, a blank row, its numbered source rows
    (`❱` at the failing one), a blank row; locals panels and hidden-frame notes have no place in it."""
    if not any(_BOX_TOP.match(line) for line in lines):
        return lines
    out: list[str] = []
    inside = in_source = full = False  # full: the row before filled the box
    header = ""  # rich wraps a frame's `path:line in function` over as many rows as it needs
    for line in lines:
        if not inside:
            inside = bool(_BOX_TOP.match(line))
            out.append("Traceback (most recent call last):" if inside else line)
            continue
        if _BOX_BOTTOM.match(line):
            inside = in_source = False
            header = ""
            continue
        row = _BOX_ROW.match(line)
        text, was_full = (row.group("text"), len(row.group("pad")) <= 1) if row else ("", False)
        if not text:
            in_source = bool(header) and not in_source
            continue
        if text[0] in "╭│╰" or text.startswith("... "):
            continue
        if in_source:
            source = _BOX_SOURCE.match(text)
            if source and source.group("arrow"):
                out += [_frame_line(header), "    " + (source.group("code") or "").replace("│", " ").strip()]
                header = ""
        else:
            header = _header_continued(header, text, cut_mid_word=full)
        full = was_full
    return out


def _header_continued(header: str, text: str, *, cut_mid_word: bool) -> str:
    """A frame header row joined to the rows before it. A row that filled the box was cut mid-word,
    unless it was folded at one of the two spaces `:LINE in FUNCTION` has, which a full row can hide."""
    if not header:
        return text
    at_a_space = not cut_mid_word or header.endswith(" in") or bool(_LINE_END.search(header) and text.startswith("in "))
    return header + (" " if at_a_space else "") + text


def _frame_line(header: str) -> str:
    frame = _BOX_FRAME.match(header)
    if frame is None:
        return f'  File "{header}", line 0'
    return f'  File "{frame["path"]}", line {frame["line"]}, in {frame["function"]}'


def as_pasted(text: str) -> str:
    """Full-width letters and punctuation (a CJK keyboard's `：（）`) as ASCII, curly quotes as straight:
    what `clean` does to every character, so a source line read from a file compares with its paste."""
    return unicodedata.normalize("NFKC", text).translate(_CURLY)


def _strip_prefixes(line: str) -> tuple[str, bool]:
    stripped = False
    while found := _LOG_PREFIX.match(line):
        if not found.group(0):
            break
        line, stripped = line[found.end() :], True
    return line, stripped


def _without_log_prefixes(lines: list[str]) -> list[str]:
    repaired = [_strip_prefixes(line) for line in lines]
    if any(stripped and _TRACEBACK_LINE.match(line) for line, stripped in repaired):
        return [line for line, _ in repaired]
    return lines


def _rejoined_headers(lines: list[str]) -> list[str]:
    """Frame headers wrapped at spaces joined back: a line ending in a header that stops short of its
    function, and the next line or two, become one line when together they are a whole header."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        begun = _HEADER_BEGUN.search(line)
        if begun:
            joined = line.rstrip()
            for taken, following in enumerate(lines[i : i + _HEADER_ROWS - 1], 1):
                if not following.strip():
                    break
                joined = f"{joined} {following.strip()}"
                if _HEADER_WHOLE.match(joined, begun.start("header")):
                    line, i = joined, i + taken
                    break
        out.append(line)
    return out


def _rejoined_code(lines: list[str]) -> list[str]:
    """A frame's code line that a mail client wrapped at a space, joined back: under a frame header, an
    indented line that opens more brackets than it closes, and the flush-left line after it that closes
    them exactly. Python prints a statement's first line only, which may end open (`return f(`); then the
    next line is a frame, an exception or indented, never a flush-left rest that balances it."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        after = lines[i] if i < len(lines) else ""
        if (
            out
            and _HEADER_START.match(out[-1])
            and line[:1].isspace()
            and _continues(after)
            and _open_brackets(line) > 0
            and _open_brackets(line + after) == 0
        ):
            line, i = f"{line.rstrip()} {after.strip()}", i + 1
        out.append(line)
    return out


def _open_brackets(text: str) -> int:
    return sum(text.count(c) for c in "([{") - sum(text.count(c) for c in ")]}")


def _split_run_together(line: str) -> list[str]:
    """`... File "a.py", line 3, in f  x = g(y)  RuntimeError: ...` on one line (an issue title, a chat
    message) becomes the frame, its code and the exception, each on a line of its own; a torchrun
    `[rankN]:` prefix stays on each of them."""
    frames = list(_FRAME_HEADER.finditer(line))
    if not frames:
        return [line]
    head, tail = line[: frames[0].start()], line[frames[-1].end() :]
    prefix = _LINE_PREFIX.fullmatch(head)
    if len(frames) == 1 and prefix and not tail.strip():
        return [line]
    keep = head.strip() if prefix else ""
    pieces = [] if prefix else [head.rstrip()]
    for number, frame in enumerate(frames):
        end = frames[number + 1].start() if number + 1 < len(frames) else len(line)
        pieces.append(f"{keep}  {frame.group(0)}")
        rest = line[frame.end() : end].strip()
        exception = _EXCEPTION_START.search(rest)
        code = rest[: exception.start()].strip() if exception else rest
        if code:
            pieces.append(f"{keep}    {code}")
        if exception:
            pieces.append(f"{keep}{' ' if keep else ''}{rest[exception.start() :]}")
    return pieces


def _unwrapped(lines: list[str]) -> list[str]:
    """Lines cut at a fixed width (a terminal or a mail client's 80 columns) joined back: a line as long
    as the cut width (`_cut_width`) continues on the next line when that one starts flush left and is not
    one that always starts a line (a header, a frame, an exception); the cut may fall inside a word, so
    nothing goes between them. Done before wrapped headers are rejoined, which put a space there."""
    width = _cut_width(lines)
    if width is None:
        return lines
    joined: list[str] = []
    cut = False  # the line before was cut at the width
    for line in lines:
        if cut and _continues(line):
            joined[-1] += line
        else:
            joined.append(line)
        cut = len(line) == width and _may_be_cut(line)
    return joined


def _cut_width(lines: list[str]) -> int | None:
    """The width a paste's lines were cut at: the longest line's, when another line is as long; or else
    the length at which two frame headers or more stop with their rest on the next line. Python indents
    everything under a header, so a flush-left line there is the header's cut-off rest, whatever the
    paste's other lines show (a Windows console's, quoted, kept a line a column longer than its cuts)."""
    lengths = [len(line) for line in lines if _may_be_cut(line)]
    width = max(lengths, default=0)
    if width >= _WRAP_WIDTH_MIN and lengths.count(width) >= 2:
        return width
    pairs = itertools.pairwise(lines)
    cut_headers = Counter(len(line) for line, after in pairs if _HEADER_START.match(line) and _continues(after))
    return max((n for n, count in cut_headers.items() if count >= 2 and n >= _WRAP_WIDTH_MIN), default=None)


def _continues(line: str) -> bool:
    return bool(line) and not _STARTS_ITS_OWN.match(line)


def _may_be_cut(line: str) -> bool:
    """Rulers and IPython's header are printed at the terminal's width whole; blank lines are no text."""
    return bool(line.strip()) and not _RULER.fullmatch(line) and "Traceback (most recent call last)" not in line


__all__ = ["clean"]
