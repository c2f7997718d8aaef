"""A team's own entries join the built-in KB: new ids are added, a built-in id is taken only by an entry
that says `overrides: true`, and the lint, `fixer explain` and the site all read the merged KB."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fixer.cli import NO_MATCH, OK, main
from fixer.kb.catalog import KBError, load, team_dirs
from fixer.kb.lint import lint

ROOT = Path(__file__).resolve().parents[2]
KB = ROOT / "kb"
TEAM = Path(__file__).parent / "team"  # one new entry: a cause the built-in KB does not cover
NEW = "cuda-out-of-memory"
TEAM_TITLE = "The model stays on the CPU because our launcher never calls .to()"


def _team_copy(directory: Path, entry_id: str, **changes: object) -> Path:
    """A built-in entry as a team would adapt it: the same cause, their own title, maybe an override."""
    directory.mkdir(parents=True, exist_ok=True)
    data = yaml.safe_load((KB / f"{entry_id}.yaml").read_text())
    data.update(changes)
    path = directory / f"{entry_id}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


@pytest.fixture
def overriding(tmp_path: Path) -> Path:
    directory = tmp_path / "overriding"
    _team_copy(directory, "model-not-moved", title=TEAM_TITLE, overrides=True)
    return directory


def test_a_new_and_an_overriding_entry_join_the_built_in_kb(overriding):
    catalog = load(KB, team=[TEAM, overriding], strict=True)
    assert len(catalog) == len(load(KB, team=[])) + 1
    assert catalog.get(NEW) is not None
    assert catalog.get("model-not-moved").title == TEAM_TITLE
    assert catalog.team == {NEW, "model-not-moved"}
    assert catalog.files["model-not-moved"] == overriding / "model-not-moved.yaml"


def test_a_merged_team_kb_lints_clean(overriding):
    entries, problems = lint(KB, [TEAM, overriding])
    assert problems == []
    assert {e.id for e in entries} >= {NEW, "model-not-moved"}
    assert next(e for e in entries if e.id == "model-not-moved").title == TEAM_TITLE


def test_taking_a_built_in_id_without_overrides_is_refused(tmp_path):
    path = _team_copy(tmp_path / "team", "model-not-moved", title=TEAM_TITLE)
    catalog = load(KB, team=[path.parent])
    assert catalog.get("model-not-moved").title != TEAM_TITLE
    assert len(catalog.problems) == 1
    assert catalog.problems[0].startswith(f"{path}: id 'model-not-moved' is already defined by {KB}")
    assert "overrides: true" in catalog.problems[0]
    with pytest.raises(KBError, match="overrides: true"):
        load(KB, team=[path.parent], strict=True)
    _, problems = lint(KB, [path.parent])
    assert [(p.file, "overrides: true" in p.message) for p in problems] == [(str(path), True)]


def test_two_team_directories_cannot_both_define_an_id(tmp_path):
    first = _team_copy(tmp_path / "a", "model-not-moved", id="our-launcher", title=TEAM_TITLE)
    first.rename(first.with_name("our-launcher.yaml"))
    second = _team_copy(tmp_path / "b", "model-not-moved", id="our-launcher")
    second.rename(second.with_name("our-launcher.yaml"))
    catalog = load(KB, team=[tmp_path / "a", tmp_path / "b"])
    assert catalog.get("our-launcher").title == TEAM_TITLE
    assert [p.split(": ")[0] for p in catalog.problems] == [str(tmp_path / "b" / "our-launcher.yaml")]


def test_an_override_of_nothing_is_a_lint_problem(tmp_path):
    path = _team_copy(tmp_path / "team", "model-not-moved", id="our-launcher", overrides=True)
    path = path.rename(path.with_name("our-launcher.yaml"))
    _, problems = lint(KB, [path.parent])
    assert any(p.file == str(path) and "no entry before it has id 'our-launcher'" in p.message for p in problems)


def test_the_environment_lists_team_directories_before_the_command_line(monkeypatch, tmp_path):
    monkeypatch.setenv("FIXER_KB_PATH", os.pathsep.join(["/srv/kb-a", "", "/srv/kb-b"]))
    assert team_dirs(["team"]) == (Path("/srv/kb-a"), Path("/srv/kb-b"), Path("team"))


@pytest.fixture
def team_traceback(tmp_path: Path) -> str:
    path = tmp_path / "train.log"
    path.write_text(yaml.safe_load((TEAM / f"{NEW}.yaml").read_text())["examples"][0]["traceback"])
    return str(path)


@pytest.mark.parametrize("how", ["option", "environment"])
def test_explain_reads_the_team_entries(how, team_traceback, monkeypatch, capsys):
    if how == "environment":
        monkeypatch.setenv("FIXER_KB_PATH", str(TEAM))
    argv = ["explain", "--json", team_traceback]
    assert main(["--kb", str(TEAM), *argv] if how == "option" else argv) == OK
    assert f'"id": "{NEW}"' in capsys.readouterr().out


def test_explain_without_the_team_kb_does_not_know_the_team_entry(team_traceback, capsys):
    assert main(["explain", "--json", team_traceback]) == NO_MATCH
    assert NEW not in capsys.readouterr().out


def test_kb_lint_names_the_refused_team_file_and_exits_1(tmp_path, capsys):
    path = _team_copy(tmp_path / "team", "model-not-moved")
    assert main(["kb", "lint", "--kb", str(path.parent)]) == NO_MATCH
    out = capsys.readouterr().out
    assert f"{path}: id 'model-not-moved' is already defined by" in out
    assert out.splitlines()[-1] == f"{len(load(KB, team=[]))} entries, 1 problem(s)"


def test_a_missing_team_directory_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["--kb", str(tmp_path / "nowhere"), "list"]) == 2
    assert capsys.readouterr().err == f"fixer: no knowledge base at {tmp_path / 'nowhere'}\n"


def test_the_site_has_pages_for_team_entries(tmp_path, overriding):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "FIXER_KB_PATH": os.pathsep.join([str(TEAM), str(overriding)])}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "CUDA out of memory" in (tmp_path / "site" / "entries" / NEW / "index.html").read_text()
    assert TEAM_TITLE in (tmp_path / "site" / "entries" / "model-not-moved" / "index.html").read_text()
