"""Search many regexes without trying them all: a regex is tried on a text only if the text holds the
literal strings it cannot match without, and compiled the first time that happens.

A team's KB of a few thousand entries holds tens of thousands of regexes; compiling them costs more
than the whole match of one paste, and most of them cannot match it at all (a message about fused Adam
shows none of the words a pinned-memory message needs). So each regex carries what it needs, worked
out once from its parse tree: every match holds one string of each of its sets (`Needs`). A
`LiteralIndex` over many regexes then finds, in one pass over a text, the few whose rarest set the text
holds: what RE2's prefilter and code search's trigram index do, at the scale of a KB.
"""

from __future__ import annotations

import binascii
import importlib
import re
import sys
import time
import zlib
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any, Protocol

Needs = tuple[tuple[str, ...], ...]
"""Lowercased strings: a text the regex matches holds at least one string of each tuple."""

# re.compile's own parser and compiler: private, named re._parser and re._compiler from Python 3.11, and
# sre_parse and sre_compile before (already imported by `re`, so free here).
_OLD_NAMES = sys.version_info < (3, 11)
_sre_parser: Any = importlib.import_module("sre_parse" if _OLD_NAMES else "re._parser")
_sre_compiler: Any = importlib.import_module("sre_compile" if _OLD_NAMES else "re._compiler")
_sre_constants: Any = importlib.import_module("sre_constants" if _OLD_NAMES else "re._constants")
_sre: Any = importlib.import_module("_sre")  # the C engine, which takes a compiled pattern's code words
_CODE = "I" if array("I").itemsize == _sre.CODESIZE else None  # the array type of one code word
ENGINE = f"{_sre_constants.MAGIC}/{_sre.CODESIZE}"  # the engine's version: a `Program` is valid for its own
_LITERAL, _SUBPATTERN, _BRANCH = _sre_constants.LITERAL, _sre_constants.SUBPATTERN, _sre_constants.BRANCH
_ATOMIC_GROUP = getattr(_sre_constants, "ATOMIC_GROUP", None)  # Python 3.11 on
_ASSERTS = frozenset((_sre_constants.ASSERT, _sre_constants.ASSERT_NOT))
_REPEATS = frozenset(
    getattr(_sre_constants, name)
    for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
    if hasattr(_sre_constants, name)
)
_GRAM = 3  # a literal is looked up by one of its three-character pieces, its rarest
_WINDOW = 16  # and checked by as many of its characters around that piece
# Seeking a piece in a text costs about a thirtieth of one step of the loop over the text's characters
# (measured on 16,000-character lines): with fewer pieces than this, seeking each is the cheaper way.
_SOUGHT_PIECES = 256


@dataclass(frozen=True)
class Program:
    """A regex as re's compiler leaves it for the C engine: the engine's code words, its flags and its
    groups. Making a compiled regex from this costs about 10 µs, against 0.1 ms or more to parse and
    compile the pattern (re's parser and compiler are pure Python), so the KB's index keeps each regex's
    program and a paste that tries thousands of a team KB's regexes compiles none.

    The code is the engine's own and changes between Python versions (`ENGINE`): the index is built
    again for each. It is stored with a checksum of itself and its pattern, so that a program damaged,
    or taken for another pattern, is refused and the pattern compiled instead."""

    flags: int
    groups: int
    code: str  # the checksum, then the code words, compressed, in base64: as the index writes it
    groupindex: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, pattern: str, flags: int, groups: int, code: list[int], groupindex: dict[str, int]) -> Program:
        words = array(_CODE or "I", code).tobytes()
        packed = zlib.compress(_checksum(pattern, words) + words, 1)  # a quarter of the size, 10 µs to unpack
        return cls(flags, groups, binascii.b2a_base64(packed, newline=False).decode("ascii"), groupindex)

    def compiled(self, pattern: str) -> re.Pattern[str]:
        """Raises ValueError (binascii.Error too) or zlib.error for a program that is not this pattern's,
        and RuntimeError for code this engine refuses."""
        packed = zlib.decompress(binascii.a2b_base64(self.code))
        words = packed[4:]
        if packed[:4] != _checksum(pattern, words):
            raise ValueError("damaged, or the program of another pattern")
        indexgroup: list[str | None] = [None] * (self.groups + 1)
        for name, number in self.groupindex.items():
            indexgroup[number] = name
        code = array(_CODE or "I", words).tolist()
        return _sre.compile(pattern, self.flags, code, self.groups, self.groupindex, tuple(indexgroup))  # type: ignore[no-any-return]

    def to_json(self) -> list[Any]:
        written = [self.flags, self.groups, self.code]
        return [*written, self.groupindex] if self.groupindex else written


