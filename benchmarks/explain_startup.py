"""Time `fixer explain`, in text mode (to a pipe) and with `--json`, as a whole process against a bare
`python -c pass`.

Most users meet fixer as a one-shot command, so its cost is interpreter start + imports + KB load +
matching. The ratio to a bare interpreter is the figure to watch. Also timed: an interpreter that only
imports what every explanation needs and fixer does not write (rapidfuzz, which loads `typing` and
`re`, and `dataclasses`), the floor no change to fixer's own code goes below.
Run: python benchmarks/explain_startup.py
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from installed import installed_env

EXAMPLE = (
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
    "cuda:0 and cpu! (when checking argument for argument state_steps in method wrapper_CUDA___fused_adamw_)\n"
)

ENV = installed_env()
FLOOR = "import dataclasses, json, rapidfuzz.fuzz, rapidfuzz.process"


def _time(cmd: list[str], stdin: str, runs: int) -> list[float]:
    subprocess.run(cmd, input=stdin, capture_output=True, text=True, check=False, env=ENV)  # caches bytecode, index
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, input=stdin, capture_output=True, text=True, check=False, env=ENV)
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--file", type=Path, help="traceback to explain (default: a one-line example)")
    args = parser.parse_args()
    text = args.file.read_text() if args.file else EXAMPLE
    base_ms = statistics.median(_time([sys.executable, "-c", "pass"], "", args.runs)) * 1000
    print(f"python -c pass        median {base_ms:7.1f} ms  (n={args.runs})")
    floor = statistics.median(_time([sys.executable, "-c", FLOOR], "", args.runs)) * 1000
    print(f"dependencies alone    median {floor:7.1f} ms  (n={args.runs}), {floor / base_ms:5.1f}x bare")
    for name, options in (("fixer explain (text)", []), ("fixer explain --json", ["--json"])):
        took = statistics.median(_time([sys.executable, "-m", "fixer", "explain", *options, "-"], text, args.runs))
        print(f"{name:<21} median {took * 1000:7.1f} ms  (n={args.runs}), {took * 1000 / base_ms:5.1f}x bare")
    return 0


if __name__ == "__main__":
    sys.exit(main())
