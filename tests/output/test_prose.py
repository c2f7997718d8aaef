"""KB prose as the terminal lays it out from the blocks the index keeps, and code coloured without
changing a character of it."""

from __future__ import annotations

import json
import re

from rich.console import Console

from fixer.kb.catalog import Catalog
from fixer.output import highlight, prose


def _plain(markdown: str, width: int = 60) -> str:
    console = Console(width=width, color_system=None, file=None, record=True, force_terminal=False)
    with console.capture() as captured:
        console.print(prose.render(prose.parse(markdown)), crop=False)
    return captured.get()


def test_inline_marks_become_styles_and_their_markers_go() -> None:
    blocks = prose.parse("Move `x` with **care** and *now*; see [the docs](https://pytorch.org/docs).")
    assert blocks == [
        {
            "prefix": "",
            "spans": [
                ["Move ", ""],
                ["x", prose.CODE_STYLE],
                [" with ", ""],
                ["care", "bold"],
                [" and ", ""],
                ["now", "italic"],
                ["; see ", ""],
                ["the docs", "underline"],
                [" (https://pytorch.org/docs)", "dim"],
                [".", ""],
            ],
            "gap": True,
        }
    ]


def test_lists_hang_under_their_markers_and_paragraphs_keep_a_blank_line() -> None:
    text = "First paragraph.\n\n- one item that is long enough to wrap at this width\n- two\n\n1. first\n2. second"
    assert _plain(text, width=30) == (
        "First paragraph.\n\n• one item that is long enough\n  to wrap at this width\n• two\n\n1. first\n2. second\n"
    )


def test_a_code_block_keeps_its_lines_as_written() -> None:
    text = "Before:\n\n```python\nx = torch.zeros(3)   # on the CPU\n\ty = x\n```"
    assert _plain(text, width=20).splitlines()[2:] == ["x = torch.zeros(3)   # on the CPU", "\ty = x"]


def test_every_entry_s_prose_survives_the_index_as_json(catalog: Catalog) -> None:
    for entry in catalog:
        for field in (entry.meaning, entry.cause, entry.fix.summary):
            blocks = prose.parse(field)
            assert json.loads(json.dumps(blocks)) == blocks
            words = " ".join("".join(text for text, _ in block.get("spans", [])) for block in blocks)
            assert _words(words) >= _words(field) - {"-", ">"}, entry.id


def _words(text: str) -> set[str]:
    """The words of a text, its Markdown markers left out."""
    return set(text.replace("`", "").replace("*", "").split())


def test_highlighting_styles_the_code_and_changes_no_character() -> None:
    code = 'def f(self, x):\n    """doc"""\n    return x + 1  # note\n@decorated\nclass C: pass\n\tbad = (1,'
    text = highlight.python(code)
    assert text.plain == code
    styled = {code[span.start : span.end]: str(span.style) for span in text.spans}
    assert styled["def"] == "magenta" and styled["f"] == "green" and styled["self"] == "cyan"
    assert styled['"""doc"""'] == "green" and styled["1"] == "cyan" and styled["# note"] == "bright_black"


def test_python_code_is_highlighted_for_a_colour_console_only() -> None:
    code = "def f(x):\n    return x.cuda()  # moved"
    for colour, escapes in (("truecolor", True), (None, False)):
        console = Console(color_system=colour, force_terminal=colour is not None, width=80)
        with console.capture() as captured:
            console.print(prose.CodeLines(code), crop=False)
        out = captured.get()
        assert ("\x1b[" in out) is escapes
        assert re.sub(r"\x1b\[[0-9;]*m", "", out) == code + "\n"
