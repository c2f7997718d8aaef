"""`fixer scan` throughput: one large log streamed in bounded memory, and many job logs on 1 and N
local worker processes.

Logs are made here: training noise with real tracebacks from the KB's examples every few megabytes.
Run: python benchmarks/scan_throughput.py [--big-mb 1024] [--jobs 64] [--job-mb 4] [--workers N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fixer.kb.catalog import load  # noqa: E402

NOISE_LINE = "epoch 3 step {i} loss 0.{i:04d} lr 1e-4 grad_norm 1.234 it/s 12.3 mem 10.2GB\n"


def _write_log(path: Path, megabytes: float, rng: random.Random, tracebacks: list[str]) -> int:
    """Noise with a traceback every ~4 MB; returns how many were written."""
    target, written, placed, i = int(megabytes * (1 << 20)), 0, 0, 0
    with path.open("w") as out:
        while written < target:
            chunk = "".join(NOISE_LINE.format(i=i + k) for k in range(50_000))
            i += 50_000
            out.write(chunk)
            written += len(chunk)
            trace = rng.choice(tracebacks).rstrip("\n") + "\n"
            out.write(trace)
            written += len(trace)
            placed += 1
    return placed


def _peak_rss_scan(path: Path) -> tuple[float, float, int]:
    """Seconds, peak RSS in MB of a fresh process scanning `path`, and tracebacks found."""
    code = (
        "import json, resource, sys, time\n"
        "from fixer.fleet.scan import scan_file\n"
        "scan_file(sys.argv[1] + '.warm')\n"  # the matcher and imports, outside the timing
        "start = time.perf_counter(); found = scan_file(sys.argv[1]); took = time.perf_counter() - start\n"
        "print(json.dumps([took, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, len(found.found)]))\n"
    )
    Path(str(path) + ".warm").write_text("nothing here\n")
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True, env={**os.environ,
        "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    took, rss, found = json.loads(done.stdout)
    return took, rss, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--big-mb", type=float, default=256, help="size of the one large log (MB)")
    parser.add_argument("--jobs", type=int, default=64, help="number of job logs")
    parser.add_argument("--job-mb", type=float, default=4, help="size of each job log (MB)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="N for the N-worker run")
    args = parser.parse_args()
    rng = random.Random(0)
    tracebacks = [ex.traceback for entry in load(team=()) for ex in entry.examples if "Traceback (most" in ex.traceback]
    from fixer.fleet.scan import expand, scan

    with tempfile.TemporaryDirectory() as folder:
        big = Path(folder) / "big.log"
        placed = _write_log(big, args.big_mb, rng, tracebacks)
        took, rss, found = _peak_rss_scan(big)
        size = big.stat().st_size / (1 << 20)
        print(f"one log: {size:.0f} MB, {placed} tracebacks placed, {found} found, "
              f"{size / took:.0f} MB/s, peak RSS {rss:.0f} MB")  # fmt: skip
        big.unlink()
        jobs = Path(folder) / "jobs"
        jobs.mkdir()
        for n in range(args.jobs):
            _write_log(jobs / f"job{n:03d}.log", args.job_mb, rng, tracebacks)
        files = expand([str(jobs)])
        total = sum(Path(f).stat().st_size for f in files) / (1 << 20)
        scan(files[:1])  # imports and the matcher, outside the timing
        for workers in sorted({1, args.workers}):
            start = time.perf_counter()
            found_all, _ = scan(files, workers=workers)
            took = time.perf_counter() - start
            print(f"{len(files)} job logs, {total:.0f} MB, {workers} worker(s): {took:.1f} s, "
                  f"{total / took:.0f} MB/s, {len(files) / took:.1f} files/s, {len(found_all)} tracebacks")  # fmt: skip


if __name__ == "__main__":
    main()
