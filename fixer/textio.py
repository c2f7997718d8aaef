"""Read a traceback from a file, a pipe or a paste, in bounded memory, optionally echoing it live.

`python train.py 2>&1 | fixer` may carry gigabytes of log: fixer keeps only the last traceback and
the lines after it, and can pass every byte through to the terminal as it arrives.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import stat
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

TAIL_LINES = 4_000
TAIL_CHARS = 1 << 21  # two thousand times a long traceback, and half a second of parsing
MAX_LINE_CHARS = 16_384
CHUNK_BYTES = 1 << 16
_HEADER = "Traceback (most recent call last)"
_CHAIN = re.compile(r"The above exception was the direct cause|During handling of the above exception")
_LINE_END = re.compile(r"\r\n|\r|\n")


class InputError(Exception):
    """Input fixer cannot use; the message is shown to the user as is, on one line."""


class BoundedText:
    """The text the parser needs from an unbounded stream: the last traceback, and the tail after it,
    each at most TAIL_LINES lines and TAIL_CHARS characters, so reading costs the same however much
    log comes before them."""

    def __init__(self) -> None:
        self.tail: deque[str] = deque()
        self.anchor: list[str] = []
        self.anchor_start = -1
        self.count = 0
        self._partial = ""
        self._last_nonblank = ""
        self._tail_chars = 0
        self._anchor_chars = 0

    def feed(self, chunk: str) -> None:
        if "\n" not in chunk and "\r" not in chunk and not self._partial.endswith("\r"):
            # more of one long line (a message of megabytes): kept up to the cut, without a regex over it
            if len(self._partial) < MAX_LINE_CHARS:
                self._partial = (self._partial + chunk[:MAX_LINE_CHARS])[:MAX_LINE_CHARS]
            return
        data = self._partial + chunk
        held = data.endswith("\r")  # CR, or the first half of a CRLF the next chunk completes
        parts = _LINE_END.split(data[:-1] if held else data)
        self._partial = parts.pop()[:MAX_LINE_CHARS] + ("\r" if held else "")
        for line in parts:
            self._add(line[:MAX_LINE_CHARS])

    def _add(self, line: str) -> None:
        if _HEADER in line and not (self.anchor and _CHAIN.search(self._last_nonblank)):
            self.anchor = []
            self.anchor_start = self.count
            self._anchor_chars = 0
        if self.anchor_start >= 0 and len(self.anchor) < TAIL_LINES and self._anchor_chars < TAIL_CHARS:
            self.anchor.append(line)
            self._anchor_chars += len(line)
        self.tail.append(line)
        self._tail_chars += len(line)
        while len(self.tail) > TAIL_LINES or (self._tail_chars > TAIL_CHARS and len(self.tail) > 1):
            self._tail_chars -= len(self.tail.popleft())
        self.count += 1
        if line.strip():
            self._last_nonblank = line

    def text(self) -> str:
        if self._partial:
            self._add(self._partial.removesuffix("\r"))
            self._partial = ""
        tail_start = self.count - len(self.tail)
        if self.anchor_start < 0 or self.anchor_start >= tail_start:
            return "\n".join(self.tail)
        kept = self.anchor[: tail_start - self.anchor_start]
        return "\n".join([*kept, *self.tail])


_RANKED = re.compile(r"^\[(?:rank|default)(\d{1,7})\]:")
BLOCK_LINES = 400  # a traceback and its message: longer runs are a log going on after it
PREFACE_LINES = 10  # a known message this close above a traceback is its own, or a warning about it
FRAME_LINES = 100  # a message with no header above it takes at most this many frame lines before it
# A line of a traceback above its message: a `File "..."` line, the indented code under it, IPython's
# arrows and numbered lines, Python 3.11's carets, and an exception's line whose message goes on below.
_FRAME_LINE = re.compile(
    r"(?:\[(?:rank|default)\d{1,7}\]:)?(?:\s+\S|File |-+>|\^|[\w.]*(?:Error|Exception)(?:\[\w+\])?: )"
)


@dataclass(frozen=True)
class Block:
    line: int  # where its header is in the stream, from 1
    text: str


class TracebackBlocks:
    """Every traceback in an unbounded stream, each as the lines from its header on, in bounded memory:
    `fixer scan` reads whole job logs, where the lines between tracebacks are most of the bytes. Chained
    exceptions stay in one block, and each torchrun rank's lines (`[rank3]: ...`) make blocks of their
    own, since ranks interleave. `starts` also opens a block at a line no traceback header precedes: a
    known message a logger printed alone."""

    def __init__(
        self, starts: Callable[[str], bool] = lambda line: False, may_start: Callable[[str], bool] = lambda text: False
    ) -> None:
        self.starts = starts
        self.may_start = may_start  # whether `starts` could accept any line of this text: False skips them all
        self.count = 0
        self._partial = ""
        self._open: dict[str | None, tuple[int, list[str]]] = {}  # by rank: header line, lines so far
        self._bare: set[str | None] = set()  # the ranks whose open block a known message started
        self._last: dict[str | None, str] = {}  # the last non-blank line of each rank
        self._recent: dict[str | None, deque[str]] = {}  # each rank's last lines
        self._frames: dict[str | None, list[str]] = {}  # the frame lines above the message a bare block opened at
        self.done: list[Block] = []

    def feed(self, chunk: str) -> None:
        data = self._partial + chunk
        held = data.endswith("\r")
        parts = _LINE_END.split(data[:-1] if held else data)
        self._partial = parts.pop()[:MAX_LINE_CHARS] + ("\r" if held else "")
        if not self._open and _HEADER not in data and not self.may_start(data):
            self.count += len(parts)  # most of a log: progress lines no block starts at, skipped whole
            for line in parts[-FRAME_LINES:]:  # but the frames of a cut traceback may end it
                self._remember(line[:MAX_LINE_CHARS])
            return
        for line in parts:
            self._add(line[:MAX_LINE_CHARS])

    def _add(self, line: str) -> None:
        self.count += 1
        ranked = _RANKED.match(line)
        rank = ranked.group(1) if ranked else None
        block = self._open.get(rank)
        preface = rank in self._bare and block is not None and len(block[1]) <= PREFACE_LINES
        if preface and _HEADER in line:
            self._bare.discard(rank)  # the message a logger printed above its traceback: one block, one error
        elif _HEADER in line and not (block and _CHAIN.search(self._last.get(rank, ""))):
            self._close(rank)
            block = self._open[rank] = (self.count, [])
        elif block is None and self.starts(line):
            block = self._open[rank] = (self.count, [])
            self._bare.add(rank)
            self._frames[rank] = self._frames_above(rank)
        elif block is None and (above := self._last.get(rank)) is not None and self.starts(f"{above} {line}"):
            # a message wrapped onto two lines (by a terminal, a logger or its own newline) starts at the first
            recent = self._recent.get(rank)
            wrapped = recent is not None and bool(recent) and recent[-1] == above
            block = self._open[rank] = (self.count - 1, [above]) if wrapped else (self.count, [])
            self._bare.add(rank)
            self._frames[rank] = self._frames_above(rank, skip=int(wrapped))
        if block is not None:
            block[1].append(line)
            if len(block[1]) >= BLOCK_LINES:
                self._close(rank)
        if line.strip():
            self._last[rank] = line
        self._remember(line)

    def _remember(self, line: str) -> None:
        ranked = _RANKED.match(line)
        self._recent.setdefault(ranked.group(1) if ranked else None, deque(maxlen=FRAME_LINES)).append(line)

    def _frames_above(self, rank: str | None, skip: int = 0) -> list[str]:
        """The frame lines just above a message with no header (and its `skip` lines already in the block):
        a traceback whose start was cut off."""
        recent = list(self._recent.get(rank, ()))[: -skip or None]
        kept = 0
        for line in reversed(recent):
            if not _FRAME_LINE.match(line):
                break
            kept += 1
        return recent[len(recent) - kept :] if kept else []

    def _close(self, rank: str | None) -> None:
        block = self._open.pop(rank, None)
        frames = self._frames.pop(rank, [])
        if rank not in self._bare:
            frames = []  # the message came just before its traceback's header: the lines above are not its
        self._bare.discard(rank)
        if block is not None:
            self.done.append(Block(block[0] - len(frames), "\n".join([*frames, *block[1]])))

    def finish(self) -> list[Block]:
        if self._partial:
            self._add(self._partial.removesuffix("\r"))
            self._partial = ""
        for rank in list(self._open):
            self._close(rank)
        return sorted(self.done, key=lambda block: block.line)


def file_blocks(
    path: Path, starts: Callable[[str], bool] = lambda line: False, may_start: Callable[[str], bool] = lambda t: False
) -> list[Block]:
    """Every traceback in a regular file, read a chunk at a time in any encoding `read_file` reads. A
    pipe, a device or a socket among a job's logs is never opened: it could block or never end."""
    decoder = _Decoder()
    blocks = TracebackBlocks(starts, may_start)
    name = shown(str(path))
    chunks = _file_chunks(str(path), pipes=False)
    try:
        for chunk in chunks:
            blocks.feed(decoder.decode(chunk))
        blocks.feed(decoder.decode(b"", final=True))
    except OSError as exc:
        raise InputError(f"{name}: cannot read ({exc.strerror or exc})") from None
    except InputError as exc:  # the decoder's (binary data) or a damaged compressed file's
        raise InputError(exc.args[0] if exc.args[0].startswith(name) else f"{name}: {exc}") from None
    return blocks.finish()


