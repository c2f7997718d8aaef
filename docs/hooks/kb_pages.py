"""MkDocs hook: the entry pages, their embeddable views, the index, the CLI and JSON references, generated at
build time from kb/*.yaml and the package itself, so the site always says what the tool says."""

from __future__ import annotations

import argparse
import html
import json
import os
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.utils import get_relative_url

from fixer.cli import build_parser
from fixer.explain.detectors import registered
from fixer.kb.catalog import Catalog, load
from fixer.kb.schema import Entry
from fixer.output.export import matcher_data
from fixer.output.kb_document import KBDocument
from fixer.output.markdown import entry_page, index_page, training_page
from fixer.output.report import schema as explain_schema
from fixer.training import exercises

# A wiki shows an entry in an iframe: the page alone (docs/overrides/embed.html drops header, navigation,
# search and footer), and kept out of the search index, where it would duplicate the entry page.
EMBED_FRONT_MATTER = "---\ntemplate: embed.html\nsearch:\n  exclude: true\n---\n\n"


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """`FIXER_SITE_FROM_DISK=1 mkdocs build` makes a copy to open from disk (file://), for an intranet share
    or a zipped handout: pages link to `page.html` files, since a link to a folder opens its listing there."""
    if os.environ.get("FIXER_SITE_FROM_DISK"):
        config.use_directory_urls = False
    return config


def on_post_build(config: MkDocsConfig) -> None:
    """From disk, material reads the search index as a script (search/search_index.js), not by fetch()."""
    index = Path(config.site_dir) / "search" / "search_index.json"
    if os.environ.get("FIXER_SITE_FROM_DISK") and index.is_file():
        index.with_suffix(".js").write_text(f"var __index = {index.read_text(encoding='utf-8')};\n", encoding="utf-8")


def on_files(files: Files, config: MkDocsConfig) -> Files:
    root = Path(config.config_file_path).parent
    catalog = load(root / "kb", strict=True)
    urls = {}
    for entry in catalog:
        page = entry_page(entry)
        embed = File.generated(config, f"embed/{entry.id}.md", content=EMBED_FRONT_MATTER + page)
        view = File.generated(config, f"entries/{entry.id}.md", content=page)
        view.content_string = page + "\n" + _embed_section(entry, get_relative_url(embed.url, view.url))
        files.append(view)
        files.append(embed)
        urls[entry.id] = view.url
    files.append(File.generated(config, "entries/index.md", content=index_page(catalog)))
    files.append(File.generated(config, "cli.md", content=_cli_page()))
    files.append(File.generated(config, "json.md", content=_json_page()))
    files.append(File.generated(config, "detectors.md", content=_detectors_page(catalog)))
    files.append(File.generated(config, "messages.md", content=_messages_page(catalog)))
    files.append(File.generated(config, "training.md", content=training_page(exercises(catalog))))
    # The home page's paste box ranks in the browser from this (docs/javascripts/fixer-match.js), read as a
    # classic script (docs/javascripts/kb-data.js), which a page opened from disk can load where fetch() fails.
    data = json.dumps(matcher_data(catalog, urls), ensure_ascii=False, separators=(",", ":"))
    files.append(File.generated(config, "assets/fixer-kb.js", content=f"globalThis.fixerKB = {data};\n"))
    return files


def _embed_section(entry: Entry, embed_url: str) -> str:
    """Only the browser knows the address the site is served from, so the snippet carries the embed view's
    address relative to the entry page and docs/javascripts/embed-snippet.js makes it absolute for copying."""
    title = html.escape(entry.title, quote=False).replace('"', "&quot;")
    iframe = f'<iframe src="{embed_url}" title="{title}" width="100%" height="800" loading="lazy"></iframe>'
    return (
        f"## Embed this entry\n\nThe [embed view](../embed/{entry.id}.md) is this entry alone, without the site's "
        "header, navigation or search. To show it in a wiki page or a dashboard, paste this where HTML is allowed:"
        f'\n\n<pre class="fixer-embed" data-search-exclude><code data-fixer-embed="{embed_url}">'
        f"{html.escape(iframe, quote=False)}</code></pre>\n"
    )