@dataclass(frozen=True)
class Analysis:
    """What one parse of a regex tells: what its matches hold (`needs`), whether it nests an unbounded
    repeat in another (`(a+)+`, the shape that backtracks without end on text that almost matches), and
    its `Program` (None where this Python's engine takes code words no array holds)."""

    needs: Needs
    nests_repeats: bool
    program: Program | None = None


def tree(pattern: str) -> Any:
    """`pattern` as re's own parser reads it (raises `re.error` as `re.compile` does)."""
    return _sre_parser.parse(pattern)


@lru_cache(maxsize=1 << 18)
def analyse(pattern: str) -> Analysis:
    """`pattern` parsed once, and compiled from that parse so that it raises what `re.compile` raises
    (`re.error`, `OverflowError`, `RecursionError`). Parsing is most of what a KB costs to load (Python's
    regex parser is pure Python, about 0.2 ms a pattern), and validating an entry, indexing its
    signatures and indexing its rules each need it: remembered here, each pattern is parsed once."""
    parsed = tree(pattern)
    program = _program(pattern, parsed)
    found = _conjunction(parsed.data)
    kept = [alternatives for alternatives in found if not any(other < alternatives for other in found)]
    needed = tuple(sorted(tuple(sorted(alternatives)) for alternatives in set(kept)))
    return Analysis(needed, _repeats_a_repetition(parsed.data), program)


def _checksum(pattern: str, words: bytes) -> bytes:
    return zlib.crc32(words, zlib.crc32(pattern.encode("utf-8", "surrogatepass"))).to_bytes(4, "little")


def _program(pattern: str, parsed: Any) -> Program | None:
    """What `re.compile` does after parsing (re._compiler.compile), keeping the code it hands the engine;
    the engine's checks run as they do there."""
    code = _sre_compiler._code(parsed, 0)
    state = parsed.state
    groupindex = dict(state.groupdict)
    indexgroup: list[str | None] = [None] * state.groups
    for name, number in groupindex.items():
        indexgroup[number] = name
    _sre.compile(None, state.flags, code, state.groups - 1, groupindex, tuple(indexgroup))
    if _CODE is None:
        return None
    return Program.of(pattern, state.flags, state.groups - 1, code, groupindex)


def needs(pattern: str) -> Needs:
    """What every match of `pattern` holds, whatever its case flags; `()` when nothing is certain, and
    the pattern is then always tried."""
    try:
        return analyse(pattern).needs
    except Exception:  # re's parser is private: an analysis we cannot make leaves the regex always tried
        return ()


def _conjunction(items: Iterable[tuple[object, object]]) -> list[frozenset[str]]:
    """The sets a run of items needs: its runs of literals, and what its groups, repeats and branches need."""
    found: list[frozenset[str]] = []
    run: list[str] = []
    for op, arg in items:
        if op is _LITERAL:
            run.append(chr(arg).lower())  # type: ignore[call-overload,arg-type]
            continue
        if run:
            found.append(frozenset(("".join(run),)))
            run = []
        if op is _SUBPATTERN:
            found += _conjunction(arg[-1].data)  # type: ignore[index]
        elif op is _ATOMIC_GROUP:
            found += _conjunction(arg.data)  # type: ignore[attr-defined]
        elif op in _REPEATS and arg[0] >= 1:  # type: ignore[index]
            found += _conjunction(arg[2].data)  # type: ignore[index]
        elif op is _BRANCH:
            # Any branch may match: each must name a set, and their union is what the branch needs.
            alternatives = [max(_conjunction(branch.data), key=_rank, default=None) for branch in arg[1]]  # type: ignore[index]
            if all(alternatives):
                found.append(frozenset().union(*alternatives))  # type: ignore[arg-type]
    if run:
        found.append(frozenset(("".join(run),)))
    return found