def _chunks(read: Callable[[int], bytes]) -> Iterable[bytes]:
    while chunk := read(CHUNK_BYTES):
        yield chunk


def collect(chunks: Iterable[bytes], echo: BinaryIO | None = None) -> str:
    """Decode and bound a byte stream; with `echo`, write every chunk through as soon as it arrives."""
    decoder = _Decoder()
    bounded = BoundedText()
    for chunk in chunks:
        if echo is not None:
            echo.write(chunk)
            echo.flush()
        bounded.feed(decoder.decode(chunk))
    bounded.feed(decoder.decode(b"", final=True))
    return bounded.text()


class _Decoder:
    """Bytes to text, whatever wrote the log: UTF-8 or, from PowerShell's redirection, UTF-16/32 with
    or without a byte-order mark, told by where the NUL bytes fall. A hole of NUL bytes at the start
    (a log truncated while its writer kept its offset) is skipped, stray NULs are dropped, and data
    that does not decode to text is refused."""

    SNIFF_BYTES = 8192
    _BOMS = (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    )

    def __init__(self) -> None:
        self._hole = 0  # NUL bytes skipped at the start
        self._head = b""  # bytes kept until the encoding is known
        self._decoder: codecs.IncrementalDecoder | None = None

    def decode(self, chunk: bytes, *, final: bool = False) -> str:
        if self._decoder is None:
            if not self._head:
                stripped = chunk.lstrip(b"\x00")
                self._hole += len(chunk) - len(stripped)
                # keep the hole's last NULs up to a code unit's alignment: UTF-16-BE text starts with one
                chunk = b"\x00" * (self._hole % 4) + stripped if stripped else b""
            self._head += chunk
            if len(self._head) < self.SNIFF_BYTES and not final:
                return ""
            if not self._head:
                if self._hole:
                    raise InputError("the input looks binary (only NUL bytes); give fixer a text log or traceback")
                return ""
            self._decoder = codecs.getincrementaldecoder(_encoding(self._head))(errors="replace")
            chunk, self._head = self._head, b""
            text = self._decoder.decode(chunk, final=final)
            if _looks_binary(text[: self.SNIFF_BYTES]):
                raise InputError("the input looks binary, not like text; give fixer a text log or traceback")
            return text.replace("\x00", "")
        return self._decoder.decode(chunk, final=final).replace("\x00", "")


