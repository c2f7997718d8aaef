"""Time `fixer explain --json` on each hostile input shape of tests/hostile.py (about 1 MB each).

The goal: no shape takes more than 1 s, so nothing a user pastes or pipes can make fixer hang.
Each shape runs as a whole process, as a user meets it. Run: python benchmarks/hostile_input.py
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from hostile import SHAPES  # noqa: E402

GOAL_S = 1.0
COMMAND = [sys.executable, "-m", "fixer", "explain", "--json", "-"]


def main() -> int:
    start = time.perf_counter()
    subprocess.run(COMMAND, input=b"", capture_output=True)
    startup = time.perf_counter() - start
    print(f"{'shape':28s} {'MB':>6s} {'seconds':>8s}   (process start and KB load: {startup:.2f} s)")
    worst = 0.0
    for name, text in SHAPES.items():
        data = text.encode()
        start = time.perf_counter()
        done = subprocess.run(COMMAND, input=data, capture_output=True)
        seconds = time.perf_counter() - start
        worst = max(worst, seconds)
        print(f"{name:28s} {len(data) / 1e6:6.2f} {seconds:8.2f}   exit {done.returncode}")
    print(f"slowest {worst:.2f} s; goal {GOAL_S:.1f} s: {'met' if worst <= GOAL_S else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
