"""The matcher's data as JSON, for the site's paste-your-traceback box (docs/javascripts/fixer-match.js).

Everything the browser needs to rank entries the way `fixer explain` does is read here from the Python
objects themselves: the entries' signatures and evidence rules, their examples already parsed and
normalised, the scoring constants, and every regex the parser, the evidence extraction and the
normalisation use. Python's regex dialect is translated to JavaScript's (`u` flag) by `to_js`, which
raises `UntranslatableRegex` for anything it cannot render faithfully, so a KB pattern the browser
would misread fails the build and the tests instead of silently ranking differently.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Any

from fixer.explain import evidence as _evidence
from fixer.explain import libraries as _libraries
from fixer.explain import match as _match
from fixer.explain import narrow as _narrow
from fixer.explain import normalise as _normalise
from fixer.explain import parse as _parse
from fixer.explain import priors as _priors
from fixer.explain import read as _read
from fixer.explain import tolerant as _tolerant
from fixer.kb import index as _index
from fixer.kb.catalog import Catalog
from fixer.kb.schema import Entry

FORMAT = 1

# JavaScript stand-ins for Python's Unicode-aware classes (str patterns are Unicode in Python).
_WORD = r"\p{L}\p{N}_"
_DIGIT = r"\p{Nd}"
_SYNTAX = set("^$\\.*+?()[]{}|/")
_QUANTIFIER = re.compile(r"\{(\d*)(?:(,)(\d*))?\}")


class UntranslatableRegex(ValueError):
    """A Python regex construct with no faithful JavaScript rendering."""


@lru_cache(maxsize=1)
def _space_ranges() -> str:
    """Python's `\\s` as explicit ranges: JavaScript's `\\s` differs (U+FEFF in, U+001C-U+001F out)."""
    return _ranges(c for c in range(sys.maxunicode + 1) if chr(c).isspace())


def _ranges(codes: Iterable[int]) -> str:
    ordered = sorted(set(codes))
    parts: list[str] = []
    start = prev = -2
    for code in [*ordered, -10]:
        if code == prev + 1:
            prev = code
            continue
        if start >= 0:
            parts.append(_char(start) if start == prev else f"{_char(start)}-{_char(prev)}")
        start = prev = code
    return "".join(parts)


def _char(code: int) -> str:
    return f"\\u{{{code:x}}}"


@lru_cache(maxsize=1)
def _case_index() -> dict[str, set[str]]:
    """Characters grouped by each of their case mappings, to find a letter's case variants quickly."""
    index: dict[str, set[str]] = {}
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        for key in {char.casefold(), char.lower(), char.upper()}:
            index.setdefault(key, set()).add(char)
    return index


@lru_cache(maxsize=128)
def _case_variants(letter: str) -> str:
    """Every character Python's IGNORECASE lets `letter` match (`k` also matches the Kelvin sign)."""
    index = _case_index()
    candidates = {letter, "\u017f", "\u212a", "\u0130", "\u0131", "\u1e9e", "\u2126"}
    for key in {letter.casefold(), letter.lower(), letter.upper()}:
        candidates |= index.get(key, set())
    pattern = re.compile(re.escape(letter), re.I)
    return "".join(sorted(c for c in candidates if pattern.fullmatch(c)))


def to_js(pattern: str, flags: int = 0) -> str:
    """`pattern` (a Python regex) as the source of an equivalent JavaScript regex with the `u` flag.

    The result is used without JavaScript's `i`, `m` or `s` flags: Python's flags are rendered inline
    (`.` under DOTALL, `^`/`$` under MULTILINE, letters under IGNORECASE).
    """
    return _Translator(pattern, flags).run()


