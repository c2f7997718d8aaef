"""MkDocs hook: the entry pages, the index, the CLI and JSON references, generated at build time from
kb/*.yaml and the package itself, so the site always says what the tool says."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

from fixer.catalog import load
from fixer.cli import build_parser
from fixer.export import matcher_data
from fixer.markdown import entry_page, index_page
from fixer.report import ExplainOut


def on_files(files: Files, config: MkDocsConfig) -> Files:
    root = Path(config.config_file_path).parent
    catalog = load(root / "kb", strict=True)
    for entry in catalog:
        files.append(File.generated(config, f"entries/{entry.id}.md", content=entry_page(entry)))
    files.append(File.generated(config, "entries/index.md", content=index_page(catalog)))
    files.append(File.generated(config, "cli.md", content=_cli_page()))
    files.append(File.generated(config, "json.md", content=_json_page()))
    # The home page's paste box ranks in the browser from this (docs/javascripts/fixer-match.js).
    data = json.dumps(matcher_data(catalog), ensure_ascii=False, separators=(",", ":"))
    files.append(File.generated(config, "assets/fixer-kb.json", content=data))
    return files


def _cli_page() -> str:
    parser = build_parser()
    parts = ["# Command line", "Every command also answers `--help`.", "```text\n" + parser.format_help() + "```"]
    for action in parser._subparsers._group_actions if parser._subparsers else []:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                parts.append(f"## fixer {name}\n\n```text\n{sub.format_help()}```")
    return "\n\n".join(parts) + "\n"


def _json_page() -> str:
    schema = json.dumps(ExplainOut.model_json_schema(), indent=2)
    return (
        "# JSON output\n\n`fixer explain --json` prints one object of this shape (JSON Schema). Fields may be "
        "added; none is renamed or removed.\n\n```json\n" + schema + "\n```\n"
    )