def _rank(alternatives: frozenset[str]) -> tuple[int, int]:
    """Longer literals pass fewer texts; of equal length, fewer alternatives do."""
    return min(len(s) for s in alternatives), -len(alternatives)


_UNBOUNDED = 64  # a repeat allowed more times than this counts as unbounded for backtracking


def _repeats_a_repetition(items: Any, inside: bool = False) -> bool:
    """An unbounded repeat inside another. Bounded outer repeats (`(?:\\s+\\w+){0,3}`) cost a small
    power of the length and are allowed."""
    for op, value in items:
        if op in _REPEATS:
            _, most, body = value
            unbounded = most == _sre_constants.MAXREPEAT or most > _UNBOUNDED
            if (inside and unbounded) or _repeats_a_repetition(body, inside or unbounded):
                return True
        elif op is _SUBPATTERN:
            if _repeats_a_repetition(value[-1], inside):
                return True
        elif op is _BRANCH:
            if any(_repeats_a_repetition(branch, inside) for branch in value[1]):
                return True
        elif op in _ASSERTS and _repeats_a_repetition(value[1], inside):
            return True
    return False


def holds(needed: Needs, lowered: str) -> bool:
    return all(any(literal in lowered for literal in alternatives) for alternatives in needed)


_COMPILED: dict[tuple[str, bool], re.Pattern[str]] = {}  # entries that share a signature compile it once


@dataclass
class Regex:
    """A regex compiled on first use, with what it needs (`needs()`)."""

    pattern: str
    needs: Needs
    owner: str | None = None  # the file of the team entry that wrote it: run under a time bound (`Bounded`)
    program: Program | None = field(default=None, repr=False, compare=False)  # made by `re`: not for an owner's
    _compiled: dict[bool, Searcher] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, pattern: str, owner: str | None = None) -> Regex:
        try:
            found = analyse(pattern)
        except Exception:  # as in `needs`: the regex is then always tried, and compiled from its pattern
            return cls(pattern, (), owner)
        return cls(pattern, found.needs, owner, found.program if owner is None else None)

    def may_match(self, lowered: str) -> bool:
        return holds(self.needs, lowered)

    def compiled(self, *, ignore_case: bool = False) -> Searcher:
        found = self._compiled.get(ignore_case)
        if found is None:
            if self.owner is not None:
                found = Bounded(self.pattern, self.owner, ignore_case=ignore_case)
            else:
                key = (self.pattern, ignore_case)
                found = _COMPILED.get(key)
                if found is None:
                    found = _COMPILED[key] = self._made(ignore_case)
            self._compiled[ignore_case] = found
        return found

    def _made(self, ignore_case: bool) -> re.Pattern[str]:
        if self.program is not None and not ignore_case:
            try:
                return self.program.compiled(self.pattern)
            except (RuntimeError, TypeError, ValueError, zlib.error):  # not this pattern's, or refused
                pass
        return re.compile(self.pattern, re.IGNORECASE if ignore_case else 0)

    def to_json(self) -> list[Any]:
        needed = [list(alternatives) for alternatives in self.needs]
        if self.program is not None:
            return [self.pattern, needed, self.owner, self.program.to_json()]
        return [self.pattern, needed] if self.owner is None else [self.pattern, needed, self.owner]

    @classmethod
    def from_json(cls, value: list[Any]) -> Regex:
        pattern, needed, *rest = value
        owner = rest[0] if rest else None
        program = Program(*rest[1]) if len(rest) > 1 else None
        return cls(pattern, tuple(map(tuple, needed)), owner, program)


class Searcher(Protocol):
    """What matching asks of a compiled regex: `re.Pattern`, or `Bounded` for a team's."""

    def search(self, string: str, pos: int = 0) -> Any: ...  # a match object, or None

    def fullmatch(self, string: str) -> Any: ...


BOUND_S = 0.25  # a team entry's regexes' time on one input, all their searches together; a sound one takes µs
_SLOW: dict[str, str] = {}  # owner -> the pattern that ran out of time: the entry's regexes are skipped from then on