class _Translator:
    def __init__(self, pattern: str, flags: int) -> None:
        self.src = pattern
        self.i = 0
        self.out: list[str] = []
        self.dotall = bool(flags & re.S)
        self.multiline = bool(flags & re.M)
        self.ignorecase = bool(flags & re.I)
        if flags & ~(re.S | re.M | re.I | re.U):
            raise UntranslatableRegex(f"unsupported flags {flags!r} for {pattern!r}")
        # one entry per open group: the (dotall, ignorecase) state to restore at its `)`
        self.groups: list[tuple[bool, bool]] = []

    def fail(self, why: str) -> UntranslatableRegex:
        return UntranslatableRegex(f"{why} at offset {self.i} of {self.src!r}")

    def run(self) -> str:
        try:
            re.compile(self.src)
        except re.error as exc:
            raise UntranslatableRegex(f"{self.src!r} is not a valid Python regex: {exc}") from None
        self._global_flags()
        while self.i < len(self.src):
            self._step()
        if self.groups:
            raise self.fail("unbalanced group")
        return "".join(self.out)

    def _global_flags(self) -> None:
        found = re.match(r"\(\?([aiLmsux]+)\)", self.src)
        if found:
            self._set_flags(found.group(1), on=True)
            self.i = found.end()

    def _set_flags(self, letters: str, *, on: bool) -> None:
        for letter in letters:
            if letter == "s":
                self.dotall = on
            elif letter == "i":
                self.ignorecase = on
            elif letter == "m" and on:
                self.multiline = True
            elif letter != "u":
                raise self.fail(f"inline flag {letter!r}")

    def _step(self) -> None:
        c = self.src[self.i]
        if c == "\\":
            self.out.append(self._escape(in_class=False))
        elif c == "[":
            self._char_class()
        elif c == "(":
            self._open_group()
        elif c == ")":
            if not self.groups:
                raise self.fail("unbalanced )")
            self.dotall, self.ignorecase = self.groups.pop()
            self.out.append(")")
            self.i += 1
        elif c == ".":
            self.out.append(r"[\s\S]" if self.dotall else r"[^\n]")
            self.i += 1
        elif c == "^":
            self.out.append(r"(?<![^\n])" if self.multiline else "^")
            self.i += 1
        elif c == "$":
            self.out.append(r"(?![^\n])" if self.multiline else r"(?=\n?$)")
            self.i += 1
        elif c in "*+?":
            self.out.append(c)
            self.i += 1
            self._lazy_or_possessive()
        elif c == "{":
            self._brace()
        elif c == "|":
            self.out.append("|")
            self.i += 1
        elif c in "]}":
            self.out.append("\\" + c)
            self.i += 1
        else:
            self.out.append(self._literal(c, in_class=False))
            self.i += 1

    def _lazy_or_possessive(self) -> None:
        if self.i < len(self.src) and self.src[self.i] == "?":
            self.out.append("?")
            self.i += 1
        elif self.i < len(self.src) and self.src[self.i] == "+":
            raise self.fail("possessive quantifier")

    def _brace(self) -> None:
        found = _QUANTIFIER.match(self.src, self.i)
        if not found or found.group(0) == "{}":  # Python reads `{}` (and `{` with no closing) literally
            self.out.append(r"\{")
            self.i += 1
            return
        low, comma, high = found.group(1) or "0", found.group(2) or "", found.group(3) or ""
        self.out.append(f"{{{low}{comma}{high}}}")
        self.i = found.end()
        self._lazy_or_possessive()

    def _literal(self, c: str, *, in_class: bool) -> str:
        if self.ignorecase and c.isalpha():
            variants = _case_variants(c)
            if len(variants) > 1:
                body = "".join(_char(ord(v)) for v in variants)
                return body if in_class else f"[{body}]"
        if c in _SYNTAX or (in_class and c == "-"):
            return "\\" + c
        return c

    def _escape(self, *, in_class: bool) -> str:
        if self.i + 1 >= len(self.src):
            raise self.fail("trailing backslash")
        c = self.src[self.i + 1]
        self.i += 2
        simple = {"n": r"\n", "t": r"\t", "r": r"\r", "f": r"\f", "v": r"\v", "a": r"\x07"}
        if c in simple:
            return simple[c]
        if c == "d":
            return _DIGIT
        if c == "D":
            return r"\P{Nd}"
        if c == "w":
            return _WORD if in_class else f"[{_WORD}]"
        if c == "s":
            return _space_ranges() if in_class else f"[{_space_ranges()}]"
        if in_class:
            if c == "b":
                return r"\x08"
            if c in "WSAZB" or c.isdigit():
                raise self.fail(f"\\{c} inside a character class")
        elif c in "WS":
            return f"[^{_WORD}]" if c == "W" else f"[^{_space_ranges()}]"
        elif c == "A":
            return "^"
        elif c == "Z":
            return "$"
        elif c in "bB":
            word = f"[{_WORD}]"
            if c == "b":
                return f"(?:(?<={word})(?!{word})|(?<!{word})(?={word}))"
            return f"(?:(?<={word})(?={word})|(?<!{word})(?!{word}))"
        elif c.isdigit():
            if c == "0":
                raise self.fail("octal escape")
            digits = re.match(r"\d{1,2}", self.src[self.i - 1 :])
            assert digits is not None
            self.i += len(digits.group(0)) - 1
            return "\\" + digits.group(0)
        if c in "xuU":
            size = {"x": 2, "u": 4, "U": 8}[c]
            code = self.src[self.i : self.i + size]
            if not re.fullmatch(r"[0-9a-fA-F]+", code) or len(code) != size:
                raise self.fail(f"bad \\{c} escape")
            self.i += size
            return self._literal(chr(int(code, 16)), in_class=in_class)
        if c.isascii() and c.isalnum():
            raise self.fail(f"escape \\{c}")
        return self._literal(c, in_class=in_class)

    def _char_class(self) -> None:
        self.i += 1
        parts = ["["]
        if self.src.startswith("^", self.i):
            parts.append("^")
            self.i += 1
        first = True
        while True:
            if self.i >= len(self.src):
                raise self.fail("unterminated character class")
            c = self.src[self.i]
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if c == "\\":
                parts.append(self._escape(in_class=True))
                continue
            if c == "-" and parts[-1] not in ("[", "^") and self.src[self.i + 1 : self.i + 2] != "]":
                if self.ignorecase:
                    raise self.fail("character range under IGNORECASE")
                parts.append("-")
            elif c == "[":
                parts.append(r"\[")
            else:
                parts.append(self._literal(c, in_class=True))
            self.i += 1
        self.out.append("".join(parts) + "]")

    def _open_group(self) -> None:
        rest = self.src[self.i :]
        saved = (self.dotall, self.ignorecase)
        if not rest.startswith("(?"):
            self.groups.append(saved)
            self.out.append("(")
            self.i += 1
            return
        named = re.match(r"\(\?P<(\w+)>", rest)
        if named:
            self.groups.append(saved)
            self.out.append(f"(?<{named.group(1)}>")
            self.i += named.end()
            return
        reference = re.match(r"\(\?P=(\w+)\)", rest)
        if reference:
            self.out.append(f"\\k<{reference.group(1)}>")
            self.i += reference.end()
            return
        for opener in ("(?:", "(?=", "(?!", "(?<=", "(?<!"):
            if rest.startswith(opener):
                self.groups.append(saved)
                self.out.append(opener)
                self.i += len(opener)
                return
        comment = re.match(r"\(\?#[^)]*\)", rest)
        if comment:
            self.i += comment.end()
            return
        scoped = re.match(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]+))?:", rest)
        if scoped:
            self.groups.append(saved)
            self._set_flags(scoped.group(1), on=True)
            for letter in scoped.group(2) or "":
                if letter not in "si":
                    raise self.fail(f"inline flag -{letter}")
                self._set_flags(letter, on=False)
            self.out.append("(?:")
            self.i += scoped.end()
            return
        raise self.fail("unsupported group")


