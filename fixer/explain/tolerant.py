"""Read a message that is cut or retyped: the words of a known wording, in order, with a few wrong.

Users paste what they have: the tail of a message whose start scrolled away (`mat2 is on cpu, different
from other tensors on cuda:0`), a message retyped by hand (`is_available ()`, `objetc`), or one cut
before its argument clause. The signatures' regexes want the wording as printed. This module reads each
signature's fixed words (its *skeleton*, the regex with anything variable as a hole) and aligns a line's
words to a run of them: the line may start and end anywhere in the wording (a cut at any word
boundary), a hole takes up to `HOLE_SPAN` words (a device, an argument name), and a word one edit away
from the wording's counts as that word (a typo).

Nothing here runs when a signature reads the message as written: this is the last way a paste reaches
the KB before "no candidate". `fixer-match.js` ports `words` and `align` for the site's paste box.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fixer.explain.literals import tree

HOLE = "*"  # a skeleton token for anything the regex varies
HOLE_SPAN = 4  # how many of the line's words one hole may take
MIN_WORDS = 5  # words that must agree: fewer could come from any sentence about devices
MAX_COST = 0.2  # per agreeing word: a wrong word costs 1, a typo 0.5
TYPO = 0.5
MAX_READINGS = 8  # ways through a wording's alternatives that are read as they are; more, and they are holes
CONTENT_SHARED = 2  # longer words (four letters or more) a line must share with a wording to be aligned to it
_WORD = re.compile(r"[a-z]+\d*|\d+")
# What a line may start with before the message: marks, and the exception's type.
_TYPE_PREFIX = re.compile(r"^\W*(?:[\w.]*(?:Error|Exception|Warning)\s*[:：])?")


def words(text: str) -> tuple[str, ...]:
    """The lowercase words and numbers of a text: punctuation and spacing are what retyping changes."""
    return tuple(_WORD.findall(text.lower()))


def readings(pattern: str) -> tuple[tuple[str, ...], ...]:
    """The regex's skeleton, then one skeleton per way through its alternatives (`(?:device type|backend|
    type)` read each way), at most `MAX_READINGS`: a cut message shows the words of one alternative, which
    a hole alone cannot agree with. `()` where the regex cannot be read."""
    try:
        items = tree(pattern).data
        ways = [_holed(items), *_ways(items)]
    except Exception:  # re's parser is private: any surprise leaves the wording unread
        return ()
    return tuple(dict.fromkeys(_tokens(way) for way in ways))


def _tokens(parts: list[str | None]) -> tuple[str, ...]:
    out: list[str] = []
    for part in _merged(parts):
        for token in (HOLE,) if part is None else words(part):
            if not (token == HOLE and out and out[-1] == HOLE):
                out.append(token)
    return tuple(out)


def _holed(items: Iterable[tuple[object, object]]) -> list[str | None]:
    """Text runs and holes (None), in order: anything that varies is a hole."""
    found: list[str | None] = []
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            found.append(chr(arg))  # type: ignore[call-overload,arg-type]
        elif name == "SUBPATTERN":
            found += _holed(arg[-1].data)  # type: ignore[index]
        elif name in ("ASSERT", "ASSERT_NOT", "AT"):
            continue
        elif name in ("MAX_REPEAT", "MIN_REPEAT") and arg[0] == arg[1] == 1:  # type: ignore[index]
            found += _holed(arg[2].data)  # type: ignore[index]
        else:
            found.append(None)
    return found


def _ways(items: Iterable[tuple[object, object]], limit: int = MAX_READINGS) -> list[list[str | None]]:
    """Each way through the items, alternatives taken each way, while there are no more than `limit`;
    an alternative that would make more is a hole, as in the skeleton."""
    ways: list[list[str | None]] = [[]]
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":  # most items: added to each way in place, not by copying every way
            for way in ways:
                way.append(chr(arg))  # type: ignore[call-overload,arg-type]
            continue
        if name == "SUBPATTERN":
            choices: list[list[str | None]] = _ways(arg[-1].data, limit)  # type: ignore[index]
        elif name in ("ASSERT", "ASSERT_NOT", "AT"):
            continue
        elif name in ("MAX_REPEAT", "MIN_REPEAT") and arg[0] == arg[1] == 1:  # type: ignore[index]
            choices = _ways(arg[2].data, limit)  # type: ignore[index]
        elif name == "BRANCH":
            choices = [way for branch in arg[1] for way in _ways(branch.data, limit)]  # type: ignore[index]
        else:
            choices = [[None]]
        if len(ways) * len(choices) > limit:
            choices = [[None]]
        ways = [way + choice for way in ways for choice in choices]
    return ways


def _merged(parts: list[str | None]) -> list[str | None]:
    merged: list[str | None] = []
    for piece in parts:
        if piece is not None and merged and merged[-1] is not None:
            merged[-1] += piece
        else:
            merged.append(piece)
    return merged


def _near(a: str, b: str) -> bool:
    """One edit apart (a letter wrong, missing, extra, or two swapped), for words long enough that one
    edit does not make another word."""
    if a == b or min(len(a), len(b)) < 4 or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (
            len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
        )
    short, long = (a, b) if len(a) < len(b) else (b, a)
    i = 0
    while i < len(short) and short[i] == long[i]:
        i += 1
    return short[i:] == long[i + 1 :]


@dataclass(frozen=True)
class Alignment:
    agreed: int  # the wording's words the line shows, typos included
    cost: float

    @property
    def value(self) -> float:
        return self.agreed - 2 * self.cost

    @property
    def good(self) -> bool:
        return self.agreed >= MIN_WORDS and self.cost <= MAX_COST * self.agreed


def reach(wording: Sequence[str]) -> int:
    """How many of a line's words a good alignment to `wording` can span, counted from the line's start:
    the words before it and those it gets wrong or adds each cost 1, and together at most `MAX_COST` per
    agreeing word; besides those, a line word agrees with one of the wording's or sits in a hole."""
    fixed = sum(token != HOLE for token in wording)
    return fixed + math.floor(MAX_COST * fixed) + HOLE_SPAN * (len(wording) - fixed)  # the product `good` takes


def align(line: Sequence[str], wording: Sequence[str]) -> Alignment:
    """The best alignment of the line's words to a run of the wording's: the wording may start and end
    anywhere (the line is cut from it), the line may end anywhere (text after the message), a hole takes
    up to `HOLE_SPAN` of the line's words,
    a word is right, one edit off (`TYPO`), or wrong (1, as is a word either side has and the other
    lacks). Best: the highest agreeing words less twice the cost.

    Only the line's first `reach(wording)` words are aligned: a good alignment (`Alignment.good`) cannot
    end later, and a line of thousands of words would otherwise cost thousands of rows."""
    m = len(wording)
    line = line[: reach(wording)]
    # Row i, column j: the line's first i words against the wording up to j: the best value
    # (agreed - 2 * cost) and its agreeing words. The wording may start anywhere (row 0 is free); the
    # line's words before it are wrong words.
    values = [[0.0] * (m + 1)]
    agreeds = [[0] * (m + 1)]
    best_value, best_agreed = 0.0, 0
    for i, token in enumerate(line, start=1):
        up_value, up_agreed = values[i - 1], agreeds[i - 1]
        value, agreed = [up_value[0] - 2] + [0.0] * m, [0] * (m + 1)  # a word before the wording starts
        for j in range(1, m + 1):
            want = wording[j - 1]
            # the hole takes none of the line's words, or the line lacks the wording's word
            v, a = value[j - 1] - (0 if want == HOLE else 2), agreed[j - 1]
            if want == HOLE:
                for k in range(1, min(HOLE_SPAN, i) + 1):
                    if values[i - k][j - 1] > v:
                        v, a = values[i - k][j - 1], agreeds[i - k][j - 1]
            else:
                if token == want:
                    step, gained = 1.0, 1
                elif _near(token, want):
                    step, gained = 1.0 - 2 * TYPO, 1
                else:
                    step, gained = -2.0, 0
                if up_value[j - 1] + step > v:
                    v, a = up_value[j - 1] + step, up_agreed[j - 1] + gained
                if up_value[j] - 2 > v:  # a word the wording lacks
                    v, a = up_value[j] - 2, up_agreed[j]
            value[j], agreed[j] = v, a
            if v > best_value:
                best_value, best_agreed = v, a
        values.append(value)
        agreeds.append(agreed)
    return Alignment(best_agreed, (best_agreed - best_value) / 2)


@dataclass(frozen=True)
class Read:
    """A line read as a wording: which (by number), the reading it agreed with best, and how well."""

    number: int
    words: tuple[str, ...]
    alignment: Alignment


class Wordings:
    """Wordings to read lines against, each as its readings (`readings()`), in the order given."""

    def __init__(self, readings: Sequence[Sequence[tuple[str, ...]]]) -> None:
        self.readings = [tuple(tuple(r) for r in found) for found in readings]
        # A line must show some of a wording's longer words before the alignment is worth working out.
        self._content = [frozenset(w for r in found for w in r if len(w) >= 4 and w != HOLE) for found in self.readings]

    def read(self, line: str) -> list[Read]:
        """The wordings a line reads as (`Alignment.good`), each by its best reading: all of those that
        read it best, since a cut line may be the tail that several wordings share; none if none reads it."""
        tokens = words(_TYPE_PREFIX.sub("", line, count=1))
        if len(tokens) < MIN_WORDS:
            return []
        present = set(tokens)
        found: list[Read] = []
        # A team's KB may word one message many times over: each distinct reading is aligned once.
        alignments: dict[tuple[str, ...], Alignment] = {}

        def aligned_to(reading: tuple[str, ...]) -> Alignment:
            got = alignments.get(reading)
            if got is None:
                got = alignments[reading] = align(tokens, reading)
            return got

        for number, readings in enumerate(self.readings):
            if len(self._content[number] & present) < CONTENT_SHARED:
                continue
            aligned = [Read(number, reading, got) for reading in readings if (got := aligned_to(reading)).good]
            if not aligned:
                continue
            found.append(max(aligned, key=lambda r: r.alignment.value))  # the first of equals: the skeleton
        if not found:
            return []
        best = max(r.alignment.value for r in found)
        # A line that agrees word for word with several wordings is cut from any of them: the longer
        # agreement is not the likelier one. Where words disagree, only the best reading stands.
        return [r for r in found if r.alignment.value == best or r.alignment.cost == 0]
