"""A missing patch is explained by what is missing: a codemod, the files, or code of the right shape."""

from __future__ import annotations

from pathlib import Path

from fixer.patching.why_none import why_no_patch


def test_a_manual_entry_gives_its_own_reason(catalog):
    entry = catalog.get("more-ranks-than-gpus")
    said = why_no_patch(entry, {Path("/work/train.py"): (3,)})
    assert said.startswith("more-ranks-than-gpus has no automatic patch: the fix is in how the job is launched")
    assert "files" not in said


def test_a_codemod_without_files_says_the_files_are_missing(catalog):
    said = why_no_patch(catalog.get("model-not-moved"), {})
    assert "move-model-to-device" in said and "names no file of yours" in said


def test_a_codemod_that_found_nothing_names_the_files_it_read(catalog):
    said = why_no_patch(catalog.get("model-not-moved"), {Path("/work/train.py"): (3,), Path("/work/eval.py"): (9,)})
    assert "found no code of the shape it can rewrite in eval.py, train.py" in said
