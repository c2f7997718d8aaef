"""Load and validate `kb/*.yaml` into a `Catalog`: the one source every surface reads from."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import yaml
from pydantic import ValidationError

from fixer.schema import Entry

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
        return re.compile("|".join(f"(?:{p})" for p in sorted(patterns)))


def default_root() -> Path:
    """`$FIXER_KB`, else the KB shipped inside the wheel, else `kb/` of a source checkout."""
    override = os.environ.get("FIXER_KB")
    if override:
        return Path(override)
    package = Path(__file__).resolve().parent
    shipped = package / "_kb"
    return shipped if shipped.is_dir() else package.parent / "kb"


def read_entry(path: Path) -> Entry:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_SafeLoader)
    except (OSError, UnicodeDecodeError) as exc:
        raise KBError(f"{path.name}: cannot read: {exc}") from None
    except yaml.YAMLError as exc:
        raise KBError(f"{path.name}: not valid YAML: {exc}".replace("\n", " ")) from None
    try:
        return Entry.model_validate(data)
    except ValidationError as exc:
        details = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors())
        raise KBError(f"{path.name}: {details}") from None


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
