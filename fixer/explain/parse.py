"""Find the traceback in whatever a user pasted and turn it into a typed `Traceback`.

Pasted text is messy: progress bars, ANSI colours, torchrun's `[rank1]:` prefixes with ranks
interleaved, chained exceptions, Keras' wrapped messages, IPython's `Cell In[3]` frames, Windows
paths, CRLF, or only the final line. The parser is a single forward pass over lines that never
raises: text with no exception in it yields `None`.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from fixer.explain.libraries import library_of
from fixer.explain.literals import AnyOf
from fixer.explain.read import EXCEPTION_NAME, clean

# A line that starts a new log record (a timestamp, a progress bar, a logger), not a message's continuation.
_LOG_LINE = re.compile(r"^(?:\[?\d{4}-\d\d-\d\d|\d+%\||\s*\d+/\d+ \[|wandb:|INFO|WARNING|ERROR:|E\d{4} )")
_RANK_PREFIX = re.compile(r"^\[(?:rank|default)(\d{1,7})\]:[ ]?")
# IPython prints the exception type on the header line: `RuntimeError    Traceback (most recent call last)`;
# a logger that formats the traceback into its record puts its own words first (`WARNING:app:Traceback: `).
# (Indentation is one of those words: a leading `\s*` outside the group would backtrack quadratically.)
_TRACEBACK_HEADER = re.compile(r"^(?:\s*(?P<type>[\w.]+)\s+|[^\n]*?[\s:])?Traceback \(most recent call last\):?\s*$")
_CHAIN_SEPARATOR = re.compile(
    r"^\s*(?:The above exception was the direct cause of the following exception:"
    r"|During handling of the above exception, another exception occurred:)\s*$"
)
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in ?(?P<function>.+?))?\s*$')
_FUNCTION = r"(?P<function><[^>]+>|[\w.]+)"
_IPY_FILE = re.compile(rf"^\s*File (?P<path>[^\s\"][^\n]*?):(?P<line>\d+), in {_FUNCTION}")
_IPY_CELL = re.compile(r"^\s*(?P<path>Cell In\s?\[\d*\]), line (?P<line>\d+)")
_IPY_INPUT = re.compile(rf"^\s*(?P<path>Input In \[\d*\]), in {_FUNCTION}")
_IPY_OLD = re.compile(rf"^\s*(?P<path><ipython-input-[\w-]+>|\S+\.py) in {_FUNCTION}\(.*\)\s*$")
# Frames a paste damaged or another tool printed: `File` lost in the copy (`.../x.py", line 3, in f`),
# no quotes (`File pkg/x.py, line 3`), and `path.py(3): f` from TorchScript, pdb and editor link text.
_FRAME_CUT = re.compile(r'^\s*(?P<path>[^\s"][^"\n]*?\.pyx?)", line (?P<line>\d+)(?:, in (?P<function>\S+))?\s*$')
_FRAME_UNQUOTED = re.compile(
    r"^\s*File (?P<path>[^\s\"][^,\"\n]*?\.pyx?), line (?P<line>\d+)(?:, in (?P<function>\S+))?\s*$"
)
_FRAME_PARENS = re.compile(rf"^\s*(?:> )?(?P<path>[^\s()]+\.pyx?)\((?P<line>\d+)\):? ?{_FUNCTION}(?:\(\))?\s*$")
_FRAME_SHAPES = (_FRAME, _IPY_FILE, _IPY_CELL, _IPY_INPUT, _IPY_OLD, _FRAME_CUT, _FRAME_UNQUOTED, _FRAME_PARENS)
_IPY_ARROW = re.compile(r"^\s*-+>\s*(?P<line>\d+)\s(?P<code>.*)$")
_IPY_CONTEXT = re.compile(r"^\s{2,}\d+\s")
_CARETS = re.compile(r"^\s*[\^~]+\s*$")
# `RuntimeError: ...`, `torch._dynamo.exc.TorchRuntimeError: ...`, `AssertionError` alone, and the
# full-width colon some terminals and translated UIs print.
_EXCEPTION_LINE = re.compile(
    r"^(?P<type>(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*)?(?:Error|Exception|Exit|Interrupt))"
    r"(?:\s*[:：]\s?(?P<message>.*))?$"
)
# An exception type right before a known message on the same line: `Fix TypeError: can't convert ...`.
_TYPE_BEFORE = re.compile(rf"(?<![A-Za-z0-9_.])(?P<type>{EXCEPTION_NAME})\s*[:：]\s*$")
_FROM_USER_CODE = re.compile(r"^\s*from user code:\s*$")
# Two processes writing to one terminal can glue their lines: `RuntimeErrorRuntimeError: ...`.
_REPEATED = re.compile(r"(\w+?)\1+")
_SENTENCE_END = re.compile(r"\S[.!?)]\s*$")
# A line that stops on a comma, a colon or an open parenthesis, or on the `[hh:mm:ss]` that glog-style
# runtimes (DGL, MXNet, TVM) print before the file and check that failed, is not the end of a message.
_GOES_ON = re.compile(r"(?:[,:;(]|\[\d{1,2}:\d{2}:\d{2}\])\s*$")
_CONTEXT_LINES = 20  # IPython prints a few lines around a failing one; a paste of thousands is no context
_CONTINUED_LINES = 10  # the most numbered lines after IPython's arrow that a call left open is read across
_WRAPPED_MIN = 40  # a line cut at a width is at least this long (rich in a 60-column panel: 59)
_WRAPPED_MAX = 400  # and at most this long: wider than a mail client's or a terminal's lines
_WRAP_SPAN = 3  # the most lines a known message is sought across when a paste wrapped it at spaces
_MAX_MESSAGE_LINES = 60
# The sentences that identify a device error fit in a few lines; past this a message is a tensor or
# graph dump, which every signature would otherwise scan in full.
MAX_MESSAGE_CHARS = 8_000
MAX_CODE_CHARS = 1_000  # a longer "line" is generated or minified code, not a line a reader can judge


@dataclass(frozen=True)
class Frame:
    path: str
    line: int | None
    function: str | None
    code: str | None
    library: str | None
    # The numbered lines IPython printed up to the failing one, indentation kept: what encloses it.
    context: tuple[str, ...] = ()

    @property
    def is_user(self) -> bool:
        return self.library is None


@dataclass(frozen=True)
class RaisedException:
    """One exception of a chain: its type, message and the frames printed above it."""

    type: str | None
    message: str
    frames: tuple[Frame, ...] = ()
    compiled_frames: tuple[Frame, ...] = ()  # torch.compile's "from user code:" block
    # Its frames end without its exception line (the paste stops, or the log goes on, before it): the
    # frame that failed may lie deeper than the last one shown.
    cut: bool = False


@dataclass(frozen=True)
class Traceback:
    """The last exception in the text, with the exceptions chained before it (oldest first)."""

    final: RaisedException
    chain: tuple[RaisedException, ...] = ()
    rank: int | None = None
    ranks: tuple[int, ...] = ()
    text: str = field(default="", compare=False)  # the whole cleaned paste: context, not the traceback

    @property
    def exception(self) -> str | None:
        return self.final.type

    @property
    def message(self) -> str:
        return self.final.message

    @property
    def frames(self) -> tuple[Frame, ...]:
        return self.final.frames

    @property
    def all_frames(self) -> tuple[Frame, ...]:
        return tuple(f for exc in (*self.chain, self.final) for f in (*exc.frames, *exc.compiled_frames))

    @property
    def messages(self) -> tuple[str, ...]:
        """Final message first, then the chained ones: wrappers hide the torch message in the chain."""
        return (self.final.message, *(e.message for e in reversed(self.chain)))


def split_ranks(lines: list[str]) -> dict[int | None, list[str]]:
    """Group torchrun-prefixed lines by rank; unprefixed lines go to the `None` group."""
    groups: dict[int | None, list[str]] = defaultdict(list)
    for line in lines:
        prefix = _RANK_PREFIX.match(line)
        if prefix:
            groups[int(prefix.group(1))].append(line[prefix.end() :])
        else:
            groups[None].append(line)
    return dict(groups)


def parse(
    text: str,
    known_messages: AnyOf | None = None,
    *,
    fold_case: bool = True,
    tolerant: Callable[[str], bool] | None = None,
) -> Traceback | None:
    """The last traceback in `text`; with several ranks, the lowest rank's (all ranks are listed).

    Some pastes carry only a message with no exception type ("module must have its parameters and
    buffers on device ..."); `known_messages` (built from the KB's signatures) finds those, and where
    none is printed as written, `tolerant` says of a line whether it is a known message cut or retyped.
    """
    cleaned = clean(text)
    groups = split_ranks(cleaned.split("\n"))
    found: dict[int | None, tuple[RaisedException, ...]] = {}
    for rank, lines in groups.items():
        chain = _parse_lines(lines, known_messages)
        if not chain or not chain[-1].message:
            known = _known_message(lines, known_messages, fold_case)
            if known is None and tolerant is not None:
                known = _tolerant_message(lines, tolerant)
            chain = _with_known_message(chain, known)
        if chain:
            found[rank] = chain
    if not found:
        return None
    ranks = tuple(sorted(r for r in found if r is not None))
    chosen = ranks[0] if ranks else None
    if chosen is None or (None in found and _has_message(found[None]) and not _has_message(found[chosen])):
        chosen = None
    chain = found[chosen]
    return Traceback(final=chain[-1], chain=chain[:-1], rank=chosen, ranks=ranks, text=cleaned)


def _known_message(lines: list[str], known: AnyOf | None, fold_case: bool) -> RaisedException | None:
    """The last known message printed without an exception line of its own: alone, or after a prefix
    (`Fix TypeError: can't convert ...`, `!!! Exception during processing !!! ...`, a source line),
    from where it starts to the end of its paragraph; an exception type just before it is kept."""
    if known is None:
        return None
    # As printed first; then typed again in another case, with the same regexes compiled ignoring case
    # on first need, so pastes that need it alone pay for it.
    for ignore_case in (False, True) if fold_case else (False,):
        found = _known_at(lines, known, ignore_case=ignore_case)
        if found is not None:
            return found
    return None


_TOLERANT_LINES = 40  # the lines nearest the end that may hold a cut or retyped message
_TYPED_LINE = re.compile(rf"^\s*(?P<type>{EXCEPTION_NAME})\s*[:：]\s*(?P<message>.*)$")


def _tolerant_message(lines: list[str], tolerant: Callable[[str], bool]) -> RaisedException | None:
    """The last line, among the last few that are not frames, that `tolerant` takes for a known message:
    from there to the end of its paragraph, with the exception type it starts with, if any."""
    looked = 0
    for start in range(len(lines) - 1, -1, -1):
        line = lines[start]
        if not line.strip() or any(shape.match(line) for shape in _FRAME_SHAPES):
            continue
        looked += 1
        if looked > _TOLERANT_LINES:
            return None
        if tolerant(line):
            typed = _TYPED_LINE.match(line)
            first = typed.group("message") if typed else line
            return _paragraph(lines, start, first, typed.group("type") if typed else None)
    return None


def _paragraph(lines: list[str], start: int, first: str, type_: str | None) -> RaisedException:
    """A message found at line `start` (from `first`, that line's text from where it starts) to the end of
    its paragraph, as an exception of `type_`. A traceback that a log prints right under the message
    (Python's logging, with no blank line between) ends it."""
    end = start + 1
    while (
        end < len(lines)
        and lines[end].strip()
        and end - start < _MAX_MESSAGE_LINES
        and not _starts_a_traceback(lines[end])
    ):
        end += 1
    message = "\n".join([first, *lines[start + 1 : end]]).strip()
    return RaisedException(type=type_, message=message[:MAX_MESSAGE_CHARS])


def _starts_a_traceback(line: str) -> bool:
    return bool(_TRACEBACK_HEADER.match(line) or _CHAIN_SEPARATOR.match(line) or _frame_match(line))


def _known_at(lines: list[str], known: AnyOf, *, ignore_case: bool) -> RaisedException | None:
    for start in range(len(lines) - 1, -1, -1):
        hit = known.search(lines[start], ignore_case=ignore_case) or _known_across_wrap(
            lines, start, known, ignore_case=ignore_case
        )
        if hit:
            typed = _TYPE_BEFORE.search(lines[start][: hit.start()])
            return _paragraph(lines, start, lines[start][hit.start() :], typed.group("type") if typed else None)
    return None


def _known_across_wrap(lines: list[str], start: int, known: AnyOf, *, ignore_case: bool) -> re.Match[str] | None:
    """A known message that starts on line `start` and that a mail client or an editor wrapped at a space:
    sought in the line joined to the lines it runs on into, each joined one long enough to have been
    wrapped and short enough to have been. At most `_WRAP_SPAN` lines are joined, so a log costs a
    few short searches per line."""
    window = lines[start].rstrip()
    end = start + 1
    while (
        end < len(lines) and end - start < _WRAP_SPAN and _WRAPPED_MIN <= len(lines[end - 1].rstrip()) <= _WRAPPED_MAX
    ):
        following = lines[end].strip()
        if not following or len(following) > _WRAPPED_MAX:
            break
        window = f"{window} {following}"
        end += 1
    if end == start + 1:
        return None
    hit = known.search(window, ignore_case=ignore_case)
    return hit if hit is not None and hit.start() < len(lines[start].rstrip()) else None


def _with_known_message(
    chain: tuple[RaisedException, ...], known: RaisedException | None
) -> tuple[RaisedException, ...]:
    """Frames whose exception line is missing, completed by a known message found elsewhere."""
    if known is None:
        return chain
    if not chain:
        return (known,)
    last = chain[-1]
    return (*chain[:-1], replace(last, type=last.type or known.type, message=known.message))


def _has_message(chain: tuple[RaisedException, ...]) -> bool:
    return bool(chain[-1].message)


class _Scanner:
    """Walks the lines once, collecting frames and exception lines into chains."""

    def __init__(self, lines: list[str], known: AnyOf | None = None) -> None:
        self.known = known  # the KB's messages: one that ends where the message does completes it
        self.header_type: str | None = None
        self.lines = lines
        self.i = 0
        self.chains: list[list[RaisedException]] = []
        self.current: list[RaisedException] = []
        self.frames: list[Frame] = []
        self.in_traceback = False
        self.linked = False  # the previous exception announced a chained one

    def run(self) -> list[list[RaisedException]]:
        while self.i < len(self.lines):
            self._step()
        self._close_frames_without_exception()
        if self.current:
            self.chains.append(self.current)
        return self.chains

    def _step(self) -> None:
        line = self.lines[self.i]
        header = _TRACEBACK_HEADER.match(line)
        if header:
            self._close_frames_without_exception()
            self.header_type = header.group("type")
            if not self.linked and self.current:
                self.chains.append(self.current)
                self.current = []
            self.linked = False
            self.in_traceback = True
            self.i += 1
            return
        if _CHAIN_SEPARATOR.match(line):
            self.linked = True
            self.i += 1
            return
        frame = self._frame_at(self.i)
        if frame is not None:
            self.in_traceback = True
            self.frames.append(frame)
            return
        exc = _EXCEPTION_LINE.match(line.strip()) if not line[:1].isspace() or self.in_traceback else None
        if exc and (exc.group("message") is not None or self.in_traceback):
            self._exception(exc.group("type"), exc.group("message") or "")
            return
        self.i += 1

    def _frame_at(self, i: int) -> Frame | None:
        """A frame starting at line i (consuming its code line), in CPython or IPython layout."""
        line = self.lines[i]
        match = _frame_match(line)
        if not match:
            return None
        groups = match.groupdict()
        path = groups["path"].strip()
        number = _line_number(groups.get("line"))
        function = (groups.get("function") or "").strip() or None
        code, context, self.i = _code_after(self.lines, i + 1)
        arrow = _IPY_ARROW.match(code) if code is not None else None
        if arrow:  # IPython marks the failing line with an arrow and its number: keep only the code
            number, code = number or _line_number(arrow.group("line")), arrow.group("code").strip()
        if path.startswith(("Cell In", "Input In")):
            function = function or "<cell>"
        return Frame(path, number, function, code, library_of(path), context if arrow else ())

    def _exception(self, type_name: str, first_line: str) -> None:
        message_lines = [first_line]
        self.i += 1
        compiled: list[Frame] = []
        blank_run = 0
        while self.i < len(self.lines) and len(message_lines) < _MAX_MESSAGE_LINES:
            line = self.lines[self.i]
            if _TRACEBACK_HEADER.match(line) or _CHAIN_SEPARATOR.match(line):
                break
            if _FROM_USER_CODE.match(line):
                self.i += 1
                while self.i < len(self.lines):
                    frame = self._frame_at(self.i)
                    if frame is None:
                        break
                    compiled.append(frame)
                break
            if not line.strip():
                blank_run += 1
                if blank_run >= 2:
                    break
            else:
                if blank_run and (_FRAME.match(line) or _EXCEPTION_LINE.match(line.strip())):
                    break
                if self._looks_like_log(line) and not line[:1].isspace():
                    break
                if not blank_run and _ends_the_message(
                    self.lines[self.i - 1], line, "\n".join(message_lines), self.known
                ):
                    break
                blank_run = 0
            message_lines.append(line)
            self.i += 1
        message = "\n".join(message_lines).strip()[:MAX_MESSAGE_CHARS]
        repeated = _REPEATED.fullmatch(type_name)
        self.current.append(
            RaisedException(
                type=repeated.group(1) if repeated else type_name,
                message=message,
                frames=tuple(self.frames),
                compiled_frames=tuple(compiled),
            )
        )
        self.header_type = None
        self.frames = []
        self.in_traceback = False

    @staticmethod
    def _looks_like_log(line: str) -> bool:
        """A line that starts a new log record, not the message's continuation."""
        return bool(_LOG_LINE.match(line) or _EXCEPTION_LINE.match(line.strip()))

    def _close_frames_without_exception(self) -> None:
        """Frames whose exception line is missing (cut off, or printed before the traceback)."""
        if not self.frames:
            return
        earlier = self.current[-1] if self.current and not self.current[-1].frames else None
        if earlier is not None:
            self.current[-1] = RaisedException(earlier.type, earlier.message, tuple(self.frames), cut=True)
        else:
            self.current.append(RaisedException(self.header_type, "", tuple(self.frames), cut=True))
        self.frames = []
        self.in_traceback = False


def _ends_the_message(previous: str, line: str, so_far: str, known: AnyOf | None) -> bool:
    """A flush-left line right under the message is the log going on (`done`, `Exception ignored in:`,
    the next epoch), not more of it, when the message looks complete: its last line ends a sentence, or
    is too short to have been cut at a terminal's or a mail client's width and does not stop on a comma
    or a colon, or a known message ends where it does (and it was not folded at a space, as rich leaves
    one). A line that completes a known message begun above is more of it whatever the line before
    looks like: a wrap at a space split them. A message that goes on regardless does so after a blank
    line (Keras), indented (torch.compile), or in parentheses (an argument note)."""
    if not line[:1].strip() or line.startswith("("):
        return False
    if line.startswith("Exception ignored in"):
        return True
    if _continues_known(so_far, line, known):
        return False
    if _SENTENCE_END.search(previous):
        return True
    if len(previous.rstrip()) < _WRAPPED_MIN:
        return not _GOES_ON.search(previous)
    if known is None or previous != previous.rstrip():
        return False
    # Its last two lines, and of those no more than a known message can span: a wrapped one takes at most
    # `_WRAP_SPAN` lines of `_WRAPPED_MAX` characters, and a log can hold lines of thousands.
    flat = " ".join(" ".join(so_far.rsplit("\n", 2)[-2:]).split())[-_WRAP_SPAN * _WRAPPED_MAX :]
    return any(found.end() == len(flat) for found in known.finditer(flat))


def _continues_known(so_far: str, line: str, known: AnyOf | None) -> bool:
    """Whether `line` completes a known message begun in the message's last two lines: a wrap at a
    space leaves a short remnant (`only work`) that is no end of the message when the next line finishes
    a sentence the KB knows. Lines longer than a wrap leaves are no wrap's."""
    last_two = so_far.rsplit("\n", 2)[-2:]
    if known is None or any(len(piece) > _WRAPPED_MAX for piece in (*last_two, line)):
        return False
    tail = " ".join(" ".join(last_two).split())
    joined = f"{tail} {' '.join(line.split())}"
    return any(found.start() < len(tail) < found.end() for found in known.finditer(joined))


def _line_number(digits: str | None) -> int | None:
    """A frame's line number; None for what no file has (and int() refuses past 4300 digits)."""
    return int(digits) if digits and len(digits) <= 9 else None


def _frame_match(line: str) -> re.Match[str] | None:
    for shape in _FRAME_SHAPES:
        match = shape.match(line)
        if match:
            return match
    return None


def _open_brackets(code: str) -> int:
    return sum(map(code.count, "([{")) - sum(map(code.count, ")]}"))


def _code_after(lines: list[str], i: int) -> tuple[str | None, tuple[str, ...], int]:
    """The source line printed under a frame, skipping caret markers and IPython context lines, and
    the numbered lines IPython printed up to the failing one (its arrowed line included). A call the
    arrowed line leaves open goes on over the numbered lines after it: they join it, so that its
    arguments (`generator=`, `device=`) are read as the failing line's."""
    code: str | None = None
    context: list[str] = []
    continued = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped:
            if code is None and i + 1 < len(lines) and _IPY_CONTEXT.match(lines[i + 1] or ""):
                i += 1
                continue
            break
        if _starts_a_traceback(line):
            break
        if _CARETS.match(line):
            i += 1
            continue
        arrow = _IPY_ARROW.match(line)
        if arrow:
            code = line.strip()
            context.append(arrow.group("code"))
            i += 1
            continue
        numbered = _IPY_CONTEXT.match(line)
        if numbered or stripped == "...":
            if numbered and code is None:
                context.append(line[numbered.end() :])
            elif numbered and continued < _CONTINUED_LINES and _open_brackets(code or "") > 0:
                code = f"{code} {line[numbered.end() :].strip()}"
                continued += 1
            i += 1
            continue
        if code is not None or (not line[:1].isspace() and _EXCEPTION_LINE.match(stripped)):
            break
        code = stripped
        i += 1
    return code, tuple(context[-_CONTEXT_LINES:]), i


def _parse_lines(lines: list[str], known: AnyOf | None = None) -> tuple[RaisedException, ...]:
    """The chain to explain among all a log holds: the last with a known device message, since what a
    crash prints after it is launcher noise (torchrun's ChildFailedError, a KeyboardInterrupt at exit);
    else the last that names an exception. A frames-only fragment (a cut-off paste) only as a last resort."""
    chains = _Scanner(lines, known).run()
    if not chains:
        return ()
    typed = [chain for chain in chains if chain[-1].type is not None]
    if known is not None:
        for chain in reversed(typed):
            if any(known.holds_any(raised.message) for raised in chain):
                return tuple(chain)
    return tuple(typed[-1] if typed else chains[-1])


__all__ = ["Frame", "RaisedException", "Traceback", "clean", "parse", "split_ranks"]
