"""The KB as Confluence pages in Confluence's storage format, the XHTML its REST API takes as a page body
(`body.storage`), one file per page named by the entry's id; the page's title is to be the entry's
title (its first heading), which the other pages' links name.

The page is the same allowlisted HTML as the HTML snippets, rewritten as well-formed XHTML with the
storage format's own elements where Confluence has one: code blocks become the `code` macro (the text
kept line for line in CDATA, without trailing spaces, as Markdown keeps it), folded examples the
`expand` macro, and a link to another entry an `ac:link` to that page by its title, so links survive
whatever space or URL the pages land under.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from html.parser import HTMLParser

from fixer.kb.schema import Entry
from fixer.output.markdown import FRONT_TITLE, entry_page, gfm, index_page
from fixer.output.snippets import clean_html

SUFFIX = ".xml"
_PAGE_LINK = ".page"  # how the Markdown names another entry's page, read back into an ac:link here
_FLAVOUR = gfm(link=lambda entry_id: f"{entry_id}{_PAGE_LINK}", details_attributes=' markdown="1"')
_KEPT = {
    "a", "blockquote", "br", "code", "em", "h1", "h2", "h3", "hr", "li", "ol", "p", "strong", "table", "tbody",
    "td", "th", "thead", "tr", "ul",
}  # fmt: skip
_EMPTY = {"br", "hr"}


def confluence_pages(entries: Iterable[Entry]) -> dict[str, str]:
    """File name -> storage-format XHTML: a page per entry and a front page that lists them."""
    entries = sorted(entries, key=lambda e: e.id)
    titles = {entry.id: entry.title for entry in entries}
    pages = {f"{entry.id}{SUFFIX}": storage(entry_page(entry, _FLAVOUR), titles) for entry in entries}
    pages[f"index{SUFFIX}"] = storage(index_page(entries, link=_FLAVOUR.link, title=FRONT_TITLE), titles)
    return pages


def storage(markdown: str, titles: dict[str, str]) -> str:
    """One page's Markdown (written with `_FLAVOUR`) as a storage-format body; `titles` names the pages
    its entry links point at."""
    writer = _Storage(titles)
    writer.feed(clean_html(markdown))
    writer.close()
    return "".join(writer.out).strip() + "\n"


def _cdata(text: str) -> str:
    """Text as CDATA, any `]]>` in it split across two sections (CDATA cannot hold its own end)."""
    return "<![CDATA[" + text.replace("]]>", "]]]]><![CDATA[>") + "]]>"


class _Storage(HTMLParser):
    def __init__(self, titles: dict[str, str]) -> None:
        super().__init__(convert_charrefs=True)
        self.titles = titles
        self.out: list[str] = []
        self._code: list[str] | None = None  # the text of the code block being read
        self._language = "text"
        self._summary: list[str] | None = None
        self._link: list[str] | None = None  # the text of a link to another entry

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "pre":
            self._code, self._language = [], "text"
        elif tag == "code" and self._code is not None:
            self._language = (found.get("class") or "language-text").removeprefix("language-")
        elif tag == "details":
            self.out.append('<ac:structured-macro ac:name="expand">')
        elif tag == "summary":
            self._summary = []
        elif tag == "a" and (href := found.get("href") or "").endswith(_PAGE_LINK):
            title = self.titles.get(href.removesuffix(_PAGE_LINK), href.removesuffix(_PAGE_LINK))
            self.out.append(f'<ac:link><ri:page ri:content-title="{escape(title)}" />')
            self._link = []
        elif tag == "a":
            self.out.append(f'<a href="{escape(found.get("href") or "")}">')
        elif tag in _EMPTY:
            self.out.append(f"<{tag} />")
        elif tag in _KEPT:
            self.out.append(f"<{tag}>")

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre" and self._code is not None:
            self.out.append(
                '<ac:structured-macro ac:name="code">'
                f'<ac:parameter ac:name="language">{escape(self._language)}</ac:parameter>'
                f"<ac:plain-text-body>{_cdata(''.join(self._code))}</ac:plain-text-body></ac:structured-macro>"
            )
            self._code = None
        elif tag == "code" and self._code is not None:
            return
        elif tag == "summary" and self._summary is not None:
            title = " ".join("".join(self._summary).split())
            self.out.append(f'<ac:parameter ac:name="title">{escape(title)}</ac:parameter><ac:rich-text-body>')
            self._summary = None
        elif tag == "details":
            self.out.append("</ac:rich-text-body></ac:structured-macro>")
        elif tag == "a" and self._link is not None:
            text = "".join(self._link)
            self.out.append(f"<ac:plain-text-link-body>{_cdata(text)}</ac:plain-text-link-body></ac:link>")
            self._link = None
        elif tag in _KEPT and tag not in _EMPTY:
            self.out.append(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        if self._code is not None:
            self._code.append(data)
        elif self._summary is not None:
            self._summary.append(data)
        elif self._link is not None:
            self._link.append(data)
        else:
            self.out.append(escape(data, quote=False))
