"""Search many regexes without compiling them all: each is compiled the first time a text holds a
literal it cannot match without.

A KB of a few hundred entries holds thousands of regexes; compiling them costs more than the whole
match of one paste, and most of them cannot match it at all (a message about fused Adam shows none of
the words a pinned-memory message needs). So each regex carries the literals it needs, worked out once
from its parse tree, and a text is searched with a regex only when it holds one of them: what RE2's
prefilter and code search's trigram index do, at the scale of a KB.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

_REPEATS = frozenset(("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"))
_GRAM = 3  # literals are looked up by their first three characters


def needs(pattern: str) -> tuple[str, ...]:
    """Lowercased strings of which every match of `pattern` holds at least one (whatever its case
    flags); `()` when no literal is certain, and the pattern is then always tried."""
    try:
        from re import _parser  # type: ignore[attr-defined]  # re.compile's own parser; private: any surprise is caught

        found = _sequence(_parser.parse(pattern).data)
    except Exception:  # an analysis we cannot make leaves the regex always tried
        return ()
    return tuple(sorted(found)) if found else ()


def _sequence(items: Iterable[tuple[object, object]]) -> frozenset[str] | None:
    """The best requirement of a run of items: a run of literals, or a group's, repeat's or branch's."""
    best: frozenset[str] | None = None
    run: list[str] = []

    def consider(candidate: frozenset[str] | None) -> None:
        nonlocal best
        if candidate and (best is None or _rank(candidate) > _rank(best)):
            best = candidate

    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            run.append(chr(arg).lower())  # type: ignore[call-overload,arg-type]
            continue
        if run:
            consider(frozenset(("".join(run),)))
            run = []
        if name == "SUBPATTERN":
            consider(_sequence(arg[-1].data))  # type: ignore[index]
        elif name == "ATOMIC_GROUP":
            consider(_sequence(arg.data))  # type: ignore[attr-defined]
        elif name in _REPEATS and arg[0] >= 1:  # type: ignore[index]
            consider(_sequence(arg[2].data))  # type: ignore[index]
        elif name == "BRANCH":
            alternatives = [_sequence(branch.data) for branch in arg[1]]  # type: ignore[index]
            if all(alternatives):
                consider(frozenset().union(*alternatives))  # type: ignore[arg-type]
    if run:
        consider(frozenset(("".join(run),)))
    return best


def _rank(candidate: frozenset[str]) -> tuple[int, int]:
    """Longer literals pass fewer texts; of equal length, fewer alternatives do."""
    return min(len(s) for s in candidate), -len(candidate)


@dataclass
class Literals:
    """Which of many literals a text holds, in one pass over the text's lowercased characters."""

    by_gram: dict[str, tuple[str, ...]]
    short: tuple[str, ...]  # shorter than a gram: tested one by one

    @classmethod
    def of(cls, literals: Iterable[str]) -> Literals:
        by_gram: dict[str, list[str]] = {}
        short = []
        for literal in sorted(set(literals)):
            if len(literal) < _GRAM:
                short.append(literal)
            else:
                by_gram.setdefault(literal[:_GRAM], []).append(literal)
        return cls({gram: tuple(found) for gram, found in by_gram.items()}, tuple(short))

    def held_by(self, text: str) -> set[str]:
        lowered = text.lower()
        held = {literal for literal in self.short if literal in lowered}
        for start in range(len(lowered) - _GRAM + 1):
            for literal in self.by_gram.get(lowered[start : start + _GRAM], ()):
                if lowered.startswith(literal, start):
                    held.add(literal)
        return held


@dataclass
class Regex:
    """A regex compiled on first use; `needs` as `needs()` gives it."""

    pattern: str
    needs: tuple[str, ...]
    _compiled: dict[bool, re.Pattern[str]] = field(default_factory=dict, repr=False, compare=False)

    def may_match(self, held: set[str]) -> bool:
        return not self.needs or any(literal in held for literal in self.needs)

    def compiled(self, *, ignore_case: bool = False) -> re.Pattern[str]:
        found = self._compiled.get(ignore_case)
        if found is None:
            found = self._compiled[ignore_case] = re.compile(self.pattern, re.IGNORECASE if ignore_case else 0)
        return found


class AnyOf:
    """Regexes searched as their alternation `(?:a)|(?:b)|...` would be, in their order, but each compiled
    only when a text holds one of its literals: the leftmost match wins, and of two at one place, the
    earlier regex's."""

    def __init__(self, regexes: Iterable[Regex]) -> None:
        self.regexes = tuple(regexes)
        self._literals = Literals.of(literal for regex in self.regexes for literal in regex.needs)

    @property
    def pattern(self) -> str:
        """The alternation itself, for a reader (the site's paste box) that takes one regex."""
        return "|".join(f"(?:{regex.pattern})" for regex in self.regexes) or "(?!)"

    def search(self, text: str, pos: int = 0, *, ignore_case: bool = False) -> re.Match[str] | None:
        held = self._literals.held_by(text)
        best: re.Match[str] | None = None
        for regex in self.regexes:
            if not regex.may_match(held):
                continue
            found = regex.compiled(ignore_case=ignore_case).search(text, pos)
            if found and (best is None or found.start() < best.start()):
                best = found
        return best

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        pos = 0
        while pos <= len(text) and (found := self.search(text, pos)):
            yield found
            pos = found.end() if found.end() > found.start() else found.end() + 1


def known_messages(patterns: Iterable[str]) -> AnyOf:
    """The KB's signatures as one search, each once, in a stable order."""
    return AnyOf(Regex(pattern, needs(pattern)) for pattern in sorted(set(patterns)))


__all__ = ["AnyOf", "Literals", "Regex", "known_messages", "needs"]