def _detectors_page(catalog: Catalog) -> str:
    """Each detector, what it reads and finds, and the entries it speaks for (with the points it gives)."""
    rows = []
    for detector in registered().values():
        uses = [
            f"[{entry.id}](entries/{entry.id}.md) ({rule.weight:+d})"
            for entry in catalog
            for rule in entry.evidence
            if rule.when.detector == detector.id
        ]
        finds = detector.finds.replace("[", "\\[").replace("]", "\\]").replace("|", "\\|")
        rows.append(f"| `{detector.id}` | {detector.reads} | {finds} | {', '.join(uses)} |")
    return (
        # Ranked low in the search, which is for error text: an entry, not this page, should come first.
        "---\nsearch:\n  boost: 0.1\n---\n\n"
        "# Detectors\n\nA detector reads your code, never runs it, and reports one fact about it; entries name the "
        "detectors that support them (positive points) or rule them out (negative). They read the failing lines a "
        "traceback prints and, when the traceback came from your machine, your files around those lines, so "
        "`fixer explain` uses them and the paste box on the home page, which sees only text, does not.\n\n"
        "| detector | reads | finds | entries |\n|---|---|---|---|\n" + "\n".join(rows) + "\n"
    )


def _messages_page(catalog: Catalog) -> str:
    """The device messages PyTorch and the libraries built on it raise (kb/messages/), each with the
    causes behind it: searching the site for a wording finds the page even where no entry quotes that
    wording, after the entries that do."""
    rows = []
    for message in catalog.sources:
        text = html.escape(message.key.replace("{}", "…"), quote=False).replace("|", "&#124;")
        where = html.escape(message.where, quote=False).replace("|", "&#124;")
        causes = (
            ", ".join(f"[{entry_id}](entries/{entry_id}.md)" for entry_id in message.entries)
            if message.entries
            else "not in the KB yet: " + html.escape(message.outside or "", quote=False).replace("|", "&#124;")
        )
        rows.append(
            f"| <code>{text}</code> | {message.raised} | {message.library} | <code>{where}</code> "
            f"| {', '.join(message.versions)} | {causes} |"
        )
    covered = sum(bool(m.entries) for m in catalog.sources)
    libraries = sorted({m.library for m in catalog.sources} - {"pytorch"})
    return (
        # Below the entries in the search: a wording's entry, not this list, should come first.
        "---\nsearch:\n  boost: 0.1\n---\n\n"
        "# PyTorch's messages\n\nThe device-placement messages PyTorch raises itself, read from its source by "
        "`tools/extract_messages.py` (the 1.13.1 and 2.6.0 sources and the 2.13.0 wheel), and those of the "
        f"libraries built on it that users run ({', '.join(libraries)}: their packages and extension kernels), "
        f"with the file that raises each and the causes behind it. {covered} of {len(catalog.sources)} name a "
        "cause in the KB; `…` stands for a value the code splices in (a device, an argument's name).\n\n"
        "| message | raised as | by | raised in | versions | causes |\n|---|---|---|---|---|---|\n"
        + "\n".join(rows)
        + "\n"
    )


def _cli_page() -> str:
    parser = build_parser()
    parts = ["# Command line", "Every command also answers `--help`.", "```text\n" + parser.format_help() + "```"]
    for action in parser._subparsers._group_actions if parser._subparsers else []:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                parts.append(f"## fixer {name}\n\n```text\n{sub.format_help()}```")
    return "\n\n".join(parts) + "\n"


def _json_page() -> str:
    schema = json.dumps(explain_schema(), indent=2)
    export = json.dumps(KBDocument.model_json_schema(), indent=2)
    return (
        "# JSON output\n\n`fixer explain --json` prints one object of this shape (JSON Schema). Fields may be "
        "added; none is renamed or removed.\n\n```json\n" + schema + "\n```\n\n"
        "## The KB as one document\n\n`fixer export --format json -o DIR` writes `fixer-kb.json` (`-o -`: "
        "stdout): every entry, team entries included, each with its `origin`. `format` is bumped when a field is "
        "renamed or removed.\n\n```json\n" + export + "\n```\n"
    )
