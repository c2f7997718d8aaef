"""`fixer patch --apply --yes` writes only the user's own, writable, unshared file the traceback saw.

Each escape is driven end to end through `fixer.cli.main` on the traceback of a real failing run of the
fine-tuning script in `llm_finetune/`, and checks the exact one-line refusal, the exit code, and that
the file is byte-identical afterwards.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from fixer.cli import NO_MATCH, NOT_APPLIED, OK, main
from fixer.patching import apply as apply_module

SCRIPTS = Path(__file__).parent / "llm_finetune"
PLACEHOLDER = "/PROJECT"


@pytest.fixture(scope="module")
def failure(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The real traceback of the fine-tuning run, its project directory replaced by PLACEHOLDER."""
    ran = tmp_path_factory.mktemp("ran")
    for script in SCRIPTS.glob("*.py"):
        shutil.copy(script, ran / script.name)
    env = {**os.environ, "TRAIN_DEVICE": "meta"}
    done = subprocess.run(
        [sys.executable, "finetune.py"], cwd=ran, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0 and "Traceback" in done.stderr
    return done.stderr.replace(str(ran), PLACEHOLDER)


@dataclass
class Project:
    root: Path
    script: Path
    traceback: Path  # the traceback as a log file, outside the project

    @property
    def original(self) -> bytes:
        return (SCRIPTS / "finetune.py").read_bytes()


def _project(base: Path, failure: str, named: Path | None = None) -> Project:
    """The scripts copied into base/project, and a log whose traceback names them at `named`."""
    root = base / "project"
    root.mkdir(parents=True)
    for script in SCRIPTS.glob("*.py"):
        shutil.copy(script, root / script.name)
    log = base / "crash.log"
    log.write_text(failure.replace(PLACEHOLDER, str(named or root)))
    return Project(root, root / "finetune.py", log)


@pytest.fixture
def project(tmp_path: Path, failure: str, monkeypatch: pytest.MonkeyPatch) -> Project:
    made = _project(tmp_path, failure)
    monkeypatch.chdir(made.root)
    return made


def _apply(project: Project, capsys: pytest.CaptureFixture[str], *options: str) -> tuple[int, str]:
    """The exit code and fixer's verdict lines on stderr (the patch headings above them left out)."""
    code = main(["patch", "--apply", "--yes", *options, str(project.traceback)])
    err = capsys.readouterr().err
    return code, "".join(line for line in err.splitlines(keepends=True) if line.startswith("fixer: "))


def _refused(project: Project, capsys: pytest.CaptureFixture[str], reason: str, *options: str) -> None:
    code, err = _apply(project, capsys, *options)
    assert (code, err) == (NOT_APPLIED, f"fixer: {project.script}: {reason}\n")
    assert project.script.read_bytes() == project.original


def test_the_patch_is_written_in_the_project(project, capsys):
    code, err = _apply(project, capsys)
    assert (code, err) == (OK, f"fixer: patched {project.script}\nfixer: to undo: fixer patch --revert\n")
    assert b"torch.nn.Linear(16, 2).to(device)" in project.script.read_bytes()


def test_a_script_edited_since_the_run_is_patched_where_its_lines_are_now(project, capsys):
    """A comment added above the code after the run moves every line the traceback names by one: the
    file is still the one that ran, the patch lands on the moved lines, and the move is said."""
    project.script.write_bytes(b"# tried again after lunch\n" + project.original)
    code, err = _apply(project, capsys)
    assert code == OK, err
    assert "the file changed since the run; reading it there" in err
    patched = project.script.read_bytes()
    assert patched.startswith(b"# tried again after lunch\n") and b"torch.nn.Linear(16, 2).to(device)" in patched
    compile(patched, str(project.script), "exec")


def test_a_file_outside_the_project_is_refused(project, capsys, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    reason = f"outside the project {elsewhere}; fixer edits only files under it (--root DIR names another)"
    _refused(project, capsys, reason)


def test_root_names_the_project_to_patch_from_elsewhere(project, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _ = _apply(project, capsys, "--root", str(project.root))
    assert code == OK
    assert project.script.read_bytes() != project.original


def test_root_must_be_a_directory(project, capsys):
    code = main(["patch", "--apply", "--yes", "--root", str(project.script), str(project.traceback)])
    assert (code, capsys.readouterr().err) == (2, f"fixer: --root {project.script}: not a directory\n")


def test_a_symlink_out_of_the_project_is_refused(tmp_path, failure, capsys, monkeypatch):
    outside = _project(tmp_path / "outside", failure)
    link = tmp_path / "linked"
    link.mkdir()
    for script in SCRIPTS.glob("*.py"):
        (link / script.name).symlink_to(outside.root / script.name)
    (tmp_path / "outside" / "crash.log").write_text(failure.replace(PLACEHOLDER, str(link)))
    monkeypatch.chdir(link)
    reason = f"outside the project {link}; fixer edits only files under it (--root DIR names another)"
    _refused(outside, capsys, reason)


def test_a_read_only_file_is_refused(project, capsys):
    project.script.chmod(0o444)
    _refused(project, capsys, "read-only; fixer does not override a file's permissions")
    assert project.script.stat().st_mode & 0o777 == 0o444


def test_a_file_owned_by_another_user_is_refused(project, capsys):
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    os.chown(project.script, 65534, 65534)
    _refused(project, capsys, "owned by uid 65534, not by you (uid 0); fixer edits only your own files")
    assert project.script.stat().st_uid == 65534


def test_a_file_with_hard_links_is_refused(project, capsys, tmp_path):
    other_name = tmp_path / "finetune-copy.py"
    os.link(project.script, other_name)
    _refused(project, capsys, "has 2 hard links and replacing it would split them; fixer leaves it alone")
    assert os.path.samefile(project.script, other_name)


def test_a_read_only_directory_is_refused(project, capsys):
    project.root.chmod(0o555)
    try:
        _refused(project, capsys, "its directory is read-only, and fixer writes a temporary file beside it")
    finally:
        project.root.chmod(0o755)


def test_a_directory_that_refuses_the_temporary_file_is_refused(project, capsys, monkeypatch):
    def refuse(**_: object) -> tuple[int, str]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(apply_module.tempfile, "mkstemp", refuse)
    _refused(project, capsys, "cannot write beside it (Permission denied)")


def test_a_change_between_the_check_and_the_rename_is_refused(project, capsys, monkeypatch):
    write_temporary: Callable[..., str] = apply_module._write_temporary

    def edited_meanwhile(path: Path, *args: object) -> str:
        temporary = write_temporary(path, *args)
        project.script.write_bytes(project.original.replace(b"epochs=2", b"epochs=3"))
        return temporary

    monkeypatch.setattr(apply_module, "_write_temporary", edited_meanwhile)
    code, err = _apply(project, capsys)
    assert (code, err) == (NOT_APPLIED, f"fixer: {project.script}: changed since fixer read it; run fixer again\n")
    assert project.script.read_bytes() == project.original.replace(b"epochs=2", b"epochs=3")
    assert [p.name for p in project.root.iterdir() if p.name.endswith(".fixer")] == []


def test_a_touch_between_the_check_and_the_rename_is_refused(project, capsys, monkeypatch):
    write_temporary: Callable[..., str] = apply_module._write_temporary

    def touched_meanwhile(path: Path, *args: object) -> str:
        temporary = write_temporary(path, *args)
        os.utime(project.script, ns=(1, 1))
        return temporary

    monkeypatch.setattr(apply_module, "_write_temporary", touched_meanwhile)
    _refused(project, capsys, "changed since fixer read it; run fixer again")


def test_the_group_is_kept(project, capsys):
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to any group")
    os.chown(project.script, os.geteuid(), 65534)
    code, _ = _apply(project, capsys)
    assert code == OK
    assert (project.script.stat().st_uid, project.script.stat().st_gid) == (os.geteuid(), 65534)


def test_a_relative_path_that_names_another_file_here_is_skipped(tmp_path, failure, capsys, monkeypatch):
    """The traceback came from `project`; the same names in `other` hold another project's scripts, without
    the lines the traceback printed anywhere near where it printed them."""
    project = _project(tmp_path, failure, named=Path("."))
    other = tmp_path / "other"
    other.mkdir()
    for script in SCRIPTS.glob("*.py"):
        (other / script.name).write_bytes(b"# another project's script of the same name\n" * 40)
    monkeypatch.chdir(other)
    before = {p.name: p.read_bytes() for p in other.iterdir()}
    code = main(["patch", "--apply", "--yes", str(project.traceback)])
    out, err = capsys.readouterr()
    assert code == NO_MATCH and out == ""
    assert err.startswith(
        "fixer: ./gpt.py: skipped: its line 15 is not the traceback's "
        "`return self.out_head(hidden)`, so it is another file of that name\n"
        "fixer: ./finetune.py: skipped: its line 24 is not the traceback's "
        "`logits = model(input_batch)[:, -1, :]`, so it is another file of that name\n"
    )
    assert "no automatic patch" in err
    assert {p.name: p.read_bytes() for p in other.iterdir()} == before


def test_a_relative_path_naming_the_file_here_is_patched(tmp_path, failure, capsys, monkeypatch):
    project = _project(tmp_path, failure, named=Path("."))
    monkeypatch.chdir(project.root)
    code, _ = _apply(project, capsys)
    assert code == OK and project.script.read_bytes() != project.original


def test_a_relative_path_is_read_in_the_current_directory_and_said_so(tmp_path, failure, capsys, monkeypatch):
    """The traceback does not say where `./finetune.py` ran: an identical checkout here is the one patched,
    and stderr names the directory it was read in, so a person sees which checkout that is."""
    project = _project(tmp_path, failure, named=Path("."))
    other = tmp_path / "other"
    shutil.copytree(project.root, other)
    monkeypatch.chdir(other)
    code = main(["patch", "--apply", "--yes", str(project.traceback)])
    err = capsys.readouterr().err
    assert code == OK and f"fixer: ./finetune.py: read in {other} (the traceback does not say where it ran)" in err
    assert (other / "finetune.py").read_bytes() != project.original
    assert project.script.read_bytes() == project.original


def test_a_relative_path_beside_absolute_ones_elsewhere_is_not_patched_here(tmp_path, failure, capsys, monkeypatch):
    """`./finetune.py` ran beside `/…/project/gpt.py`: another checkout with the same files is not its folder."""
    project = _project(tmp_path, failure)
    project.traceback.write_text(
        failure.replace(f"{PLACEHOLDER}/gpt.py", str(project.root / "gpt.py")).replace(PLACEHOLDER, ".")
    )
    other = tmp_path / "other"
    shutil.copytree(project.root, other)
    monkeypatch.chdir(other)
    before = {p.name: p.read_bytes() for p in other.iterdir()}
    code = main(["patch", "--apply", "--yes", "--entry", "submodule-replaced-after-to", str(project.traceback)])
    err = capsys.readouterr().err
    assert code == NO_MATCH
    assert f"fixer: ./finetune.py: skipped: a relative path, and the traceback's own files ran in {project.root}" in err
    assert {p.name: p.read_bytes() for p in other.iterdir()} == before


def test_a_frame_path_longer_than_the_system_allows_is_ignored(tmp_path, failure, capsys, monkeypatch):
    project = _project(tmp_path, failure, named=Path(("/" + "d" * 200) * 21))
    monkeypatch.chdir(project.root)
    code = main(["patch", "--entry", "submodule-replaced-after-to", str(project.traceback)])
    out, err = capsys.readouterr()
    assert code == NO_MATCH and "names no file of yours that is on this machine" in " ".join(err.split()) and out == ""
    assert not [line for line in err.splitlines() if "d" * 200 in line]  # the path itself is never read or named


def test_revert_takes_the_last_apply_back_and_only_once(project, capsys):
    assert _apply(project, capsys)[0] == OK
    patched = project.script.read_bytes()
    assert patched != project.original
    assert main(["patch", "--revert", "--yes"]) == OK
    assert f"fixer: reverted {project.script}" in capsys.readouterr().err
    assert project.script.read_bytes() == project.original
    assert main(["patch", "--revert", "--yes"]) == NO_MATCH
    assert "nothing to revert" in capsys.readouterr().err


def test_revert_keeps_an_edit_made_since_the_patch(project, capsys):
    assert _apply(project, capsys)[0] == OK
    edited = project.script.read_text() + "# my own change\n"
    project.script.write_text(edited)
    assert main(["patch", "--revert", "--yes"]) == NOT_APPLIED
    assert "changed since fixer patched it" in capsys.readouterr().err
    assert project.script.read_text() == edited


def test_revert_leaves_a_symlink_put_in_the_patched_file_s_place(project, capsys):
    """The file fixer wrote was moved and linked back: the link is not what fixer wrote, and stays a link."""
    assert _apply(project, capsys)[0] == OK
    moved = project.root / "moved.py"
    project.script.rename(moved)
    project.script.symlink_to(moved)
    assert main(["patch", "--revert", "--yes"]) == NOT_APPLIED
    assert "is now a symbolic link" in capsys.readouterr().err
    assert project.script.is_symlink() and project.script.resolve() == moved


def test_revert_without_a_terminal_or_yes_writes_nothing(project, capsys, monkeypatch):
    assert _apply(project, capsys)[0] == OK
    patched = project.script.read_bytes()
    monkeypatch.setattr("builtins.open", _no_terminal(open))
    assert main(["patch", "--revert"]) == NOT_APPLIED
    assert project.script.read_bytes() == patched


def _no_terminal(real_open):
    def opener(file, *args, **kwargs):
        if file == "/dev/tty":
            raise OSError("no terminal")
        return real_open(file, *args, **kwargs)

    return opener
