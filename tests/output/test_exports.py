"""The wiki, the HTML snippets and the JSON document are made from the merged KB and hold up where they
land: wiki links resolve between pages, snippets carry no script and load nothing, the JSON validates
against its published schema."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag
from xml.etree import ElementTree

import jsonschema
import pytest
from markdown_it import MarkdownIt

from fixer.kb.catalog import Catalog, load
from fixer.kb.schema import Entry
from fixer.output.confluence import confluence_pages
from fixer.output.kb_document import KBDocument, kb_document
from fixer.output.markdown import FRONT_TITLE
from fixer.output.notion import notion_pages, notion_zip
from fixer.output.snippets import INDEX, entry_snippet, html_snippets
from fixer.output.wiki import HOME, MKDOCS_HOME, SIDEBAR, mkdocs_pages, wiki_pages

ROOT = Path(__file__).resolve().parents[2]
TEAM = ROOT / "tests" / "kb" / "team"


def _links(markdown: str) -> list[str]:
    """The link targets a CommonMark renderer (GitHub's dialect is a superset) finds, code left out."""
    tokens = MarkdownIt("commonmark").parse(markdown)
    inline = [child for token in tokens for child in token.children or []]
    return [str(child.attrGet("href")) for child in inline if child.type == "link_open"]


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.style = ""
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.style += data

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False


def _tags(snippet: str) -> _Tags:
    parser = _Tags()
    parser.feed(snippet)
    return parser


@pytest.fixture(scope="module")
def merged() -> Catalog:
    return load(ROOT / "kb", team=[TEAM], strict=True)


def test_the_wiki_has_a_page_per_entry_a_home_and_a_sidebar(merged):
    pages = wiki_pages(merged)
    assert set(pages) == {f"{e.id}.md" for e in merged} | {f"{HOME}.md", f"{SIDEBAR}.md"}
    assert "cuda-out-of-memory.md" in pages  # the team's entry too


def test_every_wiki_link_names_a_page_of_the_wiki(merged):
    pages = wiki_pages(merged)
    names = {name.removesuffix(".md") for name in pages}
    for name, text in pages.items():
        for target in _links(text):
            if not target.startswith("https://"):
                assert target in names, f"{name} links to {target}"
    sidebar = _links(pages[f"{SIDEBAR}.md"])
    assert sorted(sidebar) == sorted([HOME, *(e.id for e in merged)])


def _broken_links(site: Path) -> list[str]:
    """Each relative link in a built site's pages that leads to no page or file of it."""
    broken = []
    for page in site.rglob("*.html"):
        for href in re.findall(r'<a [^>]*href="([^"]+)"', page.read_text(encoding="utf-8")):
            target = urldefrag(href)[0]
            if not target or target.startswith("/") or re.match(r"[a-z]+:", target):
                continue  # the page itself, the 404 page's site-absolute links, other sites
            path = (page.parent / unquote(target)).resolve()
            if not (path.is_file() or (path / "index.html").is_file()):
                broken.append(f"{page.relative_to(site)} -> {href}")
    return broken


def _built(pages: dict[str, str], root: Path) -> Path:
    """The pages as a team's own MkDocs site (Material, md_in_html) builds them with --strict."""
    for name, text in pages.items():
        (root / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "docs" / name).write_text(text, encoding="utf-8")
    config = "site_name: Team KB\ntheme:\n  name: material\nmarkdown_extensions:\n  - md_in_html\n"
    (root / "mkdocs.yml").write_text(config)
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(root / "mkdocs.yml")],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return root / "site"


def test_a_mkdocs_site_builds_strict_from_the_mkdocs_export_with_every_link_resolving(merged, tmp_path):
    pytest.importorskip("mkdocs")
    pages = mkdocs_pages(merged)
    assert set(pages) == {f"{e.id}.md" for e in merged} | {f"{MKDOCS_HOME}.md"}
    site = _built(pages, tmp_path / "mkdocs")
    assert _broken_links(site) == []
    assert (site / "cuda-out-of-memory" / "index.html").is_file()  # the team's entry too
    # the check can fail: the wiki's links, by page name, lead nowhere in a MkDocs site
    assert _broken_links(_built(wiki_pages(merged), tmp_path / "wiki"))


