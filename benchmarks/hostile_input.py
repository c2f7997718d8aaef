"""Time `fixer explain --json` on each hostile input shape of tests/hostile.py at 1, 4 and 16 MB.

The goals: no shape takes more than 1 s at 1 MB, so nothing a user pastes or pipes can make fixer hang,
and time grows no faster than the input beyond (a shape 16 times as big takes at most 16 times as long,
less the process start both pay). Each shape runs as a whole process, as a user meets it.
Then the path arguments that block or never end, and team regexes slow without nesting, each timed.
Run: python benchmarks/hostile_input.py [--sizes 1,4,16]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "kb")]

from hostile import shapes  # noqa: E402

GOAL_S = 1.0
SLACK = 1.5  # timing noise on a shared machine: a growth within this factor of linear counts as linear
FLOOR_S = 0.05  # work shorter than this at the smallest size is noise: growth is measured from it
COMMAND = [sys.executable, "-m", "fixer", "explain", "--json", "-"]


def _timed(data: bytes) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(COMMAND, input=data, capture_output=True)
    return time.perf_counter() - start, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,4,16", help="sizes in MB, the first the one the 1 s goal is for")
    sizes = [int(size) for size in parser.parse_args().sizes.split(",")]
    _timed(b"")  # a first run may build the KB index
    startup = min(_timed(b"")[0] for _ in range(3))
    print(f"process start and KB load: {startup:.2f} s")
    print(f"{'shape':30s}" + "".join(f" {f'{size} MB':>8s}" for size in sizes) + "   exit  growth")
    by_size = {size: shapes(size << 20) for size in sizes}
    worst, superlinear = 0.0, []
    for name in by_size[sizes[0]]:
        seconds, code = [], 0
        for size in sizes:
            took, code = _timed(by_size[size][name].encode())
            seconds.append(took)
        worst = max(worst, seconds[0])
        # the work beyond the process start, per MB, from the smallest size to the largest
        base, top = max(seconds[0] - startup, FLOOR_S), max(seconds[-1] - startup, 0.0)
        growth = top / base / (sizes[-1] / sizes[0])
        if growth > SLACK:
            superlinear.append(name)
        print(f"{name:30s}" + "".join(f" {s:8.2f}" for s in seconds) + f"   {code:4d}  {growth:5.2f}")
    print(f"slowest at {sizes[0]} MB: {worst:.2f} s; goal {GOAL_S:.1f} s: {'met' if worst <= GOAL_S else 'MISSED'}")
    print(f"growth beyond linear (over {SLACK}): {', '.join(superlinear) or 'none'}")
    _paths_and_team_regexes()
    return 0


def _paths_and_team_regexes() -> None:
    """What is no paste but hung fixer all the same: path arguments that block or never end, a log
    directory holding them, and team regexes slow without nesting (tests/kb/test_safe_signatures.py)."""
    from test_safe_signatures import HARD_MESSAGE, SLOW_WITHOUT_NESTING, _team_entries

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        os.mkfifo(root / "nobody-writes.fifo")
        (root / "zero.log").symlink_to("/dev/zero")
        (root / "loop.log").symlink_to(root / "loop.log")
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(root / "agent.sock"))
        (root / "job.log").write_text(HARD_MESSAGE + "\n")
        team = root / "team"
        team.mkdir()
        _team_entries(team, SLOW_WITHOUT_NESTING)
        runs = {
            **{f"explain {name}": ["explain", name] for name in ("nobody-writes.fifo", "zero.log", "loop.log")},
            "explain agent.sock": ["explain", "agent.sock"],
            "explain a 5,000-character path": ["explain", "a" * 5000],
            "scan a directory of all of them": ["scan", "--workers", "1", "."],
            "explain with slow team regexes": ["--kb", "team", "explain", "--json", "job.log"],
        }
        print(f"\n{'command':40s} {'seconds':>8s}   exit")
        for name, arguments in runs.items():
            start = time.perf_counter()
            done = subprocess.run([*COMMAND[:3], *arguments], cwd=root, capture_output=True, timeout=120)
            print(f"{name:40s} {time.perf_counter() - start:8.2f}   {done.returncode:4d}")
        server.close()


if __name__ == "__main__":
    sys.exit(main())
