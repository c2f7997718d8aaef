"""The KB's Markdown prose as the terminal shows it: parsed by markdown-it where an entry is read from
YAML (when the index is built, or for a view of a whole entry), kept in the index as blocks of styled
spans, and laid out with rich. `fixer explain` renders a card from those blocks, without importing a
Markdown parser, which would cost it a tenth of a second on every run.

A block is JSON, as the index stores it: `{"prefix": "1. ", "spans": [[text, style], ...], "gap": true}`
for text (a paragraph, heading, list item or quote; the prefix is the list marker or the quote bar) or
`{"code": "...", "gap": true}` for a code block; `gap` puts a blank line after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.segment import Segment
from rich.text import Text

from fixer.output import highlight

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

Block = dict[str, Any]

CODE_STYLE = "bold cyan"
_OPEN = {"strong_open": "bold", "em_open": "italic", "s_open": "strike", "link_open": "underline"}


def parse(markdown: str) -> list[Block]:
    """The blocks of a Markdown text, as `render` lays them out."""
    blocks: list[Block] = []
    lists: list[list[Any]] = []  # per open list: [ordered, the next number, tight]
    quotes = 0
    marker = ""  # the list marker the next line of text starts with
    heading = False
    for token in _parser().parse(markdown.strip()):
        kind = token.type
        if kind in ("bullet_list_open", "ordered_list_open"):
            lists.append([kind == "ordered_list_open", int(token.attrGet("start") or 1), True])
        elif kind in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
            if blocks:
                blocks[-1]["gap"] = not lists
        elif kind == "list_item_open":
            ordered, number, _ = lists[-1]
            marker = f"{number}. " if ordered else "• "
            lists[-1][1] += 1
        elif kind == "paragraph_open" and lists and not token.hidden:
            lists[-1][2] = False  # a loose list: a blank line between its items
        elif kind in ("blockquote_open", "blockquote_close"):
            quotes += 1 if kind == "blockquote_open" else -1
        elif kind in ("heading_open", "heading_close"):
            heading = kind == "heading_open"
        elif kind == "inline":
            indent = "  " * max(len(lists) - 1, 0) + (marker or ("   " if lists else ""))
            spans = _spans(token.children or [])
            if heading:
                spans = [[text, f"bold {style}".strip()] for text, style in spans]
            blocks.append({"prefix": "▌ " * quotes + indent, "spans": spans, "gap": not lists or not lists[-1][2]})
            marker = ""
        elif kind in ("fence", "code_block"):
            blocks.append({"code": token.content.rstrip("\n"), "gap": True})
        elif kind == "hr":
            blocks.append({"prefix": "", "spans": [["───", "dim"]], "gap": True})
        elif kind == "html_block":
            blocks.append({"prefix": "", "spans": [[token.content.rstrip("\n"), ""]], "gap": True})
    return blocks


@cache
def _parser() -> MarkdownIt:
    """One parser for every text: making one costs more than parsing a card's prose with it."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")


def _spans(children: Sequence[Token]) -> list[list[str]]:
    """Inline tokens as [text, style] pairs, neighbours of one style merged."""
    spans: list[list[str]] = []
    styles: list[str] = []
    links: list[str] = []

    def add(text: str, style: str) -> None:
        if spans and spans[-1][1] == style:
            spans[-1][0] += text
        elif text:
            spans.append([text, style])

    for child in children:
        kind = child.type
        if kind in _OPEN:
            styles.append(_OPEN[kind])
            if kind == "link_open":
                links.append(str(child.attrGet("href") or ""))
        elif kind == "link_close":
            styles.pop()
            href = links.pop()
            if href and not (spans and spans[-1][0].endswith(href)):  # a bare URL is not written twice
                add(f" ({href})", "dim")
        elif kind.endswith("_close"):
            styles.pop()
        elif kind == "code_inline":
            add(child.content, CODE_STYLE)
        elif kind == "softbreak":
            add(" ", " ".join(styles))
        elif kind == "hardbreak":
            add("\n", " ".join(styles))
        else:  # text, an image's alt text, inline HTML: as written
            add(child.content, " ".join(styles))
    return spans


def render(blocks: Sequence[Block]) -> Group:
    parts: list[RenderableType] = []
    for number, block in enumerate(blocks):
        if "code" in block:
            parts.append(CodeLines(block["code"]))
        else:
            text = Text.assemble(*((text, style or "") for text, style in block["spans"]))
            parts.append(Hanging(block["prefix"], text) if block["prefix"] else text)
        if block["gap"] and number < len(blocks) - 1:
            parts.append(Text())
    return Group(*parts)


class Hanging:
    """A block moved right by its prefix, which its first line shows (a list marker) and the others
    leave blank; lines are not padded to the width, so a file gets no trailing spaces."""

    def __init__(self, prefix: str, renderable: RenderableType) -> None:
        self.prefix, self.renderable = prefix, renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        inner = options.update_width(max(options.max_width - len(self.prefix), 1))
        lead = self.prefix
        for line in Segment.split_lines(console.render(self.renderable, inner)):
            while line and not line[-1].text.strip() and not line[-1].control:
                line.pop()
            if line:
                line[-1] = Segment(line[-1].text.rstrip(" "), line[-1].style)
                yield Segment(lead)
                yield from line
            yield Segment.line()
            lead = " " * len(self.prefix)


class CodeLines:
    """Code line for line: no wrapping, cropping or tab expansion; the styles are kept.

    `code` is styled text, or Python source, highlighted only for a console that shows colour: the
    tokenizer compiles its regexes the first time it runs, a cost a pipe or `--color never` need not pay.
    Console.print crops what is wider than the terminal unless told not to: `render.console()` tells it."""

    def __init__(self, code: Text | str) -> None:
        self.code = code

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        code = self.code
        if isinstance(code, str):
            code = highlight.python(code) if console.color_system and not console.no_color else Text(code)
        for line in code.split("\n", allow_blank=True):
            yield from line.render(console)
            yield Segment.line()
