"""The KB as the matcher reads it, compiled once and kept on disk: `fixer explain` pays neither for
validating YAML with pydantic nor for analysing regexes, and reads of a large KB only the entries a
paste can match.

An index holds, per entry, what ranking needs (signatures with what each needs, rules, the real
examples' messages already normalised) and a card, what a ranking shows of it; the whole entry is read
from its YAML file only for a view that shows all of it. Beside the entries it keeps what finds them:
the distinct signatures with a `LiteralIndex` over them, every example's message once for one batch
comparison, the priors. On disk that is one file: a first line with those tables, then one line per
entry, read only when a paste needs that entry, so a KB of ten thousand entries costs little more than
one of thirty.

The file is rebuilt when any KB file's size or modification time changes (the rule Python applies to
its own `.pyc` files), or a module that shapes it does; it lives in fixer's cache directory
(`fixer.cache`). Where that directory cannot be written, the index is built in memory each time:
slower, never wrong.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal, TypeVar, overload

from fixer import __version__, cache, collector
from fixer.explain.literals import ENGINE, AnyOf, Groups, LiteralIndex, Regex
from fixer.kb.chances import CHANCES
from fixer.kb.paths import KBError

if TYPE_CHECKING:
    from fixer.explain.priors import Prior
    from fixer.kb.catalog import Catalog
    from fixer.kb.schema import Entry

FORMAT = 14  # bump when the layout below changes
_T = TypeVar("_T")


@dataclass(frozen=True)
class Question:
    """A question about one fact of the user's run (kb/facts/questions.yaml), as `narrow` asks it."""

    fact: str
    ask: str
    check: str
    base: float
    known: float = 0.9
    look: tuple[Regex, ...] = ()
    command: tuple[Regex, ...] = ()
    shown: tuple[Regex, ...] = ()  # over the message lines
    frames: tuple[Regex, ...] = ()  # over the frame lines
    absent: float | None = None  # how often `look` finds a yes that holds: a project without one is a soft no
    asked: bool = True  # False: only the project is read for it (kb/facts/questions.yaml)


@dataclass(frozen=True)
class Card:
    """What a ranking and the terminal's explanation show of an entry, read from the index without YAML
    or pydantic; `entry` reads the rest from its file when a view needs it."""

    id: str
    title: str
    summary: str
    meaning: str
    cause: str
    fix_summary: str
    fix_safety: Literal["safe", "unsafe", "manual"]
    fix_codemod: str | None
    fix_steps: tuple[str, ...]
    fix_before: str
    fix_after: str
    diagnostics: tuple[str, ...]
    facts: tuple[tuple[str, float], ...]  # (fact, the chance of a yes under this cause), as the entry says
    file: str
    # meaning, cause and fix_summary as the terminal lays them out (fixer.output.prose), parsed here so
    # that printing a card needs no Markdown parser
    prose: dict[str, list[dict[str, Any]]] = field(default_factory=dict, compare=False, repr=False)
    loaded: Entry | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, entry: Entry, file: Path | str = "") -> Card:
        from fixer.output.prose import parse

        return cls(
            id=entry.id,
            title=entry.title,
            summary=entry.summary,
            meaning=entry.meaning,
            cause=entry.cause,
            fix_summary=entry.fix.summary,
            fix_safety=entry.fix.safety,
            fix_codemod=entry.fix.codemod,
            fix_steps=tuple(entry.fix.steps),
            fix_before=entry.fix.before,
            fix_after=entry.fix.after,
            diagnostics=tuple(entry.diagnostics),
            facts=tuple((fact, CHANCES[likelihood]) for fact, likelihood in entry.facts.items()),
            file=str(file),
            prose={
                "meaning": parse(entry.meaning),
                "cause": parse(entry.cause),
                "fix_summary": parse(entry.fix.summary),
            },
            loaded=entry,
        )

    @property
    def entry(self) -> Entry:
        return self.loaded if self.loaded is not None else _entry_at(self.file)


