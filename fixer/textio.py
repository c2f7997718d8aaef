"""Read a traceback from a file, a pipe or a paste, in bounded memory, optionally echoing it live.

`python train.py 2>&1 | fixer` may carry gigabytes of log: fixer keeps only the last traceback and
the lines after it, and can pass every byte through to the terminal as it arrives.
"""

from __future__ import annotations

import codecs
import os
import re
import sys
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

TAIL_LINES = 4_000
MAX_LINE_CHARS = 16_384
CHUNK_BYTES = 1 << 16
_HEADER = "Traceback (most recent call last)"
_CHAIN = re.compile(r"The above exception was the direct cause|During handling of the above exception")
_LINE_END = re.compile(r"\r\n|\r|\n")


class InputError(Exception):
    """Input fixer cannot use; the message is shown to the user as is, on one line."""


class BoundedText:
    """The text the parser needs from an unbounded stream: the last traceback, and the tail after it."""

    def __init__(self) -> None:
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.anchor: list[str] = []
        self.anchor_start = -1
        self.count = 0
        self._partial = ""
        self._last_nonblank = ""

    def feed(self, chunk: str) -> None:
        parts = _LINE_END.split(self._partial + chunk)
        self._partial = parts.pop()
        if len(self._partial) > MAX_LINE_CHARS:
            self._partial = self._partial[:MAX_LINE_CHARS]
        for line in parts:
            self._add(line[:MAX_LINE_CHARS])

    def _add(self, line: str) -> None:
        if _HEADER in line and not (self.anchor and _CHAIN.search(self._last_nonblank)):
            self.anchor = []
            self.anchor_start = self.count
        if self.anchor_start >= 0 and len(self.anchor) < TAIL_LINES:
            self.anchor.append(line)
        self.tail.append(line)
        self.count += 1
        if line.strip():
            self._last_nonblank = line

    def text(self) -> str:
        if self._partial:
            self._add(self._partial)
            self._partial = ""
        tail_start = self.count - len(self.tail)
        if self.anchor_start < 0 or self.anchor_start >= tail_start:
            return "\n".join(self.tail)
        kept = self.anchor[: tail_start - self.anchor_start]
        return "\n".join([*kept, *self.tail])


def _chunks(read: Callable[[int], bytes]) -> Iterable[bytes]:
    while chunk := read(CHUNK_BYTES):
        yield chunk


def collect(chunks: Iterable[bytes], echo: BinaryIO | None = None) -> str:
    """Decode and bound a byte stream; with `echo`, write every chunk through as soon as it arrives."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    bounded = BoundedText()
    first = True
    for chunk in chunks:
        if echo is not None:
            echo.write(chunk)
            echo.flush()
        if first and b"\x00" in chunk[:8192]:
            raise InputError("the input looks binary (it contains NUL bytes); give fixer a text log or traceback")
        first = False
        bounded.feed(decoder.decode(chunk))
    bounded.feed(decoder.decode(b"", final=True))
    return bounded.text()


def read_file(path: str) -> str:
    target = Path(path)
    if target.is_dir():
        raise InputError(f"{path} is a directory; give a log file or a traceback")
    try:
        with target.open("rb") as handle:
            return collect(_chunks(handle.read))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None


def read_stdin(*, echo: bool = False) -> str:
    """Standard input in chunks as they arrive (os.read returns early), so echoing stays live."""
    fd = sys.stdin.fileno()
    out = sys.stdout.buffer if echo else None
    try:
        return collect(_chunks(lambda n: os.read(fd, n)), echo=out)
    except KeyboardInterrupt:
        raise InputError("interrupted before the input ended") from None


def stdin_is_terminal() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False