def _encoding(head: bytes) -> str:
    for bom, encoding in _Decoder._BOMS:
        if head.startswith(bom):
            return encoding
    zeros = [0, 0, 0, 0]
    for offset in range(4):
        zeros[offset] = head[offset::4].count(0)
    quarter = max(len(head) // 4, 1)
    if min(zeros[1:]) > 0.9 * quarter and zeros[0] < 0.5 * quarter:
        return "utf-32-le"
    if min(zeros[:3]) > 0.9 * quarter and zeros[3] < 0.5 * quarter:
        return "utf-32-be"
    even, odd = zeros[0] + zeros[2], zeros[1] + zeros[3]
    half = max(len(head) // 2, 1)
    if odd > 0.7 * half and even < 0.3 * half:
        return "utf-16-le"
    if even > 0.7 * half and odd < 0.3 * half:
        return "utf-16-be"
    return "utf-8"


_TEXT_CONTROLS = frozenset("\t\n\r\x0b\x0c\x1b\x08\x07")


def _looks_binary(text: str) -> bool:
    """Over a tenth of undecodable bytes, NULs or control characters a terminal would not print."""
    odd = sum(1 for c in text if c == "\ufffd" or (c < " " and c not in _TEXT_CONTROLS) or "\x7f" <= c <= "\x9f")
    return odd * 10 > len(text)


def read_file(path: str) -> str:
    """A log named on the command line: a regular file, or a pipe something writes to (`fixer explain
    <(python train.py 2>&1)`); anything else is refused on one line, before it is opened."""
    chunks = _file_chunks(path, pipes=True)
    try:
        return collect(chunks)
    except OSError as exc:
        raise InputError(f"{shown(path)}: cannot read ({exc.strerror or exc})") from None


MAX_SHOWN_PATH = 120


def shown(path: str) -> str:
    """A path as a one-line message names it: a path of thousands of characters by its two ends."""
    half = MAX_SHOWN_PATH // 2
    return path if len(path) <= MAX_SHOWN_PATH else f"{path[:half]}...{path[-half:]}"


def file_problem(path: str) -> str | None:
    """Why `path` is no regular file fixer can read, said the way `read_file` says it; None when it is one."""
    try:
        kind = _kind(os.stat(path).st_mode)
    except (OSError, ValueError) as exc:
        return f"{shown(path)}: {_why(exc)}"
    return f"{shown(path)}: {kind}" if kind else None


def _file_chunks(path: str, *, pipes: bool) -> Iterator[bytes]:
    """The bytes at `path`, once it is known not to block for ever: a directory, a device, a socket (and
    with `pipes` False, a pipe) are refused before they are opened, and why goes in the InputError."""
    try:
        mode = os.stat(path).st_mode
        kind = None if stat.S_ISFIFO(mode) and pipes else _kind(mode)
        if kind:
            raise InputError(f"{shown(path)}: {kind}")
        handle = open(path, "rb", buffering=0) if not stat.S_ISFIFO(mode) else None  # noqa: SIM115
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise InputError(f"{shown(path)}: {_why(exc)}") from None
    return _pipe_chunks(path) if handle is None else _read_through(handle, shown(path))


# Rotated logs are kept compressed (logrotate's gzip, or bzip2 and xz): told by their first bytes, not
# their names, and read through the standard library's decompressors a chunk at a time.
_COMPRESSED = ((b"\x1f\x8b", "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "lzma"))


def _read_through(handle: BinaryIO, name: str) -> Iterator[bytes]:
    with handle:
        head = handle.read(6)
        module = next((name for magic, name in _COMPRESSED if head.startswith(magic)), None)
        if module is None:
            yield head
            yield from _chunks(handle.read)
            return
        import importlib

        handle.seek(0)
        with importlib.import_module(module).open(handle, "rb") as unpacked:
            try:
                yield from _chunks(unpacked.read)
            except EOFError:  # a log still being compressed ends early: what came through is read
                return
            except (OSError, ValueError) as exc:  # lzma.LZMAError is an OSError; a corrupt stream
                raise InputError(f"{name}: the {module} data is damaged ({exc})") from None


def _kind(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory; give a log file or a traceback"
    if stat.S_ISFIFO(mode):
        return "is a named pipe, not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file"
    return "is not a regular file"


def _pipe_chunks(path: str) -> Iterator[bytes]:
    """A pipe whose writer is there (a process substitution, a named pipe being written) is read to its
    end; one that nothing has opened for writing would block for ever, so it is refused. POSIX tells the
    two apart: a non-blocking read of an empty pipe ends (0 bytes) without a writer, and waits with one."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb", buffering=0) as handle:
        try:
            first = os.read(fd, CHUNK_BYTES)
        except BlockingIOError:
            first = None  # a writer, with nothing written yet
        if first == b"":
            raise InputError(f"{shown(path)}: a named pipe nothing writes to; pipe the log instead (... | fixer -)")
        os.set_blocking(fd, True)
        if first:
            yield first
        yield from _chunks(handle.read)


def describe(exc: OSError) -> str:
    """An OS error about a path, as one line names it: the path (its two ends, if long) and why."""
    return f"{shown(str(exc.filename))}: {_why(exc)}"


def _why(exc: OSError | ValueError) -> str:
    """An OS error as a few words a user acts on."""
    code = getattr(exc, "errno", None)
    if code == errno.ENOENT:
        return "no such file"
    if code == errno.ENOTDIR:
        return "no such file (a part of the path is not a directory)"
    if code == errno.ELOOP:
        return "a loop of symbolic links"
    if code == errno.EISDIR:
        return "is a directory"
    if code == errno.ENAMETOOLONG:
        return "the path is too long for this system"
    if code in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if isinstance(exc, ValueError):  # a NUL byte in the path
        return "not a valid path"
    return f"cannot read ({exc.strerror or exc})"


def read_stdin(*, echo: bool = False) -> str:
    """Standard input in chunks as they arrive (os.read returns early), so echoing stays live."""
    closed = InputError("standard input is closed; pipe a log or give a file")
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):  # started with fd 0 closed: sys.stdin is None
        raise closed from None
    out = sys.stdout.buffer if echo else None
    try:
        return collect(_chunks(lambda n: os.read(fd, n)), echo=out)
    except KeyboardInterrupt:
        raise InputError("interrupted before the input ended") from None
    except OSError as exc:
        if exc.errno == errno.EBADF:
            raise closed from None
        raise InputError(f"cannot read standard input ({exc.strerror or exc})") from None


def stdin_is_terminal() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False
