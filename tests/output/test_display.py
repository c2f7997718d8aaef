"""Output that fits where it goes: a terminal gets its width, colour and boxes; a pipe or a file gets
lines as long as their text and no escape code; `--width`, COLUMNS, `--color never` and NO_COLOR are
obeyed wherever the output goes."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import CORPUS

ESCAPE = "\x1b"
EXAMPLE_MESSAGE = (
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
    "(when checking argument for argument state_steps in method wrapper_CUDA___fused_adamw_)"
)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR", "FORCE_COLOR", "TERM")}
    return {**env, "TERM": "xterm-256color", **extra}


def _piped(*args: str, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "fixer", *args],
        capture_output=True,
        text=True,
        env=_env(**env),
        timeout=120,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def _in_a_terminal(*args: str, **env: str) -> str:
    """What fixer writes to a terminal 100 columns wide (a pseudo-terminal)."""
    leader, follower = pty.openpty()
    done = subprocess.Popen(
        [sys.executable, "-m", "fixer", *args],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=subprocess.DEVNULL,
        env=_env(COLUMNS="100", **env),
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    done.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode()


def test_a_pipe_gets_each_paragraph_on_one_line_and_no_escape_code():
    out = _piped("explain", "--example")
    assert EXAMPLE_MESSAGE in out.splitlines()
    assert ESCAPE not in out
    assert not any(line != line.rstrip() for line in out.splitlines())


def test_width_and_columns_wrap_a_pipe_where_asked():
    for out, width in (
        (_piped("explain", "--example", "--width", "60"), 60),
        (_piped("explain", "--example", COLUMNS="70"), 70),
    ):
        prose = out.split("before:")[0].splitlines()
        assert max(map(len, prose)) <= width
        assert EXAMPLE_MESSAGE not in prose


def test_a_terminal_gets_colour_and_never_or_no_color_gets_no_escape_code_at_all():
    assert ESCAPE in _in_a_terminal("explain", "--example")  # the check below can fail
    assert ESCAPE not in _in_a_terminal("--color", "never", "explain", "--example")
    assert ESCAPE not in _in_a_terminal("explain", "--example", "--color", "never")
    assert ESCAPE not in _in_a_terminal("explain", "--example", NO_COLOR="1")
    assert ESCAPE in _in_a_terminal("explain", "--example", "--color", "always", NO_COLOR="1")


def test_a_scan_written_to_a_file_keeps_every_column_whole(tmp_path: Path):
    for number, case in enumerate(yaml.safe_load(CORPUS.read_text())[:20]):
        (tmp_path / f"job{number}.log").write_text(case["traceback"])
    out = _piped("scan", str(tmp_path))
    header = next(line for line in out.splitlines() if line.lstrip().startswith("fingerprint"))
    assert header.split() == ["fingerprint", "tracebacks", "files", "cause", "error", "first", "seen"]
    rows = out.split(header, 1)[1].strip().splitlines()
    assert rows and all(re.match(r"\s*[0-9a-f]{12}\s+\d+\s+\d+\s+\S+\s+\S.*:\d+$", row) for row in rows), rows
    assert ESCAPE not in out


@pytest.mark.parametrize("width", ["0", "19", "wide", "-3"])
def test_a_width_that_is_no_width_is_refused_on_one_line(width: str):
    done = subprocess.run(
        [sys.executable, "-m", "fixer", "explain", "--example", "--width", width],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--width" in done.stderr
