"""fixer on real threads with the public code their frames point into laid out on disk.

Each thread of benchmarks/realcode/threads.yaml names the repository its reporter ran, the commit they
ran (the last one before the thread, checked against a printed frame) and the folder their frames show
it in. The benchmark lays that commit's source files out where the frames point, on this machine,
rewriting the traceback's folder to the new place (the only change to the text), and runs
`fixer explain --json` as the reporter would, from their project folder (a git clone of the repository,
which fixer reads for answers to its questions; an installed package's code is no project); and once
more on the thread's text alone, from an empty folder. It reports:

  top-1, text only and with the code (for a cause no entry holds, right when fixer says it is not in
  the KB);
  threads where the code made the answer worse;
  patches proposed, on the threads whose upstream fix changed a file the traceback shows: to the
  user's own files (what `fixer explain` proposes), and with `--libraries` (the installed libraries'
  files too, which the upstream fix of a library changed);
  patches at the upstream fix's place: they change a line the fix changes (a first, automatic check);
  patches that apply (`git apply`, from the folder fixer ran in) and leave a file that compiles;
  patches equal in effect to the upstream fix, by a labelled comparison: each item's `reviewed` records
  the lines a patch fixer proposed adds, read against the upstream fix and labelled equal or differs
  with why; a patch whose added lines no record holds counts as not reviewed, to be read and labelled;
  the time of an explanation with the code, against the text alone.

The code is not kept in this repository: `--mirrors DIR` reads git mirrors already on disk (laid out as
DIR/<owner>+<name>/repo), and otherwise the repositories are cloned into `--cache`.
Run: python benchmarks/realcode.py [--mirrors DIR] [--only ID] [--verbose]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
THREADS = ROOT / "benchmarks" / "realcode" / "threads.yaml"
# What a user's project holds besides its code that fixer reads: configurations and launch scripts.
SOURCE_SUFFIXES = {".py", ".sh", ".yaml", ".yml", ".json", ".cfg", ".toml", ".ini"}
MAX_FILE_BYTES = 1_000_000


@dataclass
class Outcome:
    id: str
    expect: str
    text_first: str | None
    code_first: str | None
    patches: list[dict[str, Any]]
    library_patches: list[dict[str, Any]]  # with --libraries
    same_place: bool
    effect: str | None  # "equal" or "differs", as reviewed; None when no patch or no review covers it
    text_seconds: float
    code_seconds: float
    fix_in_shown_file: bool
    sound: int = 0  # patches (with --libraries) that `git apply` takes and whose result compiles


def git_dir(repo: str, mirrors: Path | None, cache: Path) -> Path:
    """A git directory holding the repository's history: a mirror on disk, or a clone made once."""
    name = repo.replace("/", "+")
    for base in (mirrors, cache):
        if base is None:
            continue
        for candidate in (base / name / "repo" / ".git", base / name / "repo"):
            if (candidate / "objects").is_dir():
                return candidate
    into = cache / name / "repo"
    into.parent.mkdir(parents=True, exist_ok=True)
    cloned = subprocess.run(["git", "clone", "--bare", "--quiet", f"https://github.com/{repo}.git", str(into)])
    if cloned.returncode != 0:
        raise SystemExit(f"{repo}: no mirror under --mirrors and no clone (offline?): lay one out as {name}/repo")
    return into


def source_files(git: Path, commit: str, subdir: str) -> dict[str, bytes]:
    """The commit's source and configuration files under `subdir`, by their path below it."""
    listing = subprocess.run(
        ["git", "--git-dir", str(git), "ls-tree", "-r", "-l", commit], capture_output=True, text=True, check=True
    ).stdout
    wanted = []
    prefix = f"{subdir.strip('/')}/" if subdir else ""
    for line in listing.splitlines():
        meta, path = line.split("\t", 1)
        kind, size = meta.split()[1], meta.split()[3]
        source = kind == "blob" and path.startswith(prefix) and Path(path).suffix in SOURCE_SUFFIXES
        if source and size.isdigit() and int(size) <= MAX_FILE_BYTES:
            wanted.append(path)
    batch = subprocess.run(
        ["git", "--git-dir", str(git), "cat-file", "--batch"],
        input="".join(f"{commit}:{path}\n" for path in wanted).encode(),
        capture_output=True,
        check=True,
    ).stdout
    files, at = {}, 0
    for path in wanted:
        header_end = batch.index(b"\n", at)
        size = int(batch[at:header_end].split()[2])
        files[path[len(prefix) :]] = batch[header_end + 1 : header_end + 1 + size]
        at = header_end + 1 + size + 1
    return files