def _python_regex(pattern: re.Pattern[str]) -> dict[str, str]:
    return {"source": to_js(pattern.pattern, pattern.flags & ~re.U), "python": pattern.pattern}


def _replacement(value: str | Callable[[re.Match[str]], str], pattern: re.Pattern[str]) -> dict[str, Any]:
    if isinstance(value, str):
        if "\\" in value:
            raise UntranslatableRegex(f"replacement template {value!r}")
        return {"text": value}
    if value is _normalise.path_to_placeholder:
        return {"py_path": _python_regex(_normalise._PY_SUFFIX)}
    # The one callable rule turns a device name into its upper-cased kind: prove it on samples.
    for sample in ("cuda:0", "mps", "xla:3", "npu", "hpu:1", "xpu"):
        found = pattern.search(sample)
        if found is None or found.lastindex != 1 or value(found) != f"<{found.group(1).upper()}>":
            raise UntranslatableRegex(f"normalisation rule {pattern.pattern!r}: unknown replacement function")
    return {"upper_group": 1}


def patterns() -> dict[str, Any]:
    """Every regex the parse / evidence / normalise port uses, translated for JavaScript."""
    p = _parse
    return {
        "ansi": _python_regex(_read._ANSI),
        "ansi_leftover": _python_regex(_read._ANSI_LEFTOVER),
        "rank_prefix": _python_regex(p._RANK_PREFIX),
        "traceback_header": _python_regex(p._TRACEBACK_HEADER),
        "chain_separator": _python_regex(p._CHAIN_SEPARATOR),
        "frame_shapes": [_python_regex(shape) for shape in p._FRAME_SHAPES],
        "frame": _python_regex(p._FRAME),
        "ipy_arrow": _python_regex(p._IPY_ARROW),
        "ipy_context": _python_regex(p._IPY_CONTEXT),
        "carets": _python_regex(p._CARETS),
        "exception_line": _python_regex(p._EXCEPTION_LINE),
        "from_user_code": _python_regex(p._FROM_USER_CODE),
        "type_before": _python_regex(p._TYPE_BEFORE),
        "typed_line": _python_regex(p._TYPED_LINE),
        "tolerant_word": _python_regex(_tolerant._WORD),
        "tolerant_type_prefix": _python_regex(_tolerant._TYPE_PREFIX),
        "link": _python_regex(_read._LINK),
        "numbered_link": _python_regex(_read._NUMBERED_LINK),
        "file_header": _python_regex(_read._FILE_HEADER),
        "file_name": _python_regex(_read._FILE_NAME),
        "quote_marks": [_python_regex(mark) for mark in _read._QUOTE_MARKS],
        "log_prefix": _python_regex(_read._LOG_PREFIX),
        "traceback_line": _python_regex(_read._TRACEBACK_LINE),
        "frame_header": _python_regex(_read._FRAME_HEADER),
        "header_begun": _python_regex(_read._HEADER_BEGUN),
        "header_whole": _python_regex(_read._HEADER_WHOLE),
        "exception_start": _python_regex(_read._EXCEPTION_START),
        "line_prefix": _python_regex(_read._LINE_PREFIX),
        "starts_its_own": _python_regex(_read._STARTS_ITS_OWN),
        "header_start": _python_regex(_read._HEADER_START),
        "ruler": _python_regex(_read._RULER),
        "box_top": _python_regex(_read._BOX_TOP),
        "box_bottom": _python_regex(_read._BOX_BOTTOM),
        "box_row": _python_regex(_read._BOX_ROW),
        "box_source": _python_regex(_read._BOX_SOURCE),
        "box_frame": _python_regex(_read._BOX_FRAME),
        "box_line_end": _python_regex(_read._LINE_END),
        "sentence_end": _python_regex(p._SENTENCE_END),
        "goes_on": _python_regex(p._GOES_ON),
        "repeated": _python_regex(p._REPEATED),
        "log_line": _python_regex(p._LOG_LINE),
        "install_root": _python_regex(_libraries._INSTALL_ROOT),
        "torch_source": _python_regex(_libraries._TORCH_SOURCE),
        "torch_checkout": _python_regex(_libraries._TORCH_CHECKOUT),
        "stdlib": _python_regex(_libraries._STDLIB),
        "device_token": _python_regex(_evidence._DEVICE_TOKEN),
        "shapes": [_python_regex(re.compile(shape, re.S)) for shape in _evidence._SHAPES],
        "op_wrapper": _python_regex(_evidence._OP_WRAPPER),
        "op_legacy": _python_regex(_evidence._OP_LEGACY),
        "normalise": [
            {**_python_regex(pattern), "replacement": _replacement(value, pattern)}
            for pattern, value in _normalise._RULES
        ],
        "space": {"source": f"[{_space_ranges()}]"},
        "space_before_punctuation": _python_regex(_priors._SPACE_BEFORE_PUNCTUATION),
        "type_prefix": _python_regex(_priors._TYPE_PREFIX),
        "accelerators": _python_regex(_priors._ACCELERATORS),
        "checking_clause": _python_regex(_priors._CHECKING_CLAUSE),
        "since_2_8": _python_regex(_priors._SINCE_2_8),
        "device_words": _python_regex(_match._DEVICE_WORDS),
    }