@lru_cache(maxsize=64)
def _entry_at(file: str) -> Entry:
    from fixer.kb.catalog import read_entry

    return read_entry(Path(file))


@dataclass(frozen=True)
class Signature:
    pattern: Regex
    exception: str | None
    weight: int
    source: bool = False  # an extracted message (fixer.kb.sources): read only where no written one is


@dataclass(frozen=True)
class Rule:
    when: dict[str, Any]  # a Condition's fields that are set: regexes as `Regex`, the rest as written
    weight: int
    because: str


@dataclass(frozen=True)
class Example:
    """A real example's message, normalised, with the kinds of devices it names."""

    message: str
    kinds: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class IndexedEntry:
    card: Card
    signatures: tuple[Signature, ...]
    rules: tuple[Rule, ...]
    examples: tuple[Example, ...]


@dataclass(frozen=True)
class Examples:
    """Every entry's examples by distinct message, so one batch comparison scores them all."""

    messages: Sequence[str]
    bearers: Groups  # per message, its examples by number in the lists below
    entries: Sequence[int]  # per example: its entry, its place among the entry's examples, its kinds
    positions: Sequence[int]
    kinds: Sequence[int]  # into `kind_names`
    kind_names: Sequence[Sequence[str]]

    def of(self, message: int) -> Iterator[tuple[int, int, tuple[str, ...]]]:
        """(entry, position, kinds of devices) of each example whose message this is."""
        for example in self.bearers[message]:
            yield self.entries[example], self.positions[example], tuple(self.kind_names[self.kinds[example]])


@dataclass(frozen=True)
class Outside:
    """A message PyTorch or a library built on it raises whose cause no entry covers yet
    (kb/messages/<library>.yaml)."""

    pattern: Regex
    library: str
    where: str
    versions: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class Index:
    entries: Sequence[IndexedEntry]  # a tuple, or read from the index file as they are needed
    ids: tuple[str, ...]  # the entries' ids, in their order: known without reading an entry
    known: AnyOf  # the distinct signature patterns, sorted: finds a known message in any line
    bearers: Groups  # per known pattern, the entries whose signature it is
    examples: Examples
    arguments: tuple[Regex, ...]  # the arguments some rule speaks of
    priors: dict[str, dict[str, Prior]]
    facts: tuple[Question, ...] = ()  # the questions the entries' facts answer
    problems: tuple[str, ...] = ()  # the files the catalog skipped, said again on every load
    drafts: tuple[str, ...] = ()  # the drafts it left out (Catalog.drafts), said again too
    outside: tuple[Outside, ...] = ()  # extracted messages no entry covers: said as such, not guessed at
    # per known pattern, the ways a cut message may read it (fixer.explain.tolerant.readings); None where
    # the matcher works them out the first time a message is not read as written (a built index)
    readings: Sequence[tuple[tuple[str, ...], ...]] | None = None


REGEX_FIELDS = ("message", "text", "exception", "argument", "op", "frame")