@dataclass
class Reading:
    """One input's account of the team regexes: the time each entry's have spent on it, and the entries
    skipped while reading it (each with the regex that ran out), for the user to be told."""

    spent: dict[str, float] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)


_READING: ContextVar[Reading | None] = ContextVar("fixer_regex_reading", default=None)


class Bounded:
    """A team entry's regex, run under a time bound. The loader refuses nested repeats, but a pattern
    can be slow without them (`(.*a){12}$`, `.*,.*,.*,.*,.*;`), and one careless entry must not stop
    every user of that team's KB. The `regex` module (re's syntax, with a timeout that holds in any
    thread and on any system) runs it. An entry's regexes share BOUND_S on one input; once they have
    used it, the entry's regexes are skipped for the rest of the process, and each input's `Reading`
    names the entries skipped on it, with the regex that ran out. The built-in KB's regexes stay with
    `re`: CI times them on hostile text."""

    def __init__(self, pattern: str, owner: str, *, ignore_case: bool) -> None:
        import regex as engine

        self.pattern = pattern
        self.owner = owner
        try:
            self._compiled: Any = engine.compile(pattern, engine.IGNORECASE if ignore_case else 0)
        except engine.error:  # re compiled it when the entry was read; `regex` differs at the edges
            self._compiled = None
            _SLOW[owner] = pattern

    def search(self, string: str, pos: int = 0) -> Any:
        return self._run("search", string, pos)

    def fullmatch(self, string: str) -> Any:
        return self._run("fullmatch", string)

    def _run(self, method: str, *args: object) -> Any:
        reading = _READING.get() or Reading()  # outside `one_input`, each search has the whole bound
        if self._compiled is None or self.owner in _SLOW:
            reading.skipped[self.owner] = _SLOW.get(self.owner, self.pattern)
            return None
        left = BOUND_S - reading.spent.get(self.owner, 0.0)
        start = time.perf_counter()
        try:
            if left <= 0:
                raise TimeoutError
            return getattr(self._compiled, method)(*args, timeout=left)
        except TimeoutError:
            _SLOW[self.owner] = reading.skipped[self.owner] = self.pattern
            return None
        finally:
            reading.spent[self.owner] = reading.spent.get(self.owner, 0.0) + time.perf_counter() - start


def runs_out(pattern: str, texts: Iterable[str]) -> bool:
    """Whether a team regex uses up its bound searching these texts, as `Bounded` would at run time;
    for `fixer kb lint`, which warns before any user meets the skip."""
    import regex as engine

    deadline = time.perf_counter() + BOUND_S
    compiled = engine.compile(pattern)
    try:
        for text in texts:
            compiled.search(text, timeout=max(deadline - time.perf_counter(), 0.001))
    except TimeoutError:
        return True
    return time.perf_counter() > deadline


@contextmanager
def one_input() -> Iterator[Reading]:
    """Each team entry's time bound counts over what is done inside: the reading and ranking of one
    input; what it yields says, once done, which entries were skipped on it."""
    reading = Reading()
    token = _READING.set(reading)
    try:
        yield reading
    finally:
        _READING.reset(token)


def slow_notice(owner: str, pattern: str) -> str:
    """How a skipped team regex is named to the user: one line, the entry's file and the pattern."""
    shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
    return (
        f"skipped the team entry {owner}: its regex {shown!r} took over {BOUND_S} s on one input "
        "(fix it there; the other entries still answered)"
    )


@dataclass(frozen=True)
class Groups:
    """Many short lists kept as one flat list and where each starts (a CSR layout): read from JSON as two
    lists, not as thousands."""

    starts: Sequence[int]  # one more than there are groups: where each starts, then the end
    items: Sequence[int]

    @classmethod
    def of(cls, groups: Iterable[Sequence[int]]) -> Groups:
        starts = [0]
        items: list[int] = []
        for group in groups:
            items += group
            starts.append(len(items))
        return cls(starts, items)

    def __getitem__(self, number: int) -> Sequence[int]:
        return self.items[self.starts[number] : self.starts[number + 1]]

    def __len__(self) -> int:
        return len(self.starts) - 1