def place(root: str, disk: Path, project: Path) -> tuple[Path, Path]:
    """Where the repository goes for a frame folder `root`, and the folder the reporter ran from: their
    project folder, or an empty one when the code is an installed package."""
    if root in (".", ""):
        return project, project
    windows = PureWindowsPath(root)
    if windows.drive:
        placed = disk / windows.drive.rstrip(":") / Path(*windows.parts[1:])
    elif root.startswith("/"):
        placed = disk / root.lstrip("/")
    else:
        return project / root, project
    return placed, project if "site-packages" in root or "dist-packages" in root else placed


def moved(text: str, root: str, placed: Path, wrapped_at: int | None = None) -> str:
    """The traceback with its frames' folder `root` replaced by `placed` (a relative one stays, since the
    run starts beside it); a Windows path's separators become this system's, since the file now lies here.
    A paste its reporter's console cut at `wrapped_at` columns is cut there again once the paths changed,
    as that console would have printed them: a path cut where the old one was is no path at all."""
    if root in (".", ""):
        return text
    absolute = root.startswith("/") or bool(PureWindowsPath(root).drive)
    path_tail = r"[^\s\"',:]*"

    def swap(found: re.Match[str]) -> str:
        return (str(placed) if absolute else root) + found.group(1).replace("\\", "/")

    if wrapped_at is None:
        return re.sub(re.escape(root) + f"({path_tail})", swap, text)
    whole = re.sub(re.escape(root) + f"({path_tail})", swap, _joined(text, wrapped_at))
    return "\n".join(
        line[i : i + wrapped_at] for line in whole.split("\n") for i in range(0, len(line) or 1, wrapped_at)
    )


def _joined(text: str, width: int) -> str:
    """The lines a console cut at `width` columns, joined back: a line that long goes on in the next."""
    joined: list[str] = []
    cut = False
    for line in text.split("\n"):
        if cut:
            joined[-1] += line
        else:
            joined.append(line)
        cut = len(line) == width
    return "\n".join(joined)


def explain(text: str, cwd: Path, *options: str) -> tuple[dict[str, Any], float]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "fixer", "explain", "--json", *options, "-"],
        input=text,
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    took = time.perf_counter() - start
    if not done.stdout.strip():
        raise RuntimeError(f"fixer explain failed in {cwd}: {done.stderr[-2000:]}")
    return json.loads(done.stdout), took


def changed_lines(diff: str) -> set[str]:
    """The lines a unified diff removes, without their indentation: where it changes the code."""
    return {
        line[1:].strip()
        for line in diff.splitlines()
        if line.startswith("-") and not line.startswith("---") and line[1:].strip()
    }


def upstream_diff(git: Path, commit: str, files: list[str]) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(git), "show", "--format=", "-U0", commit, "--", *files],
        capture_output=True,
        text=True,
        check=False,
    ).stdout


def run_item(item: dict[str, Any], mirrors: Path | None, cache: Path) -> Outcome:
    git = git_dir(item["repo"], mirrors, cache)
    with tempfile.TemporaryDirectory(prefix="fixer-realcode-") as tmp:
        empty, disk, project = Path(tmp, "empty"), Path(tmp, "disk"), Path(tmp, "project")
        for folder in (empty, disk, project):
            folder.mkdir()
        text_only, text_seconds = explain(item["traceback"], empty)
        placed, cwd = place(str(item["root"]), disk, project)
        cwd = placed / item["cwd"] if "cwd" in item else cwd
        if cwd != project:
            (placed / ".git").mkdir(parents=True, exist_ok=True)  # a clone: fixer reads the project around it
        for path, content in source_files(git, item["commit"], item.get("subdir", "")).items():
            target = placed / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        cwd.mkdir(parents=True, exist_ok=True)
        laid = moved(item["traceback"], str(item["root"]), placed, item.get("wrapped_at"))
        with_code, code_seconds = explain(laid, cwd)
        with_libraries, _ = explain(laid, cwd, "--libraries")
        sound = sum(applies_and_compiles(p["diff"], cwd) for p in with_libraries.get("patches", []))
    fix = item["fix"]
    patches = with_code.get("patches", [])
    library_patches = with_libraries.get("patches", [])
    upstream = changed_lines(upstream_diff(git, fix["commit"], fix.get("files", []))) if fix.get("commit") else set()
    return Outcome(
        id=item["id"],
        expect=item["expect"],
        text_first=_first(text_only),
        code_first=_first(with_code),
        patches=patches,
        library_patches=library_patches,
        same_place=any(changed_lines(p["diff"]) & upstream for p in library_patches),
        effect=reviewed_effect(item.get("reviewed", []), library_patches),
        text_seconds=text_seconds,
        code_seconds=code_seconds,
        fix_in_shown_file=fix["kind"] == "code" and bool(fix.get("in_shown_file")),
        sound=sound,
    )