@collector.paused()
def build(catalog: Catalog) -> Index:
    """The index of a loaded catalog; its examples are parsed as the matcher will read pastes."""
    from fixer.explain import priors
    from fixer.explain.evidence import extract
    from fixer.explain.normalise import normalise
    from fixer.explain.parse import parse

    known = catalog.known_messages
    read: dict[str, tuple[str, tuple[str, ...]] | None] = {}  # a traceback several entries quote is read once

    def message_and_kinds(traceback: str) -> tuple[str, tuple[str, ...]] | None:
        if traceback not in read:
            # The KB's examples are quoted as printed: no case folding.
            tb = parse(traceback, known, fold_case=False)
            read[traceback] = (
                (normalise(tb.message), extract(tb, read_code=False).device_kinds) if tb and tb.message else None
            )
        return read[traceback]

    entries = []
    for entry in catalog:
        examples = [
            Example(*found, str(example.source))
            for example in entry.examples
            if (found := message_and_kinds(example.traceback)) is not None
        ]
        owner = catalog.owner(entry.id)
        rules = []
        for rule in entry.evidence:
            when: dict[str, Any] = rule.when.model_dump(exclude_none=True)
            when.update({name: Regex.of(value, owner) for name, value in when.items() if name in REGEX_FIELDS})
            rules.append(Rule(when, rule.weight, rule.because))
        entries.append(
            IndexedEntry(
                card=Card.of(entry, catalog.files.get(entry.id, "")),
                signatures=(
                    *(Signature(Regex.of(s.pattern, owner), s.exception, s.weight) for s in entry.signatures),
                    *(Signature(Regex.of(s.pattern, None), None, s.weight, True) for s in catalog.added(entry.id)),
                ),
                rules=tuple(rules),
                examples=tuple(examples),
            )
        )
    questions = tuple(
        Question(
            f.id,
            f.ask,
            f.check,
            f.base,
            f.known,
            tuple(Regex.of(p, None) for p in f.look),
            tuple(Regex.of(p, None) for p in f.command),
            tuple(Regex.of(p, None) for p in f.shown),
            tuple(Regex.of(p, None) for p in f.frames),
            f.absent,
            f.asked,
        )
        for f in catalog.facts.values()
    )
    from fixer.kb.sources import pattern_of

    outside = tuple(
        Outside(Regex.of(pattern_of(m.key), None), m.library, m.where, tuple(m.versions), m.outside)
        for m in catalog.sources
        if m.outside
    )
    return _assembled(tuple(entries), priors.load(catalog.root), questions, catalog.problems, catalog.drafts, outside)


def _assembled(
    entries: tuple[IndexedEntry, ...],
    priors: dict[str, dict[str, Prior]],
    facts: tuple[Question, ...],
    problems: tuple[str, ...],
    drafts: tuple[str, ...],
    outside: tuple[Outside, ...] = (),
) -> Index:
    bearing: dict[str, dict[int, int]] = {}  # pattern -> entry -> the place of the pattern among its signatures
    for number, entry in enumerate(entries):
        for position, signature in enumerate(entry.signatures):
            bearing.setdefault(signature.pattern.pattern, {}).setdefault(number, position)
    patterns = sorted(bearing)
    first = [next(iter(bearing[p].items())) for p in patterns]
    known = AnyOf([entries[e].signatures[position].pattern for e, position in first])
    by_message: dict[str, list[int]] = {}
    kind_names: dict[tuple[str, ...], int] = {}
    flat: list[tuple[int, int, int]] = []
    for number, entry in enumerate(entries):
        for position, example in enumerate(entry.examples):
            by_message.setdefault(example.message, []).append(len(flat))
            flat.append((number, position, kind_names.setdefault(example.kinds, len(kind_names))))
    arguments = {
        rule.when["argument"].pattern: rule.when["argument"]
        for e in entries
        for rule in e.rules
        if "argument" in rule.when
    }
    return Index(
        entries=entries,
        ids=tuple(entry.card.id for entry in entries),
        known=known,
        bearers=Groups.of(list(bearing[p]) for p in patterns),
        examples=Examples(
            messages=tuple(by_message),
            bearers=Groups.of(by_message.values()),
            entries=[e for e, _, _ in flat],
            positions=[p for _, p, _ in flat],
            kinds=[k for _, _, k in flat],
            kind_names=list(kind_names),
        ),
        arguments=tuple(arguments[p] for p in sorted(arguments)),
        priors=priors,
        facts=facts,
        problems=problems,
        drafts=drafts,
        outside=outside,
    )


def _record(entry: IndexedEntry) -> dict[str, Any]:
    return {
        "card": _fields(entry.card, leave="loaded"),
        "signatures": [[s.pattern.to_json(), s.exception, s.weight, s.source] for s in entry.signatures],
        "rules": [
            [{k: v.to_json() if isinstance(v, Regex) else v for k, v in r.when.items()}, r.weight, r.because]
            for r in entry.rules
        ],
        "examples": [[x.message, list(x.kinds), x.source] for x in entry.examples],
    }


