"""One self-contained HTML snippet per entry, to paste into a wiki that takes HTML (Confluence's HTML
macro, Notion's embed) or to serve for an iframe.

A snippet is the wiki page rendered by Python-Markdown, then cleaned by nh3 (the Ammonia sanitizer) to
an allowlist of tags, attributes and URL schemes: a team's entry is text from anywhere, and a wiki that
shows the snippet runs whatever it contains. The only style is a `<style>` block added after cleaning,
every rule scoped to the snippet's own class so it cannot restyle the page around it; nothing is loaded
from anywhere. Error messages wrap, so the argument and the kernel at the end of a long one stay in
sight; code keeps its lines and scrolls.
"""

from __future__ import annotations

from collections.abc import Iterable

import markdown
import nh3

from fixer.kb.schema import Entry
from fixer.output.markdown import FRONT_TITLE, entry_page, gfm, index_page

INDEX = "index.html"

_FLAVOUR = gfm(link=lambda entry_id: f"{entry_id}.html", details_attributes=' markdown="1"')
_TAGS = {
    "a", "blockquote", "br", "code", "details", "em", "h1", "h2", "h3", "hr", "li", "ol", "p", "pre",
    "strong", "summary", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
_ATTRIBUTES = {"a": {"href", "title"}, "code": {"class"}, "td": {"align"}, "th": {"align"}}
_STYLE = """<style>
.fixer-entry { font-family: system-ui, sans-serif; line-height: 1.5; max-width: 60rem; }
.fixer-entry pre { background: #f6f8fa; padding: .75em; overflow-x: auto; white-space: pre; }
.fixer-entry pre code.language-text { white-space: pre-wrap; overflow-wrap: anywhere; }
.fixer-entry code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em; }
.fixer-entry blockquote { border-left: .25em solid #d0d7de; margin: 1em 0; padding: 0 1em; }
.fixer-entry details { margin: .5em 0; }
.fixer-entry summary { cursor: pointer; overflow-wrap: anywhere; }
.fixer-entry table { border-collapse: collapse; }
.fixer-entry td, .fixer-entry th { border: 1px solid #d0d7de; padding: .25em .5em; }
</style>"""


def entry_snippet(entry: Entry) -> str:
    return _snippet(entry_page(entry, _FLAVOUR), f"fixer-{entry.id}")


def index_snippet(entries: Iterable[Entry]) -> str:
    """The folder's front page: every entry by title, linking to its snippet, and by library and op."""
    return _snippet(index_page(entries, link=_FLAVOUR.link, title=FRONT_TITLE), "fixer-index")


def _snippet(page: str, anchor: str) -> str:
    return f'<div class="fixer-entry" id="{anchor}">\n{_STYLE}\n{clean_html(page)}\n</div>\n'


def clean_html(page: str) -> str:
    """A page's Markdown as HTML cut down to the allowlist: what any export that takes HTML may show."""
    body = markdown.markdown(page, extensions=["fenced_code", "tables", "md_in_html"])
    return nh3.clean(
        body,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes={"https", "http"},
        link_rel="noopener noreferrer",
    )


def html_snippets(entries: Iterable[Entry]) -> dict[str, str]:
    """File name -> HTML; related entries link to each other's files and `index.html` lists them all, so
    the folder can be served as is."""
    entries = sorted(entries, key=lambda e: e.id)
    return {**{f"{entry.id}.html": entry_snippet(entry) for entry in entries}, INDEX: index_snippet(entries)}
