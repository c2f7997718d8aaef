"""What the terminal renderer writes to a pipe or a file: no boxes, no trailing spaces, and code that
comes out line for line whatever the width."""

from __future__ import annotations

import re

import pytest

from fixer.cli import main
from fixer.kb.catalog import Catalog, load

ENTRY_IDS = sorted(e.id for e in load())


def _block(lines: list[str], title: str, length: int) -> list[str]:
    start = lines.index(f"{title}:") + 1
    return lines[start : start + length]


def _code_lines(code: str) -> list[str]:
    return code.rstrip("\n").split("\n")


@pytest.mark.parametrize("entry_id", ENTRY_IDS)
@pytest.mark.parametrize("columns", ["40", "200"])
def test_explain_in_a_pipe_is_plain_and_its_code_is_the_entry_code(
    entry_id, columns, catalog, matcher, capsys, monkeypatch
):
    monkeypatch.setenv("COLUMNS", columns)
    main(["explain", "--example", entry_id, "--no-input"])
    out = capsys.readouterr().out
    lines = out.splitlines()
    example = catalog.get(entry_id).examples[0].traceback
    shown = matcher.explain(example).matches[0].entry  # the example's first place, whose fix is shown
    for title, code in (("before", shown.fix.before), ("after", shown.fix.after)):
        assert _block(lines, title, len(_code_lines(code))) == _code_lines(code)
    assert [line for line in lines if line != line.rstrip()] == [], "trailing spaces in a pipe"
    assert not set("╭╮╰╯│─") & set(out), "box drawing in a pipe"


def test_show_prints_code_line_for_line_too(catalog: Catalog, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "30")
    for entry in catalog:
        main(["show", entry.id])
        lines = capsys.readouterr().out.splitlines()
        assert _block(lines, "after", len(_code_lines(entry.fix.after))) == _code_lines(entry.fix.after), entry.id


def test_colour_always_draws_boxes_and_colour_but_never_wraps_code(capsys, monkeypatch, catalog: Catalog):
    monkeypatch.setenv("COLUMNS", "40")
    main(["explain", "--example", "optimizer-state-after-resume", "--color", "always"])
    out = capsys.readouterr().out
    assert "\x1b[" in out and "╭─ Most likely cause" in re.sub(r"\x1b\[[0-9;]*m", "", out)
    entry = catalog.get("optimizer-state-after-resume")
    assert entry is not None
    comment = max(entry.fix.before.splitlines(), key=len).split("#", 1)[1]
    assert any(line.endswith(f"#{comment}\x1b[0m") for line in out.splitlines()), "a code line was wrapped"


def test_a_device_message_nothing_reads_is_said_to_be_probably_outside_the_kb(tmp_path, capsys):
    # https://github.com/MahmoudAshraf97/whisper-diarization/pull/284: no signature, case or count reads it
    log = tmp_path / "crash.log"
    log.write_text("NotImplementedError: Output channels > 65536 not supported at the MPS device.\n")
    assert main(["explain", str(log), "--no-input"]) == 1  # for a script, still no entry matches it
    said = " ".join(capsys.readouterr().out.split())
    assert "Probably not in the KB" in said and "Nothing in the KB reads this message" in said
    assert "Most likely cause" not in said and "Worded most like the cases of" in said
    assert main(["patch", str(log)]) == 1  # and nothing is patched on a cause it was only worded like
