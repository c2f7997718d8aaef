"""Load and validate `kb/*.yaml` into a `Catalog`: the one source every surface reads from.

A team keeps entries of its own in its own repository and adds their directories (`--kb DIR`,
`FIXER_KB_PATH`) to the built-in KB. An id names one cause everywhere (in links, in `--entry`, in the
priors), so a team entry may take a built-in id only by saying `overrides: true`, and two team
directories may not define one id twice.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import yaml
from pydantic import TypeAdapter, ValidationError

from fixer import collector
from fixer.explain.literals import AnyOf, known_messages
from fixer.kb.paths import KBError, default_root, team_dirs
from fixer.kb.schema import Entry, Fact, Signature, SourceMessage
from fixer.kb.sources import MESSAGES, derived, read_sources
from fixer.kb.unwritten import unwritten

_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Catalog:
    entries: dict[str, Entry]
    root: Path
    problems: tuple[str, ...] = field(default=())
    files: dict[str, Path] = field(default_factory=dict)  # where each entry was read from; team entries too
    drafts: tuple[str, ...] = field(default=())  # the files left out for their TODOs, each with its first TODO
    facts: dict[str, Fact] = field(default_factory=dict)  # the questions entries' `facts` answer, by id
    sources: tuple[SourceMessage, ...] = ()  # PyTorch's and its libraries' messages, from the built-in KB's messages/

    @property
    def team(self) -> set[str]:
        """The ids whose entry comes from a team directory, not the built-in KB."""
        return {entry_id for entry_id in self.files if self.owner(entry_id)}

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries.values())

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, entry_id: str) -> Entry | None:
        return self.entries.get(entry_id)

    def owner(self, entry_id: str) -> str | None:
        """The file of a team entry, whose regexes run under a time bound; None for a built-in one."""
        path = self.files.get(entry_id)
        return str(path) if path is not None and path.parent != self.root else None

    def added(self, entry_id: str) -> list[Signature]:
        """The signatures the extracted messages add to an entry (fixer.kb.sources)."""
        return self._added.get(entry_id, [])

    @cached_property
    def _added(self) -> dict[str, list[Signature]]:
        return derived(m for m in self.sources if set(m.entries) <= self.entries.keys())

    @cached_property
    def known_messages(self) -> AnyOf:
        """Every signature, searched as one: finds a known message even where no exception type is printed."""
        return known_messages(
            (s.pattern, self.owner(entry.id)) for entry in self for s in (*entry.signatures, *self.added(entry.id))
        )


MAX_ENTRY_BYTES = 1_000_000  # an entry is a few kilobytes; a bigger file is a mistake or an attack
MAX_DEPTH = 32  # the schema nests five levels deep


def read_entry(path: Path) -> Entry:
    data = _read_document(path)
    try:
        return Entry.model_validate(data)
    except ValidationError as exc:
        raise KBError(f"{path.name}: {_details(exc)}") from None


FACTS = Path("facts") / "questions.yaml"  # under a KB directory: the questions its entries' `facts` answer


def read_facts(path: Path) -> dict[str, Fact]:
    """The questions of one KB directory, by fact id; a directory without the file has none."""
    if not path.exists():
        return {}
    data = _read_document(path)
    try:
        facts = TypeAdapter(list[Fact]).validate_python(data if data is not None else [])
    except ValidationError as exc:
        raise KBError(f"{path.name}: {_details(exc)}") from None
    by_id: dict[str, Fact] = {}
    for fact in facts:
        if fact.id in by_id:
            raise KBError(f"{path.name}: fact {fact.id!r} is asked twice")
        by_id[fact.id] = fact
    return by_id


def _details(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors())


def _read_document(path: Path) -> object:
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):  # a FIFO would block the read forever
            raise KBError(f"{path.name}: not a regular file")
        if info.st_size > MAX_ENTRY_BYTES:
            raise KBError(f"{path.name}: {info.st_size:,} bytes, more than an entry can be ({MAX_ENTRY_BYTES:,})")
        data = _load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise KBError(f"{path.name}: cannot read: {exc}") from None
    except yaml.YAMLError as exc:
        raise KBError(f"{path.name}: not valid YAML: {exc}".replace("\n", " ")) from None
    except _Refused as exc:
        raise KBError(f"{path.name}: {exc}") from None
    except RecursionError:  # the pure-Python loader, where libyaml is missing, recurses per level
        raise KBError(f"{path.name}: nests deeper than {MAX_DEPTH} levels") from None
    return data


class _Refused(Exception):
    """A YAML document that a safe loader reads, but that no entry needs and that can hang or crash."""


def _load_yaml(text: str) -> object:
    """The document, refused when it uses aliases (a few lines of them expand to billions of nodes for
    the validator) or nests deeper than an entry does (a recursive validator's stack overflows)."""
    loader = _SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_nodes(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_nodes(root: yaml.Node) -> None:
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            raise _Refused("uses YAML aliases (*name); write the value out")
        seen.add(id(node))
        if depth > MAX_DEPTH:
            raise _Refused(f"nests deeper than {MAX_DEPTH} levels")
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend((part, depth + 1) for pair in node.value for part in pair)


@collector.paused()
def load(
    root: Path | None = None, *, team: Sequence[Path] | None = None, strict: bool = False, drafts: bool = False
) -> Catalog:
    """Every entry under `root`, then under each team directory (default: `team_dirs()`). Broken files,
    and team entries that take an id without `overrides: true`, are skipped and listed in `problems`
    (or raise, if strict). Drafts, whose TODOs no person has written yet, are left out and listed in
    `drafts` unless `drafts` asks for them: an unwritten entry must not rank first or reach a wiki."""
    root = root or default_root()
    team = team_dirs() if team is None else team
    entries: dict[str, Entry] = {}
    files: dict[str, Path] = {}
    problems: list[str] = []
    left_out: list[str] = []
    facts: dict[str, Fact] = {}
    sources: tuple[SourceMessage, ...] = ()
    try:
        sources = read_sources(root / MESSAGES, _read_document)
    except KBError as exc:
        if strict:
            raise
        problems.append(str(exc))
    for directory in (root, *team):
        if not directory.is_dir():
            raise KBError(f"no knowledge base at {directory}")
        try:
            own = read_facts(directory / FACTS)
            asked = sorted(own.keys() & facts.keys())
            if asked:
                raise KBError(f"{shown(directory / FACTS, root)}: asks {', '.join(asked)} again")
        except KBError as exc:
            if strict:
                raise
            problems.append(str(exc))
        else:
            facts.update(own)
        for path in sorted(directory.glob("*.yaml")):
            try:
                entry = read_entry(path)
                refused = clash(entry, path, files)
                if refused:
                    raise KBError(f"{shown(path, root)}: {refused}")
            except KBError as exc:
                if strict:
                    raise
                problems.append(str(exc))
                continue
            if entry.retired:
                continue
            todo = [] if drafts else unwritten(entry)
            if todo:
                left_out.append(f"{shown(path, root)} ({len(todo)} to write; first: {todo[0]})")
                continue
            entries[entry.id] = entry
            files[entry.id] = path
    return Catalog(
        entries=entries,
        root=root,
        problems=tuple(problems),
        files=files,
        drafts=tuple(left_out),
        facts=facts,
        sources=sources,
    )


def shown(path: Path, root: Path) -> str:
    """A built-in entry is known by its file name; a team entry by its path, which says whose it is."""
    return path.name if path.parent == root else str(path)


def clash(entry: Entry, path: Path, known: dict[str, Path]) -> str | None:
    """Why `entry` may not join the entries read so far (`known`: id -> file), if it may not."""
    earlier = known.get(entry.id)
    if earlier is None or earlier == path:
        return None
    if earlier.parent == path.parent:
        return f"id {entry.id!r} is already used by {earlier.name}"
    if not entry.overrides:
        return (
            f"id {entry.id!r} is already defined by {earlier}; "
            "say `overrides: true` to replace it, or choose another id"
        )
    return None
