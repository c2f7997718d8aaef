"""How `fixer explain --json` grows with the KB: the 30 real entries copied to 100, 1,000 and 10,000,
each copy with its own id and its own regexes, timed as a whole process once the index exists.

Two kinds of copies bound what a team's KB costs:
- `own wording`: each copy's signatures and rules also need a word of their own, as a team's entries
  for other messages do; the literal prefilter skips them, so this is the common case.
- `same wording`: each copy's regexes differ only by an optional group, so every copy of a matching
  entry must be searched: the worst case, a KB that says one message ten thousand times.

Also prints how long building the index takes (once per change of the KB). Run:
    python benchmarks/kb_size.py [--sizes 30 100 1000 10000] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
REGEX_FIELDS = ("message", "text", "exception", "argument", "op", "frame")
PASTE = (
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
    "cuda:0 and cpu! (when checking argument for argument mat1 in method wrapper_CUDA_addmm)\n"
)


def _copies(size: int, own_wording: bool) -> list[dict]:
    real = [yaml.safe_load(path.read_text()) for path in sorted((ROOT / "kb").glob("*.yaml"))]
    entries = []
    for number in range(size):
        entry = yaml.safe_load(yaml.safe_dump(real[number % len(real)]))
        if number >= len(real):
            entry["id"] = f"{entry['id']}-{number}"
            tag = f" team{number}" if own_wording else f"(?:#{number})?"
            for signature in entry["signatures"]:
                signature["pattern"] = _tagged(signature["pattern"], tag)
            for rule in entry.get("evidence", []):
                for name in REGEX_FIELDS:
                    if name in rule["when"] and name not in ("exception", "argument"):
                        rule["when"][name] = _tagged(rule["when"][name], tag)
            entry.pop("related", None)
        entries.append(entry)
    return entries


def _tagged(pattern: str, tag: str) -> str:
    """The pattern, then the tag; global flags (`(?m)`) stay in front, where Python requires them."""
    flags = re.match(r"\(\?[aiLmsux]+\)", pattern)
    head = flags.group(0) if flags else ""
    return f"{head}(?:{pattern[len(head) :]}){tag}"


def _time(env: dict[str, str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "fixer", "explain", "--json", "-"],
            input=PASTE,
            env=env,
            capture_output=True,
            text=True,
        )
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[30, 100, 1000, 10000])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    bare = statistics.median([t for t in (_clock([sys.executable, "-c", "pass"]) for _ in range(args.runs))])
    print(f"python -c pass: {bare * 1000:.1f} ms")
    print("| entries | copies | build index | explain --json (median) | ratio to bare python |")
    print("|---:|---|---:|---:|---:|")
    for size in args.sizes:
        for own_wording in (True, False):
            if size <= 30 and not own_wording:
                continue
            with tempfile.TemporaryDirectory() as scratch:
                kb, cache = Path(scratch) / "kb", Path(scratch) / "cache"
                kb.mkdir()
                (kb / "priors").mkdir()
                for entry in _copies(size, own_wording):
                    (kb / f"{entry['id']}.yaml").write_text(yaml.safe_dump(entry, sort_keys=False))
                priors = ROOT / "kb" / "priors" / "messages.yaml"
                (kb / "priors" / "messages.yaml").write_text(priors.read_text())
                env = {**os.environ, "FIXER_KB": str(kb), "FIXER_CACHE_DIR": str(cache), "FIXER_KB_PATH": ""}
                (build,) = _time(env, 1)
                check = subprocess.run(
                    [sys.executable, "-m", "fixer", "explain", "--json", "-"],
                    input=PASTE,
                    env=env,
                    capture_output=True,
                    text=True,
                )
                assert not check.stderr, check.stderr[-500:]  # every copy loaded
                median = statistics.median(_time(env, args.runs))
                kind = "real" if size <= 30 else ("own wording" if own_wording else "same wording")
                print(
                    f"| {size:,} | {kind} | {build:.1f} s | {median * 1000:.0f} ms | {median / bare:.1f}x |", flush=True
                )
    return 0


def _clock(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=False)
    return time.perf_counter() - start


if __name__ == "__main__":
    sys.exit(main())