def test_wiki_pages_are_plain_github_markdown(merged):
    """No mkdocs-material syntax, which a wiki shows as text; every example traceback ends up in a code
    block when a CommonMark renderer (GitHub's dialect is a superset) reads the page."""
    renderer = MarkdownIt("commonmark")
    for entry in merged:
        text = wiki_pages([entry])[f"{entry.id}.md"]
        assert not re.search(r"^\s*(?:!!!|\?\?\?|===) ", text, re.M), entry.id
        rendered = renderer.render(text)
        for example in entry.examples:
            first_line = example.traceback.strip().splitlines()[0]
            escaped = first_line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
            assert re.search(r"<pre><code[^>]*>[^<]*" + re.escape(escaped), rendered), (entry.id, first_line)


# What Notion's Markdown import makes blocks of; raw HTML it drops, so a page may hold none.
_NOTION_BLOCKS = {
    "heading_open", "heading_close", "paragraph_open", "paragraph_close", "inline", "fence", "code_block",
    "bullet_list_open", "bullet_list_close", "ordered_list_open", "ordered_list_close", "list_item_open",
    "list_item_close", "blockquote_open", "blockquote_close", "table_open", "table_close", "thead_open",
    "thead_close", "tbody_open", "tbody_close", "tr_open", "tr_close", "th_open", "th_close", "td_open",
    "td_close", "hr",
}  # fmt: skip
_NOTION_INLINE = {
    "text", "code_inline", "softbreak", "hardbreak", "strong_open", "strong_close", "em_open", "em_close",
    "link_open", "link_close",
}  # fmt: skip


def test_a_notion_import_is_a_front_page_with_the_entries_as_its_sub_pages(merged):
    pages = notion_pages(merged)
    assert set(pages) == {f"{FRONT_TITLE}.md"} | {f"{FRONT_TITLE}/{e.id}.md" for e in merged}
    for name, text in pages.items():
        folder = Path(name).parent
        for target in _links(text):
            if not target.startswith("https://"):
                assert (folder / unquote(target)).as_posix() in pages, f"{name} links to {target}"
    front = _links(pages[f"{FRONT_TITLE}.md"])
    assert {unquote(t) for t in front} >= {f"{FRONT_TITLE}/{e.id}.md" for e in merged}


def test_notion_pages_hold_only_what_its_markdown_import_reads_and_open_with_their_title(merged):
    parser = MarkdownIt("commonmark").enable("table")
    for name, text in notion_pages(merged).items():
        tokens = parser.parse(text)
        assert tokens[0].type == "heading_open" and tokens[0].tag == "h1", name
        assert {t.type for t in tokens} <= _NOTION_BLOCKS, (name, {t.type for t in tokens} - _NOTION_BLOCKS)
        inline = {child.type for t in tokens for child in t.children or []}
        assert inline <= _NOTION_INLINE, (name, inline - _NOTION_INLINE)


def test_the_notion_zip_holds_the_pages_and_is_the_same_bytes_each_time(merged):
    import io
    import zipfile

    pages = notion_pages(merged)
    data = notion_zip(pages)
    assert data == notion_zip(pages)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.testzip() is None
        assert {n: archive.read(n).decode() for n in archive.namelist()} == pages


_LOADING = {"script", "img", "iframe", "link", "object", "embed", "source", "video", "audio", "picture", "frame"}


def test_html_snippets_have_no_script_and_load_nothing(merged):
    snippets = html_snippets(merged)
    assert set(snippets) == {f"{e.id}.html" for e in merged} | {INDEX}
    for name, snippet in snippets.items():
        found = _tags(snippet)
        assert not _LOADING & {tag for tag, _ in found.tags}, name
        attributes = {attribute for _, attrs in found.tags for attribute in attrs}
        assert not {a for a in attributes if a.startswith("on") or a in ("src", "srcset", "style")}, name
        assert [tag for tag, _ in found.tags].count("style") == 1, name
        assert "url(" not in found.style and "@import" not in found.style, name


def test_html_links_are_the_cited_sources_or_other_snippets(merged):
    snippets = html_snippets(merged)
    for entry in merged:
        sources = {str(example.source) for example in entry.examples}
        hrefs = [attrs.get("href") for tag, attrs in _tags(snippets[f"{entry.id}.html"]).tags if tag == "a"]
        for href in hrefs:
            assert href in sources or href in snippets, (entry.id, href)


def test_the_html_index_links_every_snippet_and_nothing_else(merged):
    snippets = html_snippets(merged)
    hrefs = [attrs.get("href") for tag, attrs in _tags(snippets[INDEX]).tags if tag == "a"]
    assert set(hrefs) == set(snippets) - {INDEX}


