from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixer.catalog import KBError, default_root, load
from fixer.schema import Entry

ROOT = Path(__file__).resolve().parents[1]


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
