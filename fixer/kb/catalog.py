"""Load and validate `kb/*.yaml` into a `Catalog`: the one source every surface reads from."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import yaml
from pydantic import ValidationError

from fixer.kb.schema import Entry

_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class KBError(Exception):
    """A KB file that cannot be read or does not fit the schema; says which file and why."""


@dataclass(frozen=True)
class Catalog:
    entries: dict[str, Entry]
    root: Path
    problems: tuple[str, ...] = field(default=())

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries.values())

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, entry_id: str) -> Entry | None:
        return self.entries.get(entry_id)

    @cached_property
    def known_messages(self) -> re.Pattern[str]:
        """Every signature in one regex: finds a known message even where no exception type is printed."""
        patterns = {s.pattern for entry in self for s in entry.signatures}
        return re.compile("|".join(f"(?:{p})" for p in sorted(patterns)) or "(?!)")


def default_root() -> Path:
    """`$FIXER_KB`, else the KB shipped inside the wheel, else `kb/` of a source checkout."""
    override = os.environ.get("FIXER_KB")
    if override:
        return Path(override)
    package = Path(__file__).resolve().parents[1]
    shipped = package / "_kb"
    return shipped if shipped.is_dir() else package.parent / "kb"


MAX_ENTRY_BYTES = 1_000_000  # an entry is a few kilobytes; a bigger file is a mistake or an attack
MAX_DEPTH = 32  # the schema nests five levels deep


def read_entry(path: Path) -> Entry:
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
    try:
        return Entry.model_validate(data)
    except ValidationError as exc:
        details = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors())
        raise KBError(f"{path.name}: {details}") from None


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


def load(root: Path | None = None, *, strict: bool = False) -> Catalog:
    """Every entry under `root`. Broken files are skipped and listed in `problems` (or raise, if strict)."""
    root = root or default_root()
    if not root.is_dir():
        raise KBError(f"no knowledge base at {root}")
    entries: dict[str, Entry] = {}
    problems: list[str] = []
    for path in sorted(root.glob("*.yaml")):
        try:
            entry = read_entry(path)
        except KBError as exc:
            if strict:
                raise
            problems.append(str(exc))
            continue
        if entry.retired:
            continue
        entries[entry.id] = entry
    return Catalog(entries=entries, root=root, problems=tuple(problems))