def _entry(record: dict[str, Any]) -> IndexedEntry:
    card = record["card"]
    return IndexedEntry(
        card=Card(
            **{
                **card,
                "diagnostics": tuple(card["diagnostics"]),
                "fix_steps": tuple(card["fix_steps"]),
                "facts": tuple((fact, chance) for fact, chance in card["facts"]),
            }
        ),
        signatures=tuple(
            Signature(Regex.from_json(p), exception, weight, source)
            for p, exception, weight, source in record["signatures"]
        ),
        rules=tuple(
            Rule({k: Regex.from_json(v) if k in REGEX_FIELDS else v for k, v in when.items()}, weight, because)
            for when, weight, because in record["rules"]
        ),
        examples=tuple(Example(m, tuple(kinds), source) for m, kinds, source in record["examples"]),
    )


def dumps(index: Index) -> str:
    """The index as one text: a line of tables, then a line per entry, found by its offset, then a line
    of the known patterns' readings."""
    return "".join(_lines(index))


@collector.paused()
def _lines(index: Index) -> list[str]:
    """The lines of `dumps`, each with its line break: a team KB's index is hundreds of megabytes, which
    are written line by line rather than copied into one text first."""
    from fixer.explain.tolerant import readings

    lines = [json.dumps(_record(entry), ensure_ascii=False) for entry in index.entries]
    offsets, at = [], 0
    for line in lines:
        offsets.append(at)
        at += len(line.encode()) + 1
    # Worked out here, in the process that builds the index, so that no process that reads it parses
    # every known pattern when a message is cut; read back the first time one is.
    read = index.readings if index.readings is not None else [readings(r.pattern) for r in index.known.regexes]
    lines.append(json.dumps(read, ensure_ascii=False))
    readings_at = at
    at += len(lines[-1].encode()) + 1
    bearers = index.bearers
    head = {
        "format": FORMAT,
        "offsets": offsets,
        "readings": readings_at,
        "size": at,
        "ids": list(index.ids),
        "known": {
            "at": [_place(index.entries[bearers[n][0]], regex) for n, regex in enumerate(index.known.regexes)],
            "index": index.known.index.to_json(),
        },
        "bearers": _fields(bearers),
        "examples": {**_fields(index.examples), "bearers": _fields(index.examples.bearers)},
        "arguments": [regex.to_json() for regex in index.arguments],
        "priors": {
            m: {c: [p.count, p.total, p.points] for c, p in causes.items()} for m, causes in index.priors.items()
        },
        "facts": [
            [
                q.fact,
                q.ask,
                q.check,
                q.base,
                q.known,
                q.absent,
                q.asked,
                *([r.to_json() for r in rs] for rs in (q.look, q.command, q.shown, q.frames)),
            ]
            for q in index.facts
        ],
        "problems": list(index.problems),
        "drafts": list(index.drafts),
        "outside": [[o.pattern.to_json(), o.library, o.where, list(o.versions), o.reason] for o in index.outside],
    }
    return [json.dumps(head, ensure_ascii=False) + "\n", *(line + "\n" for line in lines)]


def _fields(record: Any, leave: str = "") -> dict[str, Any]:
    """A dataclass's fields as JSON takes them: `asdict` would deep-copy every list and dict first,
    which costs seconds over a team KB's ten thousand entries."""
    return {f.name: getattr(record, f.name) for f in fields(record) if f.name != leave}


def _place(entry: IndexedEntry, regex: Regex) -> int:
    return next(n for n, signature in enumerate(entry.signatures) if signature.pattern.pattern == regex.pattern)


