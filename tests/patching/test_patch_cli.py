"""`fixer patch` end to end on a script in the shape of LLMs-from-scratch ch. 6: a GPT-style model
moved with .to(device), its out_head then replaced by a two-class head, then fine-tuned. The `meta`
device stands in for the GPU (TRAIN_DEVICE=meta); training on meta runs the real autograd path."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
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


def _on_terminal(terminal: str) -> Callable[[], None]:
    """Make the child a session whose controlling terminal is `terminal`, as a shell gives a command."""

    def attach() -> None:
        os.setsid()
        os.close(os.open(terminal, os.O_RDWR))  # a session leader's first terminal becomes its own

    return attach


def _read_until(fd: int, wanted: bytes, seconds: float) -> bytes:
    seen, deadline = b"", time.monotonic() + seconds
    while wanted not in seen and time.monotonic() < deadline:
        if select.select([fd], [], [], 0.5)[0]:
            seen += os.read(fd, 4096)
    return seen


def _answer_on_the_terminal(project: Path, traceback: str, answer: bytes) -> tuple[int, str, bytes]:
    """`fixer patch --apply` reading the traceback from a pipe and asking on its terminal, a pty here."""
    primary, secondary = os.openpty()  # ours stays open: without a reader end, the primary reads EIO
    with subprocess.Popen(
        [sys.executable, "-m", "fixer", "patch", "--apply", "-"],
        cwd=project,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_on_terminal(os.ttyname(secondary)),
    ) as child:
        try:
            assert child.stdin is not None
            child.stdin.write(traceback.encode())
            child.stdin.close()
            prompt = _read_until(primary, b"[y/N] ", 120)
            os.write(primary, answer + b"\n")
            assert child.stdout is not None and child.stderr is not None
            child.stdout.read()
            err = child.stderr.read()
            child.wait(timeout=120)
        finally:
            os.close(primary)
            os.close(secondary)
    return child.returncode, err.decode(), prompt


def test_consent_on_the_terminal_writes_the_patch(project):
    failed = _train(project)
    code, err, prompt = _answer_on_the_terminal(project, failed.stderr, b"y")
    assert prompt.endswith(b"Apply 1 patch(es) to " + bytes(project / "finetune.py") + b"? [y/N] ")
    assert code == OK, err
    assert "model.out_head = torch.nn.Linear(16, 2).to(device)" in (project / "finetune.py").read_text()


def test_no_on_the_terminal_writes_nothing(project):
    failed = _train(project)
    code, err, prompt = _answer_on_the_terminal(project, failed.stderr, b"n")
    assert prompt.endswith(b"? [y/N] ")
    assert (code, err.splitlines()[-1]) == (NOT_APPLIED, "fixer: nothing written")
    assert (project / "finetune.py").read_bytes() == (SCRIPTS / "finetune.py").read_bytes()


def test_no_patch_for_a_traceback_from_another_machine():
    # https://github.com/rasbt/LLMs-from-scratch/issues/172: the files are not on this machine
    text = (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "fixer", "patch", "-"], input=text, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == NO_MATCH
    assert result.stdout == ""
    assert "the traceback names no file of yours that is on this machine" in " ".join(result.stderr.split())


def test_with_no_patch_the_pipe_into_git_apply_is_given_nothing(tmp_path):
    """`fixer patch log | tee | git apply` with no diff: the pipe carries zero bytes, never fixer's prose."""
    log = tmp_path / "log.txt"
    log.write_text(
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"
    )
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    piped = subprocess.run(
        f"{sys.executable} -m fixer patch {log} 2>/dev/null | tee piped.diff | git apply --allow-empty -",
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    assert (tmp_path / "piped.diff").read_bytes() == b""
    assert piped.returncode == 0, piped.stderr


def _patch(path: Path, before: str, after: str) -> Patch:
    return Patch(path, before, after, "move-to-after-module-assignment", "", "safe", "submodule-replaced-after-to")


def test_a_file_changed_since_it_was_read_is_not_written(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("a = 1\n")
    patch = _patch(script, "a = 1\n", "a = 2\n")
    script.write_text("a = 3\n")
    with pytest.raises(PatchError, match="changed since"):
        apply(patch, tmp_path)
    assert script.read_text() == "a = 3\n"


def test_library_files_are_never_written(tmp_path):
    library = tmp_path / "site-packages" / "lib.py"
    library.parent.mkdir()
    library.write_text("a = 1\n")
    with pytest.raises(PatchError, match="installed library"):
        apply(_patch(library, "a = 1\n", "a = 2\n"), tmp_path)


def test_apply_keeps_line_endings_and_mode(tmp_path):
    script = tmp_path / "train.py"
    script.write_bytes(b"a = 1\r\nb = 2\r\n")
    script.chmod(0o750)
    apply(_patch(script, "a = 1\r\nb = 2\r\n", "a = 1\r\nb = 3\r\n"), tmp_path)
    assert script.read_bytes() == b"a = 1\r\nb = 3\r\n"
    assert script.stat().st_mode & 0o777 == 0o750


def _failing_library(tmp_path: Path) -> tuple[Path, str]:
    """The shape of torchattacks' C&W loss: an identity matrix made on the CPU, indexed by CUDA labels,
    in an installed library's file, and the traceback its own line raised."""
    library = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "attacks" / "cw.py"
    library.parent.mkdir(parents=True)
    library.write_text(
        "import torch\n\n\ndef margin(outputs, labels):\n"
        "    one_hot = torch.eye(outputs.shape[1])[labels]\n"
        "    return (one_hot * outputs).sum(1)\n"
    )
    log = (
        "Traceback (most recent call last):\n"
        f'  File "{library}", line 5, in margin\n'
        "    one_hot = torch.eye(outputs.shape[1])[labels]\n"
        "RuntimeError: indices should be either on cpu or on the same device as the indexed tensor (cpu)\n"
    )
    return library, log


def test_a_library_fix_is_shown_only_when_asked_and_never_written(tmp_path):
    library, log = _failing_library(tmp_path)
    assert _fixer(tmp_path, "patch", "-", stdin=log).returncode == NO_MATCH
    shown = _fixer(tmp_path, "patch", "--libraries", "-", stdin=log)
    assert shown.returncode == OK
    assert "+    one_hot = torch.eye(outputs.shape[1], device=labels.device)[labels]" in shown.stdout
    refused = _fixer(
        tmp_path, "patch", "--libraries", "--apply", "--yes", "--unsafe", "--root", str(tmp_path), "-", stdin=log
    )
    assert refused.returncode == NOT_APPLIED and "installed library" in refused.stderr
    assert "device=" not in library.read_text()


def test_a_library_fix_is_pointed_to_when_not_asked_for(tmp_path):
    """Without --libraries, explain names the library file a patch could go to, and patch says why it made none."""
    library, log = _failing_library(tmp_path)
    explained = json.loads(_fixer(tmp_path, "explain", "--json", "-", stdin=log).stdout)
    assert explained["patches"] == [] and explained["library_files"] == [str(library.resolve())]
    asked = json.loads(_fixer(tmp_path, "explain", "--json", "--libraries", "-", stdin=log).stdout)
    assert asked["library_files"] == [] and len(asked["patches"]) == 1
    told = _fixer(tmp_path, "explain", "--color", "never", "--width", "200", "-", stdin=log)
    assert f"installed library ({library.resolve()}): rerun with --libraries" in told.stdout
    refused = _fixer(tmp_path, "patch", "-", stdin=log)
    assert refused.returncode == NO_MATCH and "`fixer patch --libraries` lets it read" in refused.stderr
