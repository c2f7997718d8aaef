from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fixer.kb.catalog import KBError, default_root, load
from fixer.kb.schema import Entry

ROOT = Path(__file__).resolve().parents[2]


def test_source_checkout_finds_its_kb(monkeypatch):
    monkeypatch.delenv("FIXER_KB", raising=False)
    assert default_root() == ROOT / "kb"


def test_env_var_points_at_another_kb(monkeypatch, tmp_path):
    monkeypatch.setenv("FIXER_KB", str(tmp_path))
    assert default_root() == tmp_path


def test_broken_files_are_skipped_and_named(tmp_path):
    (tmp_path / "good.yaml").write_text((ROOT / "kb" / "optimizer-state-after-resume.yaml").read_text())
    (tmp_path / "bad.yaml").write_text("id: Not An Id\n")
    catalog = load(tmp_path)
    assert list(catalog.entries) == ["optimizer-state-after-resume"]
    assert len(catalog.problems) == 1 and catalog.problems[0].startswith("bad.yaml: ")
    with pytest.raises(KBError, match=r"bad\.yaml: .*id"):
        load(tmp_path, strict=True)


def test_missing_kb_is_an_error(tmp_path):
    with pytest.raises(KBError, match="no knowledge base"):
        load(tmp_path / "missing")


def test_yaml_tags_are_not_executed(tmp_path):
    (tmp_path / "evil.yaml").write_text("!!python/object/apply:os.system ['echo pwned']\n")
    catalog = load(tmp_path)
    assert not catalog.entries and "not valid YAML" in catalog.problems[0]


def test_known_messages_finds_a_bare_known_message(catalog):
    assert catalog.known_messages.search("Expected all tensors to be on the same device")


def test_committed_json_schema_is_current():
    committed = json.loads((ROOT / "docs" / "schema" / "entry.schema.json").read_text())
    assert committed == Entry.model_json_schema(), "run: fixer kb schema -o docs/schema/entry.schema.json"


def _entry_with(tmp_path: Path, name: str, old: str = "", new: str = "") -> None:
    """A copy of a real entry under another id, with one edit when `old` is given."""
    text = (ROOT / "kb" / "optimizer-state-after-resume.yaml").read_text()
    assert old in text
    edited = (text.replace(old, new, 1) if old else text).replace("id: optimizer-state-after-resume", f"id: {name}", 1)
    (tmp_path / f"{name}.yaml").write_text(edited)


SIGNATURE = "  - pattern: Expected all tensors to be on the same device\n"


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(?i)expected all tensors", "global flags"),
        ("(?P<dev>cuda:\\\\d) and (?P=dev)", "named groups"),
        ("(cuda:\\\\d) and \\\\1", "backreferences"),
        ("a{4294967296}", "does not compile"),
        ("(" * 5000 + "a" + ")" * 5000, "does not compile"),
        ("(?<=cuda:\\\\d+) and cpu", "look-behind requires fixed-width"),  # raised by the compiler, not the parser
    ],
    ids=["global-flag", "named-group", "backreference", "huge-repeat", "deep-nesting", "look-behind"],
)
def test_a_signature_that_cannot_be_searched_with_the_others_is_one_broken_entry(tmp_path, pattern, reason):
    _entry_with(tmp_path, "good")
    _entry_with(tmp_path, "bad", SIGNATURE, f'  - pattern: "{pattern}"\n')
    catalog = load(tmp_path)
    assert list(catalog.entries) == ["good"]
    assert len(catalog.problems) == 1 and catalog.problems[0].startswith("bad.yaml: ") and reason in catalog.problems[0]
    assert catalog.known_messages.search("Expected all tensors to be on the same device")


def test_a_scoped_flag_group_is_a_valid_signature(tmp_path):
    _entry_with(tmp_path, "scoped", SIGNATURE, '  - pattern: "(?i:expected ALL tensors)"\n')
    catalog = load(tmp_path)
    assert list(catalog.entries) == ["scoped"]
    assert catalog.known_messages.search("expected all tensors")


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ("a: &x [1, 2]\nb: [*x, *x]\n", "aliases"),
        ("id: x\nnested: " + "[" * 40 + "]" * 40 + "\n", "nests deeper"),
        ("- " * 50_000 + "x\n", "nest"),
        ("id: x\nsummary: " + "a" * 1_100_000 + "\n", "more than an entry can be"),
    ],
    ids=["alias", "deep-flow", "50000-deep-block", "oversized"],
)
def test_hostile_yaml_is_one_broken_entry(tmp_path, document, reason):
    (tmp_path / "hostile.yaml").write_text(document)
    catalog = load(tmp_path)
    assert not catalog.entries
    assert len(catalog.problems) == 1 and catalog.problems[0].startswith("hostile.yaml: ")
    assert reason in catalog.problems[0]


def test_a_fifo_named_like_an_entry_is_skipped_without_blocking(tmp_path):
    _entry_with(tmp_path, "good")
    os.mkfifo(tmp_path / "pipe.yaml")
    catalog = load(tmp_path)
    assert list(catalog.entries) == ["good"]
    assert catalog.problems == ("pipe.yaml: not a regular file",)
