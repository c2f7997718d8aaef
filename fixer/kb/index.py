"""The KB as the matcher reads it, compiled once and kept on disk: `fixer explain` pays neither for
validating YAML with pydantic nor for analysing regexes on every call.

An index holds, per entry, what ranking needs (signatures with the literals each needs, rules, the real
examples' messages already normalised) and a card, what a ranking shows of it; the whole entry is read
from its file only for a view that shows all of it. It is rebuilt when any KB file's size or
modification time changes, the rule Python applies to its own `.pyc` files, and kept in fixer's cache
directory (`fixer.cache`), one file per set of KB directories. Where that directory cannot be written, the index is
built in memory each time: slower, never wrong.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from fixer import __version__, cache
from fixer.explain.literals import AnyOf, Regex, needs

if TYPE_CHECKING:
    from fixer.explain.priors import Prior
    from fixer.kb.catalog import Catalog
    from fixer.kb.schema import Entry

FORMAT = 1  # bump when the layout below changes


@dataclass(frozen=True)
class Question:
    """An entry's follow-up question, as `narrow` asks it."""

    ask: str
    if_yes: int
    if_no: int


@dataclass(frozen=True)
class Card:
    """What a ranking shows of an entry; `entry` reads the rest from its file when a view needs it."""

    id: str
    title: str
    summary: str
    fix_summary: str
    fix_safety: Literal["safe", "unsafe", "manual"]
    fix_codemod: str | None
    diagnostics: tuple[str, ...]
    questions: tuple[Question, ...]
    file: str
    loaded: Entry | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, entry: Entry, file: Path | str = "") -> Card:
        return cls(
            id=entry.id,
            title=entry.title,
            summary=entry.summary,
            fix_summary=entry.fix.summary,
            fix_safety=entry.fix.safety,
            fix_codemod=entry.fix.codemod,
            diagnostics=tuple(entry.diagnostics),
            questions=tuple(Question(q.ask, q.if_yes, q.if_no) for q in entry.questions),
            file=str(file),
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
class Index:
    entries: tuple[IndexedEntry, ...]
    known: AnyOf
    priors: dict[str, dict[str, Prior]]
    problems: tuple[str, ...] = ()  # the files the catalog skipped, said again on every load


REGEX_FIELDS = ("message", "text", "exception", "argument", "op", "frame")


def build(catalog: Catalog) -> Index:
    """The index of a loaded catalog; its examples are parsed as the matcher will read pastes."""
    from fixer.explain import priors
    from fixer.explain.evidence import extract
    from fixer.explain.normalise import normalise
    from fixer.explain.parse import parse

    known = catalog.known_messages
    entries = []
    for entry in catalog:
        examples = []
        for example in entry.examples:
            # The KB's examples are quoted as printed: no case folding.
            tb = parse(example.traceback, known, fold_case=False)
            if tb and tb.message:
                kinds = extract(tb, read_code=False).device_kinds
                examples.append(Example(normalise(tb.message), kinds, str(example.source)))
        rules = []
        for rule in entry.evidence:
            when: dict[str, Any] = rule.when.model_dump(exclude_none=True)
            when.update({name: _regex(value) for name, value in when.items() if name in REGEX_FIELDS})
            rules.append(Rule(when, rule.weight, rule.because))
        entries.append(
            IndexedEntry(
                card=Card.of(entry, catalog.files.get(entry.id, "")),
                signatures=tuple(Signature(_regex(s.pattern), s.exception, s.weight) for s in entry.signatures),
                rules=tuple(rules),
                examples=tuple(examples),
            )
        )
    return Index(tuple(entries), known, priors.load(catalog.root), catalog.problems)


def _regex(pattern: str) -> Regex:
    return Regex(pattern, needs(pattern))


def dumps(index: Index) -> str:
    def regex(r: Regex) -> list[Any]:
        return [r.pattern, list(r.needs)]

    entries = [
        {
            "card": {k: v for k, v in asdict(e.card).items() if k != "loaded"},
            "signatures": [[*regex(s.pattern), s.exception, s.weight] for s in e.signatures],
            "rules": [
                [{k: regex(v) if isinstance(v, Regex) else v for k, v in r.when.items()}, r.weight, r.because]
                for r in e.rules
            ],
            "examples": [[x.message, list(x.kinds), x.source] for x in e.examples],
        }
        for e in index.entries
    ]
    priors = {m: {c: [p.count, p.total, p.points] for c, p in causes.items()} for m, causes in index.priors.items()}
    known = [regex(r) for r in index.known.regexes]
    document = {"entries": entries, "known": known, "priors": priors, "problems": list(index.problems)}
    return json.dumps(document, ensure_ascii=False)


def loads(text: str) -> Index:
    from fixer.explain.priors import Prior

    data = json.loads(text)

    def regex(value: list[Any]) -> Regex:
        return Regex(value[0], tuple(value[1]))

    entries = tuple(
        IndexedEntry(
            card=_card(e["card"]),
            signatures=tuple(Signature(regex(s[:2]), s[2], s[3]) for s in e["signatures"]),
            rules=tuple(
                Rule({k: regex(v) if k in REGEX_FIELDS else v for k, v in when.items()}, weight, because)
                for when, weight, because in e["rules"]
            ),
            examples=tuple(Example(m, tuple(kinds), source) for m, kinds, source in e["examples"]),
        )
        for e in data["entries"]
    )
    priors = {m: {c: Prior(*p) for c, p in causes.items()} for m, causes in data["priors"].items()}
    return Index(entries, AnyOf(regex(r) for r in data["known"]), priors, tuple(data["problems"]))


def _card(data: dict[str, Any]) -> Card:
    questions = tuple(Question(**q) for q in data["questions"])
    return Card(**{**data, "diagnostics": tuple(data["diagnostics"]), "questions": questions})


def fingerprint(directories: tuple[Path, ...]) -> str:
    """Changes whenever a KB file is added, removed, resized or touched, or so is a module that shapes
    the index (how examples are parsed and normalised), as in an editable install that was pulled."""
    digest = hashlib.blake2b(f"{FORMAT} {__version__} {sys.version_info[:2]}".encode(), digest_size=16)
    package = Path(__file__).resolve().parents[1]
    for path in sorted(package.glob("explain/*.py")) + sorted(package.glob("kb/*.py")):
        _stamp(digest, path)
    for directory in directories:
        digest.update(f"{directory.resolve()}\0{directory.is_dir()}".encode())
        for path in sorted(directory.glob("*.yaml")) + sorted(directory.glob("priors/*.yaml")):  # as load reads
            _stamp(digest, path)
    return digest.hexdigest()


def _stamp(digest: Any, path: Path) -> None:
    info = path.stat()
    digest.update(f"\0{path}\0{info.st_size}\0{info.st_mtime_ns}".encode())


def load(root: Path, team: tuple[Path, ...]) -> Index:
    """The index of the KB at `root` plus the team directories, from the cache when it is current."""
    key = fingerprint((root, *team))
    path = cache.directory() / "index" / f"{key}.json"
    try:
        return loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError, IndexError):  # absent, stale format, or damaged
        pass
    from fixer.kb.catalog import load as load_catalog

    index = build(load_catalog(root, team=team))
    _write(path, dumps(index))
    return index


def _write(path: Path, text: str) -> None:
    """Atomically, so two processes building at once never leave half a file; silently not at all where
    the cache cannot be written (a read-only home, a sandbox)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    except OSError:
        return


__all__ = ["Card", "Index", "IndexedEntry", "build", "dumps", "fingerprint", "load", "loads"]
