"""How `fixer explain --json` grows with the KB: the 30 real entries copied to 100, 1,000 and 10,000,
each copy with its own id and its own regexes, timed as a whole process once the index exists.

Two kinds of copies bound what a team's KB costs:
- `own wording`: each copy's signatures and rules also need a word of their own, and its examples say
  their message in other words (the original's words in reverse order, and that word), as a team's
  entries for other messages do; the index skips them, so this is the common case.
- `same wording`: each copy's regexes differ only by an optional group and its examples are the
  original's, so every copy of a matching entry must be scored: the worst case, a KB that says one
  message ten thousand times.

Also prints how long building the index takes (once per change of the KB). Run:
    python benchmarks/kb_size.py [--sizes 30 100 1000 10000] [--runs 5] [--plot docs/assets/kb_size.svg]
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from installed import installed_env

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
            if own_wording:
                for example in entry["examples"]:
                    example["traceback"] = _reworded(example["traceback"], tag)
            entry.pop("related", None)
        entries.append(entry)
    return entries


def _reworded(traceback: str, tag: str) -> str:
    """The traceback with its last line's message in reverse word order, then the tag."""
    lines = traceback.rstrip("\n").split("\n")
    exception, colon, message = lines[-1].partition(": ")
    if not colon:
        exception, message = "", exception
    lines[-1] = f"{exception}{colon}{' '.join(reversed(message.split()))}{tag}"
    return "\n".join(lines) + "\n"


def _tagged(pattern: str, tag: str) -> str:
    """The pattern, then the tag; global flags (`(?m)`) stay in front, where Python requires them."""
    flags = re.match(r"\(\?[aiLmsux]+\)", pattern)
    head = flags.group(0) if flags else ""
    return f"{head}(?:{pattern[len(head) :]}){tag}"


def _explain(env: dict[str, str]) -> tuple[float, str]:
    """One `fixer explain --json` of the paste: seconds, and what it said on stderr."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "fixer", "explain", "--json", "-"], input=PASTE, env=env, capture_output=True, text=True
    )
    return time.perf_counter() - start, done.stderr


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[30, 100, 1000, 10000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--plot", type=Path, help="also draw the curve as an SVG file here")
    args = parser.parse_args()
    bare = statistics.median([_clock([sys.executable, "-c", "pass"]) for _ in range(args.runs)])
    print(f"python -c pass: {bare * 1000:.1f} ms")
    print("| entries | copies | build index | explain --json (median) | ratio to bare python |")
    print("|---:|---|---:|---:|---:|")
    curves: dict[str, list[tuple[int, float]]] = {"own wording": [], "same wording": []}
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
                env = installed_env(FIXER_KB=str(kb), FIXER_CACHE_DIR=str(cache), FIXER_KB_PATH="")
                build, said = _explain(env)
                assert not said, said[-500:]  # every copy loaded
                median = statistics.median(_explain(env)[0] for _ in range(args.runs))
            kind = "real" if size <= 30 else ("own wording" if own_wording else "same wording")
            for name in curves if size <= 30 else (kind,):
                curves[name].append((size, median))
            print(f"| {size:,} | {kind} | {build:.1f} s | {median * 1000:.0f} ms | {median / bare:.1f}x |", flush=True)
    if args.plot:
        args.plot.write_text(_svg(curves, bare), encoding="utf-8")
    return 0


def _clock(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=False)
    return time.perf_counter() - start


def _svg(curves: dict[str, list[tuple[int, float]]], bare: float) -> str:
    """The curves on log scales, with the 250 ms goal and bare Python: a plain SVG file the docs show as
    an image, drawn here so the site loads no charting script."""
    width, height, left, bottom, top, right = 640, 360, 70, 40, 20, 130
    sizes = sorted({size for points in curves.values() for size, _ in points})
    times = [t for points in curves.values() for _, t in points] + [bare, 0.25]
    ticks = [10.0**n for n in range(math.floor(math.log10(min(times))), math.ceil(math.log10(max(times))) + 1)]

    def scaled(value: float, low: float, high: float, start: float, end: float) -> float:
        share = (math.log10(value) - math.log10(low)) / ((math.log10(high) - math.log10(low)) or 1)
        return start + share * (end - start)

    def x(size: int) -> float:
        return scaled(size, sizes[0], sizes[-1], left, width - right)

    def y(seconds: float) -> float:
        return scaled(seconds, ticks[0], ticks[-1], height - bottom, top)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" font-family="sans-serif" '
        'font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="#444"/>',
        f'<line x1="{left}" y1="{height - bottom}" x2="{left}" y2="{top}" stroke="#444"/>',
    ]
    for size in sizes:
        parts.append(f'<text x="{x(size):.1f}" y="{height - bottom + 16}" text-anchor="middle">{size:,}</text>')
    parts.append(f'<text x="{(width - right + left) / 2}" y="{height - 6}" text-anchor="middle">KB entries</text>')
    for tick in ticks:
        label = f"{tick * 1000:.0f} ms" if tick < 1 else f"{tick:.0f} s"
        parts.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{label}</text>')
    for level, label in ((0.25, "goal: 250 ms"), (bare, "python -c pass")):
        parts.append(
            f'<line x1="{left}" y1="{y(level):.1f}" x2="{width - right}" y2="{y(level):.1f}" stroke="#999" '
            'stroke-dasharray="4 4"/>'
        )
        parts.append(f'<text x="{left + 6}" y="{y(level) - 4:.1f}" fill="#666">{label}</text>')
    for (name, points), colour in zip(curves.items(), ("#1565c0", "#c62828"), strict=False):
        path = " ".join(f"{x(size):.1f},{y(t):.1f}" for size, t in points)
        parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        size, t = points[-1]
        parts.append(f'<text x="{x(size) + 6:.1f}" y="{y(t) + 4:.1f}" fill="{colour}">{name}</text>')
    return "\n".join([*parts, "</svg>", ""])


if __name__ == "__main__":
    sys.exit(main())
