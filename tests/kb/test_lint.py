from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from fixer.kb.lint import lint

ROOT = Path(__file__).resolve().parents[2]


def _copy_kb(tmp_path: Path) -> Path:
    target = tmp_path / "kb"
    shutil.copytree(ROOT / "kb", target)
    return target


def _edit(path: Path, change) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_the_shipped_kb_is_clean():
    entries, problems = lint(ROOT / "kb")
    assert len(entries) >= 8
    assert [str(p) for p in problems] == []


def test_lint_reports_each_kind_of_problem(tmp_path):
    kb = _copy_kb(tmp_path)
    entry = kb / "optimizer-state-after-resume.yaml"

    def break_it(data: dict) -> None:
        data["related"] = ["no-such-entry"]
        data["evidence"][0]["when"]["op"] = "(unclosed"

    _edit(entry, break_it)
    (kb / "renamed.yaml").write_text((kb / "model-not-moved.yaml").read_text())
    (kb / "broken.yaml").write_text("id: [unterminated\n")
    _, problems = lint(kb)
    text = "\n".join(map(str, problems))
    assert "does not compile" in text
    assert "renamed.yaml: id 'model-not-moved' differs from the file name" in text
    assert "broken.yaml: not valid YAML" in text


def test_lint_requires_examples_to_rank_their_own_entry_first(tmp_path):
    kb = _copy_kb(tmp_path)
    moved = yaml.safe_load((kb / "optimizer-state-after-resume.yaml").read_text())["examples"][0]

    def steal(data: dict) -> None:
        data["examples"].append(moved)

    _edit(kb / "model-not-moved.yaml", steal)
    _, problems = lint(kb)
    assert any("model-not-moved.yaml: example" in str(p) and "is not first" in str(p) for p in problems)


def test_lint_reports_unknown_related_ids(tmp_path):
    kb = _copy_kb(tmp_path)
    _edit(kb / "optimizer-state-after-resume.yaml", lambda d: d.update(related=["no-such-entry"]))
    _, problems = lint(kb)
    assert any("related entry 'no-such-entry' does not exist" in str(p) for p in problems)


def test_lint_reports_unknown_probe_ids(tmp_path):
    kb = _copy_kb(tmp_path)
    probes = ["optimizer-state-devices", "gpu-vibes"]
    _edit(kb / "optimizer-state-after-resume.yaml", lambda d: d.update(diagnostics=probes))
    _, problems = lint(kb)
    messages = [str(p) for p in problems]
    assert any("'gpu-vibes', which no probe" in m for m in messages)
    assert not any("optimizer-state-devices" in m for m in messages)


def test_a_manual_fix_must_say_why_no_codemod_applies_it(tmp_path):
    kb = _copy_kb(tmp_path)
    _edit(kb / "more-ranks-than-gpus.yaml", lambda d: d["fix"].pop("manual_because"))
    _edit(kb / "model-not-moved.yaml", lambda d: d["fix"].update(manual_because="no reason"))
    _, problems = lint(kb)
    text = "\n".join(map(str, problems))
    assert "more-ranks-than-gpus.yaml: fix.manual_because is missing" in text
    assert "model-not-moved.yaml: fix.manual_because is set, but the fix has a codemod" in text
