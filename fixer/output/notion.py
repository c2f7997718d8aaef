"""The KB as a Notion import: Markdown pages in the layout Notion's importer turns into a page with
sub-pages, and the zip of them that its Import dialog takes ("Text & Markdown").

Notion's importer reads CommonMark: headings, paragraphs, lists, quotes, code blocks, tables, emphasis,
inline code and links. It drops raw HTML, so what the site folds away (`<details>`) is written out
plainly here, a callout is a quote, and a `<` in prose is escaped. A page's title is its first
heading. A link to another Markdown file of the same zip, by its path relative to the linking page
(spaces as `%20`), becomes a link to that page; the entries sit in a folder named as the front page,
which makes them its sub-pages.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterable
from urllib.parse import quote

from fixer.kb.schema import Entry
from fixer.output.markdown import FRONT_TITLE, Flavour, _indent, entry_page, index_page

ZIP = "fixer-kb-notion.zip"
_ENTRY = Flavour(
    link=lambda entry_id: f"{quote(entry_id)}.md",  # a sibling page, in the same folder
    tabs=lambda tabs: "\n\n".join(f"**{label}**\n\n{body}" for label, body in tabs),
    note=lambda kind, title, body: _indent(f"**{title}:** {body}", prefix="> "),
    folded=lambda kind, title, body: f"**{title}**\n\n{body}",
)


def notion_pages(entries: Iterable[Entry]) -> dict[str, str]:
    """Path in the zip -> Markdown: the front page, and a page per entry in the folder named as it."""
    entries = sorted(entries, key=lambda e: e.id)
    pages = {f"{FRONT_TITLE}/{entry.id}.md": _no_html(entry_page(entry, _ENTRY)) for entry in entries}
    pages[f"{FRONT_TITLE}.md"] = _no_html(
        index_page(entries, link=lambda entry_id: f"{quote(FRONT_TITLE)}/{quote(entry_id)}.md", title=FRONT_TITLE)
    )
    return pages


_CODE_SPAN = re.compile(r"(`+)(?:.*?)\1")


def _no_html(markdown: str) -> str:
    """Prose that quotes Python's reprs (`<built-in function linear>`) reads as an HTML tag, which the
    importer drops: outside code, a `<` is escaped, as CommonMark allows any punctuation to be."""
    out, fenced = [], False
    for line in markdown.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            parts, at = [], 0
            for span in _CODE_SPAN.finditer(line):
                parts += [line[at : span.start()].replace("<", "\\<"), span.group(0)]
                at = span.end()
            line = "".join([*parts, line[at:].replace("<", "\\<")])
        out.append(line)
    return "\n".join(out)


def notion_zip(pages: dict[str, str]) -> bytes:
    """The pages as the zip Notion's Import dialog takes, in a stable order with fixed times, so the same
    KB always makes the same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(pages):
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, pages[name].encode("utf-8"))
    return buffer.getvalue()