def _entry(entry: Entry, compiled: Any, url: str) -> dict[str, Any]:
    rules = []
    for rule in entry.evidence:
        when = rule.when.model_dump(exclude_none=True)
        # Detectors are Python that reads code; the page ranks on the text alone, where such a rule never holds.
        browser_only = {name: value for name, value in when.items() if name not in _CODE_FIELDS}
        regexes = {name: to_js(value) for name, value in browser_only.items() if name in _index.REGEX_FIELDS}
        rules.append(
            {
                "when": {**browser_only, **regexes},
                "needs_code": bool(_CODE_FIELDS.intersection(when)),
                "weight": rule.weight,
                "because": rule.because,
            }
        )
    return {
        "id": entry.id,
        "title": entry.title,
        "summary": entry.summary,
        "url": url,
        "signatures": [
            {
                "pattern": to_js(s.pattern.pattern),
                "exception": to_js(s.exception) if s.exception else None,
                "weight": s.weight,
                "source": s.source,
            }
            for s in compiled.signatures
        ],
        "rules": rules,
        "examples": [
            {"message": known.message, "kinds": list(known.kinds), "source": known.source}
            for known in compiled.examples
        ],
        "facts": [[fact, chance] for fact, chance in compiled.card.facts],
    }


_CODE_FIELDS = frozenset({"detector"})