@dataclass(frozen=True)
class LiteralIndex:
    """Which of many items (each with its `Needs`) a text may match, without looking at the others.

    Each item is filed under one of its sets, the one whose strings the fewest items share; each string
    is found through its rarest three-character piece. A text then costs one look-up per character
    plus the items filed under the strings it holds, however many items there are; an index of few
    pieces (the built-in KB's) seeks each piece in the text instead, in C. Its fields are
    plain lists, as JSON gives them back: the KB index reads one in a single `json.loads`."""

    windows: Sequence[str]  # the strings items are filed under, cut to a window around their rarest piece
    starts: Sequence[int]  # where that piece starts in each window
    filed: Groups  # per window, the items filed under it
    pieces: Mapping[str, Sequence[int]]  # piece -> the windows found through it
    short: Sequence[int]  # the windows shorter than a piece: tested one by one
    always: Sequence[int]  # the items that need nothing: tried on every text

    @classmethod
    def build(cls, needed: Sequence[Needs]) -> LiteralIndex:
        sharing = Counter(literal for item in needed for literal in {s for a in item for s in a})
        filed: dict[str, list[int]] = {}
        always = []
        for number, item in enumerate(needed):
            if not item:
                always.append(number)
                continue
            key = min(item, key=lambda a: (sum(sharing[s] for s in a), -min(map(len, a)), a))
            for literal in key:
                filed.setdefault(literal, []).append(number)
        used = Counter(literal[i : i + _GRAM] for literal in filed for i in range(len(literal) - _GRAM + 1))
        windows: dict[tuple[str, int], set[int]] = {}
        for literal, items in filed.items():
            # A part of a string a match holds is held too: a window around the rarest piece stands for
            # the whole string, and keeps the index small however long the KB's literals are.
            start = min(range(max(1, len(literal) - _GRAM + 1)), key=lambda i: (used[literal[i : i + _GRAM]], i))
            begin = max(0, min(start - (_WINDOW - _GRAM) // 2, len(literal) - _WINDOW))
            windows.setdefault((literal[begin : begin + _WINDOW], start - begin), set()).update(items)
        ordered = sorted(windows.items())
        pieces: dict[str, list[int]] = {}
        short = []
        for number, ((window, start), _) in enumerate(ordered):
            if len(window) < _GRAM:
                short.append(number)
            else:
                pieces.setdefault(window[start : start + _GRAM], []).append(number)
        return cls(
            windows=[window for (window, _), _ in ordered],
            starts=[start for (_, start), _ in ordered],
            filed=Groups.of(sorted(members) for _, members in ordered),
            pieces=pieces,
            short=short,
            always=always,
        )

    def candidates(self, lowered: str) -> list[int]:
        """The items, in order, that `lowered` (a lowercased text) may match: a superset of those it does."""
        windows, starts, pieces = self.windows, self.starts, self.pieces
        held = {n for n in self.short if windows[n] in lowered}
        if len(pieces) <= _SOUGHT_PIECES:
            held.update(n for piece, ns in pieces.items() if piece in lowered for n in ns if windows[n] in lowered)
        else:
            for i in range(len(lowered) - _GRAM + 1):
                for n in pieces.get(lowered[i : i + _GRAM], ()):
                    start = starts[n]
                    if i >= start and lowered.startswith(windows[n], i - start):
                        held.add(n)
        items = set(self.always)
        for n in held:
            items.update(self.filed[n])
        return sorted(items)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> LiteralIndex:
        return cls(**{**value, "filed": Groups(**value["filed"])})


class AnyOf:
    """Regexes searched as their alternation `(?:a)|(?:b)|...` would be, in their order, but each tried
    only on a text that holds what it needs: the leftmost match wins, and of two at one place, the
    earlier regex's. `regexes` may be a lazy sequence (the KB index reads a pattern when it is needed)."""

    def __init__(self, regexes: Sequence[Regex], index: LiteralIndex | None = None) -> None:
        self.regexes = regexes
        self.index = index if index is not None else LiteralIndex.build([r.needs for r in regexes])

    @property
    def pattern(self) -> str:
        """The alternation itself, for a reader (the site's paste box) that takes one regex."""
        return "|".join(f"(?:{regex.pattern})" for regex in self.regexes) or "(?!)"

    def candidates(self, lowered: str) -> list[int]:
        """The regexes that may match `lowered`, by number: every one that holds what it needs."""
        return [n for n in self.index.candidates(lowered) if self.regexes[n].may_match(lowered)]

    def search(self, text: str, pos: int = 0, *, ignore_case: bool = False) -> re.Match[str] | None:
        return _leftmost(self._compiled(text, ignore_case), text, pos)

    def holds_any(self, text: str) -> bool:
        """Whether any regex matches: `search` without finding which match is leftmost, so it stops at the
        first regex that matches (a KB that says one message many times has many that do)."""
        lowered = text.lower()
        return any(
            regex.may_match(lowered) and regex.compiled(ignore_case=False).search(text)
            for regex in (self.regexes[n] for n in self.index.candidates(lowered))
        )

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """As the alternation's `finditer`; the text is looked up in the index once, not once per match."""
        compiled = self._compiled(text, ignore_case=False)
        pos = 0
        while pos <= len(text) and (found := _leftmost(compiled, text, pos)):
            yield found
            pos = found.end() if found.end() > found.start() else found.end() + 1

    def _compiled(self, text: str, ignore_case: bool) -> list[Searcher]:
        return [self.regexes[n].compiled(ignore_case=ignore_case) for n in self.candidates(text.lower())]


def _leftmost(compiled: Iterable[Searcher], text: str, pos: int) -> re.Match[str] | None:
    """The match an alternation of `compiled` finds: the leftmost, and of two at one place the earlier's."""
    return min(
        (hit for regex in compiled if (hit := regex.search(text, pos))), key=lambda hit: hit.start(), default=None
    )


def cover(needed: Iterable[Needs], seeds: Sequence[str] = (), length: int = 7) -> re.Pattern[str] | None:
    """A few lowercase words, searched at once in a lowercased text, one of which every text that some
    item matches holds: a gate that a log's lines pass before the items themselves are sought. It is
    derived from the items, so a team's own messages pass it too; `seeds` are words to use first (common
    in errors, rare in progress lines), the rest are pieces of `length` characters chosen greedily. None
    when an item needs nothing: no gate can stand before it.

    An item is covered by a word that every string of one of its tuples holds (the text holds one of
    them); a tuple with no such word is covered by all of its strings at once."""
    options: list[set[str]] = []
    chosen = list(seeds)
    for item in needed:
        if not item:
            return None
        words = {word for strings in item for word in _common_words(strings, length)}
        if not words:
            fewest: tuple[str, ...] = min(item, key=len)
            chosen.extend(fewest)
        options.append(words)
    uncovered = [n for n, words in enumerate(options) if words and not any(c in w for w in words for c in chosen)]
    while uncovered:
        counts = Counter(word for n in uncovered for word in options[n])
        word = max(counts, key=lambda w: (counts[w], w))
        chosen.append(word)
        uncovered = [n for n in uncovered if word not in options[n]]
    return re.compile("|".join(re.escape(w) for w in dict.fromkeys(chosen)))


def _common_words(strings: tuple[str, ...], length: int) -> set[str]:
    """The pieces of `length` characters (or the whole string, when shorter) that every string holds."""
    shortest = min(strings, key=len)
    words = {shortest[i : i + length] for i in range(len(shortest) - length + 1)} or {shortest}
    return {w for w in words if all(w in s for s in strings)}


def known_messages(patterns: Iterable[tuple[str, str | None]]) -> AnyOf:
    """The KB's signatures as one search, each once, in a stable order: (pattern, owner) pairs, where a
    pattern the built-in KB has too is the built-in one, run without a bound."""
    owners: dict[str, str | None] = {}
    for pattern, owner in patterns:
        if owners.get(pattern, "") is not None:
            owners[pattern] = owner
    return AnyOf([Regex.of(pattern, owners[pattern]) for pattern in sorted(owners)])


__all__ = [
    "AnyOf",
    "Bounded",
    "Groups",
    "LiteralIndex",
    "Needs",
    "Regex",
    "cover",
    "holds",
    "known_messages",
    "needs",
    "one_input",
    "runs_out",
    "slow_notice",
]
