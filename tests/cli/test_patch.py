"""`fixer patch > fix.diff && git apply fix.diff` writes exactly what `fixer patch --apply` writes,
whatever the width, for every codemod fixture; the commentary stays out of the diff."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fixer.cli import main
from fixer.kb.catalog import Catalog

FIXTURES = Path(__file__).parents[1] / "patching" / "fixtures"
CHANGED = sorted(c for c in FIXTURES.glob("*/*.in.py") if c.with_name(c.name.replace(".in.py", ".out.py")).exists())
GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="needs git")


def _traceback(script: Path) -> str:
    """The frames a run of the script would print: its lines marked `# fixer: error`, outermost first."""
    lines = script.read_text().splitlines()
    frames = "".join(
        f'  File "{script}", line {n}, in <module>\n    {line.strip()}\n'
        for n, line in enumerate(lines, 1)
        if "# fixer: error" in line
    )
    message = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
    return f"Traceback (most recent call last):\n{frames}RuntimeError: {message}\n"


def _repo(path: Path, name: str, source: bytes) -> Path:
    path.mkdir()
    (path / name).write_bytes(source)
    subprocess.run([GIT, "init", "-q"], cwd=path, check=True)
    return path / name


def _entry_of(codemod: str, catalog: Catalog) -> str:
    return next(e.id for e in sorted(catalog, key=lambda e: e.id) if e.fix.codemod == codemod)


def _piped_and_applied(
    tmp_path: Path, source: bytes, entry: str, capfd: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> tuple[bytes, bytes, str]:
    """The file after `fixer patch > fix.diff; git apply fix.diff`, the file after `--apply`, and the
    commentary patch wrote on stderr. stdout is a captured file descriptor, as in a pipe, at 40 columns."""
    monkeypatch.setenv("COLUMNS", "40")
    for name in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    piped = _repo(tmp_path / "piped", "train.py", source)
    log = tmp_path / "crash.log"
    log.write_text(_traceback(piped))
    monkeypatch.chdir(piped.parent)
    assert main(["patch", "--entry", entry, str(log)]) == 0
    shown = capfd.readouterr()
    (tmp_path / "fix.diff").write_bytes(shown.out)
    subprocess.run([GIT, "apply", str(tmp_path / "fix.diff")], cwd=piped.parent, check=True, capture_output=True)

    applied = _repo(tmp_path / "applied", "train.py", source)
    log.write_text(_traceback(applied))
    assert (
        main(["patch", "--entry", entry, "--apply", "--yes", "--unsafe", "--root", str(applied.parent), str(log)]) == 0
    )
    return piped.read_bytes(), applied.read_bytes(), shown.err.decode()


@pytest.mark.parametrize("case", CHANGED, ids=[f"{c.parent.name}/{c.name[:-6]}" for c in CHANGED])
def test_the_piped_diff_applies_to_exactly_what_apply_writes(case, catalog, tmp_path, capfdbinary, monkeypatch):
    entry = _entry_of(case.parent.name, catalog)
    piped, applied, note = _piped_and_applied(tmp_path, case.read_bytes(), entry, capfdbinary, monkeypatch)
    expected = case.with_name(case.name.replace(".in.py", ".out.py")).read_bytes()
    assert piped == applied == expected
    assert case.parent.name in " ".join(note.split()), "the heading belongs on stderr"


def test_crlf_and_a_missing_last_newline_survive_the_pipe(catalog, tmp_path, capfdbinary, monkeypatch):
    """Line endings are the file's own, and a last line without a newline gets git's marker."""
    case = FIXTURES / "move-loss-to-device" / "class_weights_from_counts.in.py"
    source = case.read_bytes().rstrip(b"\n").replace(b"\n", b"\r\n")
    entry = _entry_of("move-loss-to-device", catalog)
    piped, applied, _ = _piped_and_applied(tmp_path, source, entry, capfdbinary, monkeypatch)
    assert piped == applied
    assert applied.count(b"\r\n") == applied.count(b"\n") and not applied.endswith(b"\n")
    assert applied != source


def test_no_colour_or_box_reaches_a_pipe_unless_asked(catalog, tmp_path):
    case = FIXTURES / "move-loss-to-device" / "class_weights_from_counts.in.py"
    script = _repo(tmp_path / "repo", "train.py", case.read_bytes())
    log = tmp_path / "crash.log"
    log.write_text(_traceback(script))
    entry = _entry_of("move-loss-to-device", catalog)

    def shown(*options: str, **env: str) -> bytes:
        environment = {k: v for k, v in os.environ.items() if k not in {"NO_COLOR", "FORCE_COLOR"}}
        command = [sys.executable, "-m", "fixer", "patch", "--entry", entry, *options, str(log)]
        return subprocess.run(command, env={**environment, **env}, capture_output=True, timeout=120).stdout

    plain = shown()
    assert b"\x1b[" not in plain and plain.startswith(b"--- a/")
    assert b"\x1b[32m+" in shown("--color", "always")
    assert b"\x1b[32m+" in shown(FORCE_COLOR="1")
    assert shown("--color", "never", FORCE_COLOR="1") == plain
