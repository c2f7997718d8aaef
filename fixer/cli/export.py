"""`fixer export`: the KB (with any team directories) as files for another home: a wiki, a bot, an
HTML page, a notebook server."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from fixer.cli.common import OK, CliError, catalog

if TYPE_CHECKING:
    from fixer.kb.catalog import Catalog

JSON_FILE = "fixer-kb.json"


def export(form: str, output: str) -> int:
    entries = catalog()
    if entries.drafts:  # a wiki page of TODOs would read as the team's answer
        listed = "; ".join(entries.drafts)
        raise CliError(f"not exported: draft entries with TODOs left: {listed}. Write them, or export with --drafts", 1)
    if form == "json" and output == "-":
        from fixer.output.kb_document import kb_document

        sys.stdout.write(kb_document(entries).model_dump_json(indent=2) + "\n")
        return OK
    if output == "-":
        raise CliError(f"--format {form} writes many files: -o takes a directory ('-', stdout, is for json)")
    out = _directory(output)
    if form == "notebooks":
        from fixer.output.notebooks import write_notebooks

        written = write_notebooks(entries, out)
        left = len(entries) - len(written)
        print(
            f"wrote {len(written)} notebooks to {out}"
            + (f" ({left} entries have no repro that runs on a CPU)" if left else ""),
            file=sys.stderr,
        )
        return OK
    files = _files(form, entries)
    for name, text in files.items():
        _write(out / name, text)
    if form == "notion":
        from fixer.output.notion import ZIP, notion_zip

        _write_bytes(out / ZIP, notion_zip(files))
        print(f"wrote {len(files)} Notion pages to {out}, and {ZIP} to import them", file=sys.stderr)
        return OK
    print(f"wrote {len(files)} {_WHAT[form]} to {out}", file=sys.stderr)
    return OK


_WHAT = {
    "wiki": "wiki pages",
    "mkdocs": "MkDocs pages",
    "confluence": "Confluence pages",
    "html": "HTML snippets",
    "json": "JSON document",
}


def _files(form: str, entries: Catalog) -> dict[str, str]:
    if form == "wiki":
        from fixer.output.wiki import wiki_pages

        return wiki_pages(entries)
    if form == "mkdocs":
        from fixer.output.wiki import mkdocs_pages

        return mkdocs_pages(entries)
    if form == "confluence":
        from fixer.output.confluence import confluence_pages

        return confluence_pages(entries)
    if form == "notion":
        from fixer.output.notion import notion_pages

        return notion_pages(entries)
    if form == "html":
        from fixer.output.snippets import html_snippets

        return html_snippets(entries)
    from fixer.output.kb_document import kb_document

    return {JSON_FILE: kb_document(entries).model_dump_json(indent=2) + "\n"}


def _directory(output: str) -> Path:
    out = Path(output)
    if out.exists() and not out.is_dir():
        raise CliError(f"{output} is a file; -o takes the directory to write into")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"cannot create {output}: {exc.strerror or exc}") from None
    return out


def _write(path: Path, text: str) -> None:
    _write_bytes(path, text.encode("utf-8"))


def _write_bytes(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