def loads(text: str) -> Index:
    """An index from `dumps`, every entry read at once."""
    head, _, body = text.partition("\n")
    data = body.encode()
    return _opened(json.loads(head), lambda start, end: data[start:end], len(data))


def _opened(head: dict[str, Any], read: Callable[[int, int], bytes], size: int) -> Index:
    """An index over `head` whose entries `read(start, end)` gives as they are needed."""
    from fixer.explain.priors import Prior

    if head.get("format") != FORMAT or head["size"] != size:
        raise ValueError("not an index of this fixer, or cut short")
    entries = _Entries(head["offsets"], head["readings"], read)
    bearers = Groups(**head["bearers"])
    examples = head["examples"]
    return Index(
        entries=entries,
        ids=tuple(head["ids"]),
        known=AnyOf(_Patterns(entries, bearers, head["known"]["at"]), LiteralIndex.from_json(head["known"]["index"])),
        bearers=bearers,
        examples=Examples(**{**examples, "bearers": Groups(**examples["bearers"])}),
        arguments=tuple(Regex.from_json(r) for r in head["arguments"]),
        priors={m: {c: Prior(*p) for c, p in causes.items()} for m, causes in head["priors"].items()},
        facts=tuple(_question(*row) for row in head["facts"]),
        problems=tuple(head["problems"]),
        drafts=tuple(head["drafts"]),
        outside=tuple(Outside(Regex.from_json(p), lib, w, tuple(v), r) for p, lib, w, v, r in head["outside"]),
        readings=_Readings(lambda: read(head["readings"], size), len(head["known"]["at"])),
    )


def _question(
    fact: str, ask: str, check: str, base: float, known: float, absent: float | None, asked: bool, *regexes: Any
) -> Question:
    look, command, shown, frames = (tuple(map(Regex.from_json, found)) for found in regexes)
    return Question(fact, ask, check, base, known, look, command, shown, frames, absent, asked)


class _Lazy(Sequence[_T]):
    """A sequence whose items are made the first time each is asked for; `_item` makes one."""

    def _item(self, number: int) -> _T:
        raise NotImplementedError

    @overload
    def __getitem__(self, number: int) -> _T: ...
    @overload
    def __getitem__(self, number: slice) -> Sequence[_T]: ...
    def __getitem__(self, number: int | slice) -> _T | Sequence[_T]:
        if isinstance(number, slice):
            return [self._item(n) for n in range(len(self))[number]]
        return self._item(number)


class _Entries(_Lazy[IndexedEntry]):
    """The entries of an index file, each read and decoded the first time it is asked for."""

    def __init__(self, offsets: list[int], end: int, read: Callable[[int, int], bytes]) -> None:
        """`end`: where the last entry's line ends."""
        self._spans = list(zip(offsets, [*offsets[1:], end], strict=True))
        self._read = read
        self._decoded: dict[int, IndexedEntry] = {}

    def __len__(self) -> int:
        return len(self._spans)

    def _item(self, number: int) -> IndexedEntry:
        found = self._decoded.get(number)
        if found is None:
            start, end = self._spans[number]
            try:
                found = self._decoded[number] = _entry(json.loads(self._read(start, end)))
            except (ValueError, KeyError, TypeError) as exc:
                raise KBError(f"fixer's KB index is damaged ({exc}); delete {cache.directory() / 'index'}") from None
        return found

    def __iter__(self) -> Iterator[IndexedEntry]:
        return (self._item(n) for n in range(len(self)))


class _Readings(_Lazy[tuple[tuple[str, ...], ...]]):
    """The known patterns' readings, all decoded from their line the first time one is asked for."""

    def __init__(self, read: Callable[[], bytes], size: int) -> None:
        self._read = read
        self._size = size
        self._decoded: list[tuple[tuple[str, ...], ...]] | None = None

    def __len__(self) -> int:
        return self._size

    def _item(self, number: int) -> tuple[tuple[str, ...], ...]:
        if self._decoded is None:
            try:
                found = json.loads(self._read())
            except ValueError as exc:
                raise KBError(f"fixer's KB index is damaged ({exc}); delete {cache.directory() / 'index'}") from None
            self._decoded = [tuple(map(tuple, ways)) for ways in found]
        return self._decoded[number]