def test_a_hostile_team_entry_is_cleaned_out_of_its_snippet(merged):
    data = merged.get("cuda-out-of-memory").model_dump()
    data["summary"] = 'Bad <script>alert(1)</script> <img src=x onerror="alert(2)"> [x](javascript:alert(3)) end.'
    data["cause"] = '<iframe src="https://tracker.example/pixel"></iframe><style>body{display:none}</style> text'
    snippet = entry_snippet(Entry.model_validate(data))
    assert "alert" not in snippet
    assert "tracker.example" not in snippet
    assert "display:none" not in snippet
    assert "<iframe" not in snippet and "<img" not in snippet


# Confluence's storage format (https://confluence.atlassian.com/doc/confluence-storage-format-790796544.html):
# its XHTML elements, and the macro and link elements it documents, in their namespaces.
_AC, _RI = "http://atlassian.com/content", "http://atlassian.com/resource/identifier"
_STORAGE_ELEMENTS = {
    "a", "blockquote", "br", "code", "em", "h1", "h2", "h3", "hr", "li", "ol", "p", "strong", "table", "tbody",
    "td", "th", "thead", "tr", "ul",
    f"{{{_AC}}}structured-macro", f"{{{_AC}}}parameter", f"{{{_AC}}}plain-text-body", f"{{{_AC}}}rich-text-body",
    f"{{{_AC}}}link", f"{{{_AC}}}plain-text-link-body", f"{{{_RI}}}page",
}  # fmt: skip


def _storage_tree(body: str) -> ElementTree.Element:
    """A page body as Confluence reads it: XHTML in which the ac: and ri: prefixes are declared."""
    return ElementTree.fromstring(f'<page xmlns:ac="{_AC}" xmlns:ri="{_RI}">{body}</page>')


def test_confluence_pages_are_storage_format_with_examples_whole_and_links_by_title(merged):
    pages = confluence_pages(merged)
    assert set(pages) == {f"{e.id}.xml" for e in merged} | {"index.xml"}
    titles = {e.title for e in merged}
    for name, body in pages.items():
        tree = _storage_tree(body)
        assert {element.tag for element in tree.iter()} - {"page"} <= _STORAGE_ELEMENTS, name
        macros = {m.get(f"{{{_AC}}}name") for m in tree.iter(f"{{{_AC}}}structured-macro")}
        assert macros <= {"code", "expand"}, name
        linked = {page.get(f"{{{_RI}}}content-title") for page in tree.iter(f"{{{_RI}}}page")}
        assert linked <= titles, name
    index = _storage_tree(pages["index.xml"])
    assert {page.get(f"{{{_RI}}}content-title") for page in index.iter(f"{{{_RI}}}page")} == titles
    for entry in merged:
        code = [
            _unpadded(b.text or "") for b in _storage_tree(pages[f"{entry.id}.xml"]).iter(f"{{{_AC}}}plain-text-body")
        ]
        for example in entry.examples:
            assert any(_unpadded(example.traceback).strip("\n") in text for text in code), entry.id


def _unpadded(text: str) -> str:
    """Lines without trailing spaces, which Markdown's code blocks do not keep."""
    return "\n".join(line.rstrip() for line in text.split("\n"))


def test_a_hostile_team_entry_is_cleaned_out_of_its_confluence_page(merged):
    data = merged.get("cuda-out-of-memory").model_dump()
    data["summary"] = (
        'Bad <script>alert(1)</script> <ac:structured-macro ac:name="html">x</ac:structured-macro> ]]> end'
    )
    data["examples"][0]["traceback"] += "\nRuntimeError: text with ]]> inside a CDATA end\n"
    entry = Entry.model_validate(data)
    body = confluence_pages([entry])["cuda-out-of-memory.xml"]
    tree = _storage_tree(body)
    assert "alert" not in body and {m.get(f"{{{_AC}}}name") for m in tree.iter(f"{{{_AC}}}structured-macro")} <= {
        "code",
        "expand",
    }
    code = [_unpadded(b.text or "") for b in tree.iter(f"{{{_AC}}}plain-text-body")]
    assert any(_unpadded(entry.examples[0].traceback).strip("\n") in text for text in code)


def test_the_json_document_validates_against_its_published_schema(merged):
    document = json.loads(kb_document(merged).model_dump_json())
    jsonschema.validate(document, KBDocument.model_json_schema())
    assert [e["id"] for e in document["entries"]] == sorted(e.id for e in merged)
    origins = {e["id"]: e["origin"] for e in document["entries"]}
    assert origins["cuda-out-of-memory"] == "team" and origins["model-not-moved"] == "built-in"


def test_the_json_document_holds_each_entry_as_the_kb_does(merged):
    document = kb_document(merged)
    for exported in document.entries:
        fields = exported.model_dump(exclude={"origin"})
        assert Entry.model_validate(fields) == merged.get(exported.id)