def matcher_data(catalog: Catalog, urls: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The JSON-able data `fixer-match.js` ranks with; same catalog, same ranking as `Matcher`. `urls`:
    each entry page's address in the built site (from its root), as the site's build lays pages out."""
    matcher = _match.Matcher(catalog)
    return {
        "format": FORMAT,
        "normalise_version": _normalise.VERSION,
        "constants": {
            "SIMILARITY_POINTS": _match.SIMILARITY_POINTS,
            "SIMILARITY_FLOOR": _match.SIMILARITY_FLOOR,
            "SIMILARITY_TIE": _match.SIMILARITY_TIE,
            "RESEMBLANCE": _match.RESEMBLANCE,
            "CUT_MINIMUM": _priors.CUT_MINIMUM,
            "PRIOR_POINTS": _priors.PRIOR_POINTS,
            "FRAMES_ALONE": _match.FRAMES_ALONE,
            "MAX_MESSAGE_LINES": _parse._MAX_MESSAGE_LINES,
            "MAX_MESSAGE_CHARS": _parse.MAX_MESSAGE_CHARS,
            "WRAP_WIDTH_MIN": _read._WRAP_WIDTH_MIN,
            "WRAPPED_MIN": _parse._WRAPPED_MIN,
            "WRAPPED_MAX": _parse._WRAPPED_MAX,
            "WRAP_SPAN": _parse._WRAP_SPAN,
            "HEADER_ROWS": _read._HEADER_ROWS,
            "MAX_CODE_CHARS": _parse.MAX_CODE_CHARS,
            "CONTINUED_LINES": _parse._CONTINUED_LINES,
            "MARGIN": _narrow.MARGIN,
            "TEMPERATURE": _narrow.TEMPERATURE,
            "BEYOND": _narrow.BEYOND,
            "RULED_OUT": _narrow.RULED_OUT,
            "WORTH": _narrow.WORTH,
            "HOLE": _tolerant.HOLE,
            "HOLE_SPAN": _tolerant.HOLE_SPAN,
            "MIN_WORDS": _tolerant.MIN_WORDS,
            "MAX_COST": _tolerant.MAX_COST,
            "TYPO": _tolerant.TYPO,
            "CONTENT_SHARED": _tolerant.CONTENT_SHARED,
            "TOLERANCE_COST": _match.TOLERANCE_COST,
            "INEXACT_CEILING": _match.INEXACT_CEILING,
            "NEAREST": _match.NEAREST,
            "NEAREST_POINTS": _match.NEAREST_POINTS,
            "TOLERANT_LINES": _parse._TOLERANT_LINES,
        },
        "questions": [
            {
                "fact": q.fact,
                "ask": q.ask,
                "check": q.check,
                "base": q.base,
                "known": q.known,
                "shown": [to_js(r.pattern) for r in q.shown],
                "frames": [to_js(r.pattern) for r in q.frames],
            }
            for q in matcher.index.facts
            if q.asked  # the paste box reads no project, which is all a fact not asked is for
        ],
        "torch_subpackages": sorted(_libraries._TORCH_SUBPACKAGES),
        "patterns": patterns(),
        "known_messages": to_js(catalog.known_messages.pattern) if len(catalog) else None,
        "wordings": _wordings(matcher.index),
        "outside": [to_js(o.pattern.pattern) for o in matcher.index.outside],
        "priors": {
            key: {cause: vars(prior) for cause, prior in causes.items()}
            for key, causes in _priors.load(catalog.root).items()
        },
        "entries": [
            _entry(c.card.entry, c, (urls or {}).get(c.card.id, f"entries/{c.card.id}/")) for c in matcher.index.entries
        ],
    }


def _wordings(index: Any) -> list[dict[str, Any]]:
    """Each known pattern's readings (its fixed words, each way through its alternatives) and the
    entries whose signature it is, with that signature's weight: what `fixer.explain.tolerant` reads a
    cut or retyped message against."""
    found = []
    for number, regex in enumerate(index.known.regexes):
        bearers = [
            [n, next(s.weight for s in index.entries[n].signatures if s.pattern.pattern == regex.pattern)]
            for n in index.bearers[number]
        ]
        found.append({"readings": [list(r) for r in _tolerant.readings(regex.pattern)], "bearers": bearers})
    return found


__all__ = ["UntranslatableRegex", "matcher_data", "patterns", "to_js"]
