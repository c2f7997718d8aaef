"""The whole KB as one JSON document, for bots and search tools: `fixer export --format json`.

Its shape is a pydantic model, like every JSON fixer writes, so the schema that documents it
(docs/schema/kb-export.schema.json) is generated from the same code that writes it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fixer import __version__
from fixer.kb.catalog import Catalog
from fixer.kb.schema import Entry, Strict

FORMAT: Literal[1] = 1


class ExportedEntry(Entry):
    origin: Literal["built-in", "team"] = Field(description="The KB shipped with fixer, or a team's directory.")


class KBDocument(Strict):
    format: Literal[1] = Field(description="Bumped when a field is renamed or removed; fields may be added.")
    fixer_version: str
    entries: list[ExportedEntry] = Field(description="Every entry, sorted by id, as the KB's YAML holds it.")


def kb_document(catalog: Catalog) -> KBDocument:
    team = catalog.team
    entries = [
        ExportedEntry(**entry.model_dump(), origin="team" if entry.id in team else "built-in")
        for entry in sorted(catalog, key=lambda e: e.id)
    ]
    return KBDocument(format=FORMAT, fixer_version=__version__, entries=entries)