class _Patterns(_Lazy[Regex]):
    """The known patterns of an index file, each read with the first entry that has it."""

    def __init__(self, entries: _Entries, bearers: Groups, at: Sequence[int]) -> None:
        self._entries = entries
        self._bearers = bearers
        self._at = at

    def __len__(self) -> int:
        return len(self._at)

    def _item(self, number: int) -> Regex:
        return self._entries[self._bearers[number][0]].signatures[self._at[number]].pattern


def fingerprint(directories: tuple[Path, ...]) -> str:
    """Changes whenever a KB file is added, removed, resized or touched, or so is a module that shapes
    the index (how examples are parsed and normalised), as in an editable install that was pulled."""
    digest = hashlib.blake2b(f"{FORMAT} {__version__} {sys.version_info[:2]} {ENGINE}".encode(), digest_size=16)
    package = Path(__file__).resolve().parents[1]
    places = [(package / "explain", ".py"), (package / "kb", ".py")]
    for directory in directories:
        places += [(directory.resolve() / sub, ".yaml") for sub in ("", "priors", "facts", "messages")]  # as load reads
    for directory, suffix in places:
        digest.update(f"\0{directory}".encode())
        try:
            with os.scandir(directory) as found:  # a stat per file, and no more: 10,000 entries in 50 ms
                stamps = sorted(_stamp(f) for f in found if f.name.endswith(suffix))
        except OSError:  # not there (yet): that too is part of what the index was built from
            continue
        digest.update(repr(stamps).encode())
    return digest.hexdigest()


def _stamp(file: os.DirEntry[str]) -> tuple[str, int, int]:
    try:
        info = file.stat()
    except OSError:  # a dangling link: the catalog will say so
        return file.name, -1, -1
    return file.name, info.st_size, info.st_mtime_ns


def load(root: Path, team: tuple[Path, ...], *, drafts: bool = False) -> Index:
    """The index of the KB at `root` plus the team directories, from the cache when it is current;
    with `drafts`, the entries that still hold TODOs too (an index of its own)."""
    directories = (root, *team)
    family = hashlib.blake2b("\0".join(str(d.resolve()) for d in directories).encode(), digest_size=8).hexdigest()
    kind = "-drafts" if drafts else ""
    path = cache.directory() / "index" / f"{family}-{fingerprint(directories)}{kind}.json"
    try:
        return _read(path)
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):  # absent, stale or damaged
        pass
    from fixer.kb.catalog import load as load_catalog

    index = build(load_catalog(root, team=team, drafts=drafts))
    _write(path, _lines(index))
    return index


def _read(path: Path) -> Index:
    stream: IO[bytes] = path.open("rb")  # kept open: the entries are read from it as they are needed
    with collector.paused():
        head = json.loads(stream.readline())
    body = stream.tell()
    size = os.fstat(stream.fileno()).st_size - body

    def read(start: int, end: int) -> bytes:
        stream.seek(body + start)
        return stream.read(end - start)

    return _opened(head, read, size)


def _write(path: Path, lines: list[str]) -> None:
    """Atomically, so two processes building at once never leave half a file, and in place of the
    indexes of the same directories' earlier contents; silently not at all where the cache cannot be
    written (a read-only home, a sandbox)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        with partial.open("w", encoding="utf-8") as out:
            out.writelines(lines)
        os.replace(partial, path)
        family = path.name.split("-", 1)[0]
        for stale in path.parent.glob(f"{family}-*.json"):
            if stale != path:
                stale.unlink(missing_ok=True)
    except OSError:
        return


__all__ = ["Card", "Examples", "Index", "IndexedEntry", "build", "dumps", "fingerprint", "load", "loads"]
