"""`fixer patch` end to end on a script in the shape of LLMs-from-scratch ch. 6: a GPT-style model
moved with .to(device), its out_head then replaced by a two-class head, then fine-tuned. The `meta`
device stands in for the GPU (TRAIN_DEVICE=meta); training on meta runs the real autograd path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fixer.cli import NO_MATCH, NOT_APPLIED, OK
from fixer.patching.apply import PatchError, apply
from fixer.patching.plan import Patch

SCRIPTS = Path(__file__).parent / "llm_finetune"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for script in SCRIPTS.glob("*.py"):
        shutil.copy(script, tmp_path / script.name)
    return tmp_path


def _train(project: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "TRAIN_DEVICE": "meta"}
    return subprocess.run(
        [sys.executable, "finetune.py"], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )


def _fixer(project: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fixer", *args],
        cwd=project,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=None if stdin else subprocess.DEVNULL,
    )


def test_head_replaced_after_to_is_found_through_the_source_and_patched(project):
    failed = _train(project)
    assert failed.returncode != 0 and "Traceback" in failed.stderr
    explained = json.loads(_fixer(project, "explain", "--json", "-", stdin=failed.stderr).stdout)
    assert explained["matches"][0]["id"] == "submodule-replaced-after-to"
    assert any("your code assigns a newly built layer" in why for why in explained["matches"][0]["why"])
    assert [p["codemod"] for p in explained["patches"]] == ["move-to-after-module-assignment"]

    proposed = _fixer(project, "patch", "--json", "-", stdin=failed.stderr)
    assert proposed.returncode == OK
    (patch,) = json.loads(proposed.stdout)["patches"]
    assert patch["applicability"] == "safe" and patch["path"].endswith("finetune.py")
    assert "+model.out_head = torch.nn.Linear(16, 2).to(device)" in patch["diff"]
    assert (project / "finetune.py").read_text() == (SCRIPTS / "finetune.py").read_text(), "patch wrote a file"

    applied = _fixer(project, "patch", "--apply", "--yes", "-", stdin=failed.stderr)
    assert applied.returncode == OK, applied.stderr
    trained = _train(project)
    assert trained.returncode == 0, trained.stderr[-2000:]
    assert trained.stdout.strip().endswith("trained")


def test_apply_without_yes_and_without_a_terminal_writes_nothing(project):
    failed = _train(project)
    result = subprocess.run(
        [sys.executable, "-m", "fixer", "patch", "--apply", "-"],
        cwd=project,
        input=failed.stderr,
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,  # no controlling terminal: /dev/tty cannot be opened
    )
    assert result.returncode == NOT_APPLIED
    assert "--yes" in result.stderr
    assert (project / "finetune.py").read_text() == (SCRIPTS / "finetune.py").read_text()


def test_no_patch_for_a_traceback_from_another_machine():
    # https://github.com/rasbt/LLMs-from-scratch/issues/172: the files are not on this machine
    text = (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "fixer", "patch", "-"], input=text, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == NO_MATCH
    assert "no automatic patch" in result.stdout


def _patch(path: Path, before: str, after: str) -> Patch:
    return Patch(path, before, after, "move-to-after-module-assignment", "", "safe", "submodule-replaced-after-to")


def test_a_file_changed_since_it_was_read_is_not_written(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("a = 1\n")
    patch = _patch(script, "a = 1\n", "a = 2\n")
    script.write_text("a = 3\n")
    with pytest.raises(PatchError, match="changed since"):
        apply(patch)
    assert script.read_text() == "a = 3\n"


def test_library_files_are_never_written(tmp_path):
    library = tmp_path / "site-packages" / "lib.py"
    library.parent.mkdir()
    library.write_text("a = 1\n")
    with pytest.raises(PatchError, match="installed library"):
        apply(_patch(library, "a = 1\n", "a = 2\n"))


def test_apply_keeps_line_endings_and_mode(tmp_path):
    script = tmp_path / "train.py"
    script.write_bytes(b"a = 1\r\nb = 2\r\n")
    script.chmod(0o750)
    apply(_patch(script, "a = 1\r\nb = 2\r\n", "a = 1\r\nb = 3\r\n"))
    assert script.read_bytes() == b"a = 1\r\nb = 3\r\n"
    assert script.stat().st_mode & 0o777 == 0o750
