"""`fixer export` writes each format into a directory from the merged KB, says what it wrote, and
refuses what it cannot do in one line."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from fixer.cli import OK, USAGE, main

TEAM = Path(__file__).resolve().parents[1] / "kb" / "team"


@pytest.mark.parametrize(
    ("form", "names", "said"),
    [
        ("wiki", {"Home.md", "_Sidebar.md", "cuda-out-of-memory.md", "model-not-moved.md"}, "wiki pages"),
        ("mkdocs", {"index.md", "cuda-out-of-memory.md", "model-not-moved.md"}, "MkDocs pages"),
        ("confluence", {"index.xml", "cuda-out-of-memory.xml", "model-not-moved.xml"}, "Confluence pages"),
        ("html", {"index.html", "cuda-out-of-memory.html", "model-not-moved.html"}, "HTML snippets"),
        ("json", {"fixer-kb.json"}, "JSON document"),
    ],
)
def test_each_format_is_written_with_the_team_entries(form, names, said, tmp_path, capsys, catalog):
    out = tmp_path / "out"
    assert main(["--kb", str(TEAM), "export", "--format", form, "-o", str(out)]) == OK
    written = {path.name for path in out.iterdir()}
    assert names <= written
    assert capsys.readouterr().err == f"wrote {len(written)} {said} to {out}\n"


def test_notion_gets_its_pages_and_the_zip_to_import(tmp_path, capsys, catalog):
    out = tmp_path / "out"
    assert main(["--kb", str(TEAM), "export", "--format", "notion", "-o", str(out)]) == OK
    assert (out / "PyTorch device errors" / "cuda-out-of-memory.md").is_file()
    assert (out / "PyTorch device errors.md").is_file() and (out / "fixer-kb-notion.zip").is_file()
    pages = len(list(out.rglob("*.md")))
    assert capsys.readouterr().err == f"wrote {pages} Notion pages to {out}, and fixer-kb-notion.zip to import them\n"


def test_json_goes_to_stdout_with_a_dash(capsys, catalog):
    assert main(["export", "--format", "json", "-o", "-"]) == OK
    document = json.loads(capsys.readouterr().out)
    assert len(document["entries"]) == len(catalog) and document["format"] == 1


def test_notebooks_are_written_and_the_entries_without_one_are_counted(tmp_path, capsys, catalog):
    assert main(["export", "--format", "notebooks", "-o", str(tmp_path)]) == OK
    notebooks = sorted(tmp_path.glob("*.ipynb"))
    cpu = [e for e in catalog if e.repro is not None and e.repro.needs == "cpu"]
    assert len(notebooks) == len(cpu)
    for path in notebooks:
        nbformat.validate(nbformat.read(path, as_version=4))
    left = len(catalog) - len(cpu)
    assert capsys.readouterr().err == (
        f"wrote {len(cpu)} notebooks to {tmp_path} ({left} entries have no repro that runs on a CPU)\n"
    )


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--format", "pdf", "-o", "x"], "argument --format: invalid choice: 'pdf'"),
        (["--format", "wiki"], "the following arguments are required: -o/--output"),
        (["--format", "wiki", "-o", "{file}"], "{file} is a file; -o takes the directory to write into"),
        (["--format", "html", "-o", "-"], "--format html writes many files: -o takes a directory"),
    ],
)
def test_bad_requests_are_one_line_and_exit_2(argv, error, tmp_path, capsys, monkeypatch):
    file = tmp_path / "taken.txt"
    file.write_text("mine\n")
    monkeypatch.chdir(tmp_path)
    argv = [part.replace("{file}", str(file)) for part in argv]
    assert main(["export", *argv]) == USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and error.replace("{file}", str(file)) in err
    assert file.read_text() == "mine\n"