def applies_and_compiles(diff: str, cwd: Path) -> bool:
    """Apply a patch as its user would (`git apply`, from the folder fixer ran in; a path outside it is
    written from the root) and compile the file it changes."""
    name = next(line[len("+++ b/") :] for line in diff.splitlines() if line.startswith("+++ b/"))
    base = cwd if (cwd / name).exists() else Path("/")
    applied = subprocess.run(["git", "apply", "-"], input=diff, text=True, cwd=base, capture_output=True, check=False)
    if applied.returncode != 0:
        return False
    try:
        compile((base / name).read_bytes(), name, "exec")
    except SyntaxError:
        return False
    return True


def added_lines(diff: str) -> set[str]:
    """The lines a unified diff adds, without their indentation: what a review was written against."""
    return {
        line[1:].strip()
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++") and line[1:].strip()
    }


def reviewed_effect(reviews: list[dict[str, Any]], patches: list[dict[str, Any]]) -> str | None:
    """The labelled effect of the patches proposed, when a review holds exactly the lines they add."""
    if not patches:
        return None
    added = set().union(*(added_lines(p["diff"]) for p in patches))
    return next((r["effect"] for r in reviews if set(r["adds"]) == added), None)


def _first(document: dict[str, Any]) -> str | None:
    if document.get("beyond_kb"):
        return None
    matches = document.get("matches") or []
    return matches[0]["id"] if matches else None


def _right(first: str | None, expect: str) -> bool:
    """A cause no entry holds (`new:`) is answered right by saying so: no candidate, or "probably not in
    the KB"; naming an entry there is a wrong answer like any other."""
    return first is None if expect.startswith("new:") else first == expect


def report(outcomes: list[Outcome], verbose: bool, diffs: bool = False) -> None:
    n = len(outcomes)
    text_right = sum(_right(o.text_first, o.expect) for o in outcomes)
    code_right = sum(_right(o.code_first, o.expect) for o in outcomes)
    worse = [o.id for o in outcomes if _right(o.text_first, o.expect) and not _right(o.code_first, o.expect)]
    shown = [o for o in outcomes if o.fix_in_shown_file]
    proposed = [o for o in shown if o.patches]
    anywhere = [o for o in shown if o.library_patches]
    print(f"threads                       {n}")
    print(f"top-1, text only              {text_right}/{n} ({text_right / n:.2f})")
    print(f"top-1, with the code          {code_right}/{n} ({code_right / n:.2f})")
    print(f"worse with the code           {len(worse)}{': ' + ', '.join(worse) if worse else ''}")
    print(f"patches proposed              {len(proposed)}/{len(shown)} threads fixed upstream in a shown file")
    print(f"  with --libraries            {len(anywhere)}/{len(shown)}")
    print(f"  at the upstream fix's place {sum(o.same_place for o in anywhere)}/{len(anywhere)}")
    proposed_anywhere = sum(len(o.library_patches) for o in outcomes)
    print(f"  apply and compile           {sum(o.sound for o in outcomes)}/{proposed_anywhere}")
    equal = sum(o.effect == "equal" for o in anywhere)
    unreviewed = [o.id for o in anywhere if o.effect is None]
    print(f"  equal in effect (reviewed)  {equal}/{len(anywhere)}")
    print(f"  not reviewed yet            {len(unreviewed)}{': ' + ', '.join(unreviewed) if unreviewed else ''}")
    ratios = [o.code_seconds / o.text_seconds for o in outcomes]
    print(f"time with the code / text     median {statistics.median(ratios):.2f}x, max {max(ratios):.2f}x")
    if verbose:
        for o in outcomes:
            marks = f"{'+' if _right(o.text_first, o.expect) else '-'}{'+' if _right(o.code_first, o.expect) else '-'}"
            patch = f" patch{'=' if o.same_place else ''}" if o.patches else ""
            patch += f" library-patch{'=' if o.same_place else ''}" if o.library_patches and not o.patches else ""
            took = f"{o.code_seconds / o.text_seconds:.1f}x"
            print(f"  {marks} {o.id}: expect {o.expect}; text {o.text_first}; code {o.code_first}{patch}; {took}")
            for proposed in o.library_patches if diffs else ():
                print(textwrap.indent(proposed["diff"], "      "), end="")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, help="folder of git mirrors, as <owner>+<name>/repo")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "fixer-realcode")
    parser.add_argument("--only", action="append", default=[], metavar="ID")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--diffs", action="store_true", help="with --verbose: each patch proposed (--libraries)")
    args = parser.parse_args()
    items = yaml.safe_load(THREADS.read_text(encoding="utf-8"))
    items = [item for item in items if not args.only or item["id"] in args.only]
    outcomes = []
    for number, item in enumerate(items, 1):
        print(f"[{number}/{len(items)}] {item['id']}", file=sys.stderr)
        outcomes.append(run_item(item, args.mirrors, args.cache))
    report(outcomes, args.verbose, args.diffs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
