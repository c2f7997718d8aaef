"""The real-code benchmark (benchmarks/realcode): threads kept apart from everything else, each naming the
code its reporter ran; and the layout that puts that code where the traceback's frames point."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, thread, threads_outside

from fixer.explain.parse import parse
from fixer.kb.catalog import Catalog

REALCODE = ROOT / "benchmarks" / "realcode"
ITEMS = yaml.safe_load((REALCODE / "threads.yaml").read_text(encoding="utf-8"))


def _benchmark():  # benchmarks/ is not a package: load the script as the module it is
    spec = importlib.util.spec_from_file_location("realcode", ROOT / "benchmarks" / "realcode.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["realcode"] = module
    spec.loader.exec_module(module)
    return module


realcode = _benchmark()


def test_items_are_whole_and_name_their_code_and_cause(catalog: Catalog) -> None:
    assert len({item["id"] for item in ITEMS}) == len(ITEMS) >= 30
    for item in ITEMS:
        assert re.fullmatch(r"[0-9a-f]{40}", item["commit"]) and "/" in item["repo"], item["id"]
        assert item["traceback"].strip() and parse(item["traceback"]) is not None, item["id"]
        assert item["fix"]["kind"] in ("code", "config", "usage", "environment"), item["id"]
        expect = item["expect"]
        assert item.get("new_cause") if expect.startswith("new:") else catalog.get(expect) is not None, item["id"]


def test_each_review_names_the_lines_it_read_and_its_verdict() -> None:
    for item in ITEMS:
        for review in item.get("reviewed", []):
            assert review["adds"] and all(isinstance(line, str) and line.strip() for line in review["adds"]), item["id"]
            assert review["effect"] in ("equal", "differs") and review["why"].strip(), item["id"]
        assert not item.get("reviewed") or item["fix"]["kind"] == "code", item["id"]


def test_a_patch_counts_as_reviewed_only_for_the_lines_the_review_read() -> None:
    diff = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-    x = torch.zeros(3)\n+    x = torch.zeros(3, device=y.device)\n"
    review = {"adds": ["x = torch.zeros(3, device=y.device)"], "effect": "equal", "why": "same"}
    assert realcode.reviewed_effect([review], [{"diff": diff}]) == "equal"
    assert realcode.reviewed_effect([review], [{"diff": diff.replace("y.device", "z.device")}]) is None
    assert realcode.reviewed_effect([review], []) is None


def test_a_shown_frame_lies_under_the_root() -> None:
    for item in ITEMS:
        root = str(item["root"])
        paths = [f.path for f in parse(item["traceback"]).all_frames]
        assert any(p.startswith(root) or root in (".", "") or not Path(p).is_absolute() for p in paths), item["id"]


def test_no_thread_is_also_a_kb_example_or_in_another_benchmark(catalog: Catalog) -> None:
    threads = [thread(item["source"]) for item in ITEMS]
    assert len(set(threads)) == len(threads)
    assert not set(threads) & threads_outside(catalog, REALCODE / "threads.yaml")


def test_every_stratum_has_its_log() -> None:
    for stratum in {item["stratum"] for item in ITEMS}:
        assert (REALCODE / "strata" / f"{stratum}.md").is_file(), stratum


@pytest.mark.parametrize(
    ("root", "placed", "cwd"),
    [
        ("/home/ana/NeuS", "disk/home/ana/NeuS", "disk/home/ana/NeuS"),
        ("/opt/env/lib/python3.8/site-packages", "disk/opt/env/lib/python3.8/site-packages", "project"),
        (r"C:\Users\ana\Desktop\proj", "disk/C/Users/ana/Desktop/proj", "disk/C/Users/ana/Desktop/proj"),
        (".", "project", "project"),
        ("tacotron2", "project/tacotron2", "project"),
    ],
)
def test_the_code_goes_where_the_frames_point(tmp_path: Path, root: str, placed: str, cwd: str) -> None:
    assert realcode.place(root, tmp_path / "disk", tmp_path / "project") == (tmp_path / placed, tmp_path / cwd)


def test_only_the_folder_of_a_frame_changes_in_the_text(tmp_path: Path) -> None:
    text = (
        '  File "C:\\Users\\ana\\proj\\models\\yolo.py", line 45, in forward\n'
        "    grid = torch.zeros(3)\n"
        "RuntimeError: expected device cuda:0 but got device cpu\n"
    )
    moved = realcode.moved(text, "C:\\Users\\ana\\proj", tmp_path)
    assert moved == text.replace("C:\\Users\\ana\\proj\\models\\yolo.py", f"{tmp_path}/models/yolo.py")
    relative = '  File "tacotron2\\stft.py", line 127, in inverse\n'
    assert realcode.moved(relative, "tacotron2", tmp_path / "project" / "tacotron2") == (
        '  File "tacotron2/stft.py", line 127, in inverse\n'
    )


def test_a_patch_at_the_fix_s_place_changes_a_line_the_fix_changes() -> None:
    upstream = "@@ -3 +3 @@\n-        steps = torch.arange(n)\n+        steps = torch.arange(n, device=x.device)\n"
    patch = (
        "--- a/m.py\n+++ b/m.py\n@@ -3,1 +3,1 @@\n"
        "-    steps = torch.arange(n)\n+    steps = torch.arange(n, device=x.device)\n"
    )
    assert realcode.changed_lines(patch) & realcode.changed_lines(upstream) == {"steps = torch.arange(n)"}
