"""`fixer patch`: show the fix as a diff to the user's own files; write it only with consent."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from fixer.cli.common import NO_MATCH, NO_TRACEBACK, NOT_APPLIED, OK, CliError, catalog

if TYPE_CHECKING:
    from fixer.explain.match import Match
    from fixer.output.render import ColorChoice
    from fixer.patching.plan import Patch


def patch(text: str, args: argparse.Namespace) -> int:
    from fixer.explain.match import Matcher
    from fixer.explain.project import current

    matcher = Matcher(catalog(), project=current())
    result = matcher.explain(text)
    if result.traceback is None:
        raise CliError("no traceback or known error message found in the input", NO_TRACEBACK)
    match = next((m for m in result.matches if m.id == args.entry), None) if args.entry else None
    if args.entry and match is None:
        entry = catalog().get(args.entry)
        if entry is None:
            raise CliError(f"no KB entry {args.entry!r}; `fixer list` shows the ids")
        from fixer.explain.match import Match
        from fixer.kb.index import Card

        match = Match(Card.of(entry), score=0, reasons=())  # the user's choice, not a ranking
    match = match or (result.read[0] if result.read else None)
    if match is None:
        raise CliError("no KB entry matches this error, so there is nothing to patch", NO_MATCH)
    from fixer.patching.plan import propose
    from fixer.patching.targets import locate

    root = _root(args.root)
    located = locate(result.traceback, libraries=args.libraries)
    for skipped in located.skipped:
        print(f"fixer: {skipped.path}: skipped: {skipped.reason}", file=sys.stderr)
    for moved in located.moved:
        print(f"fixer: {moved.path}: {moved}; reading it there", file=sys.stderr)
    for relative in located.relative:
        print(f"fixer: {relative}: read in {Path.cwd()} (the traceback does not say where it ran)", file=sys.stderr)
    patches = propose(located.files, match)
    if args.json:
        from fixer.output.report import patch_out

        print(json.dumps({"entry": match.id, "patches": [asdict(patch_out(p)) for p in patches]}, indent=2))
    if not patches:
        if not args.json:
            from fixer.patching.targets import libraries_beside

            _explain_no_patch(match, located.files, [] if args.libraries else libraries_beside(result.traceback))
        return NO_MATCH
    if not args.json:
        _show(patches, args.color)
    if not args.apply:
        return OK
    return _apply(patches, root, yes=args.yes, unsafe=args.unsafe)


def _show(patches: list[Patch], color: ColorChoice) -> None:
    """The diffs alone on stdout, byte for byte, so `fixer patch > fix.diff && git apply fix.diff`
    writes what --apply writes; what each patch is and whether it is safe goes to stderr."""
    from fixer.output import diff, render

    note = render.console(stderr=True, color=color)
    out = render.console(color=color)
    for patch in patches:
        note.print(render.patch_heading(patch))
        sys.stdout.flush()
        diff.write(patch.diff, sys.stdout.buffer, color=render.colors(out))


def _root(option: str | None) -> Path:
    root = Path(option) if option else Path.cwd()
    if not root.is_dir():
        raise CliError(f"--root {option}: not a directory")
    return root


def _explain_no_patch(match: Match, files: dict[Path, tuple[int, ...]], beside: list[Path]) -> None:
    """On stderr like every other word of patch's: stdout carries diffs only, so that
    `fixer patch log | git apply` is given nothing, not prose, when there is no diff."""
    from fixer.patching.why_none import why_no_patch

    entry = match.entry
    lines = [f"fixer: {why_no_patch(entry, files, beside)}", f"To fix it by hand ({entry.fix.summary.rstrip('.')}):"]
    lines += [f"  {number}. {' '.join(step.split())}" for number, step in enumerate(entry.fix.steps, 1)]
    print("\n".join(lines), file=sys.stderr)


def _apply(patches: list[Patch], root: Path, *, yes: bool, unsafe: bool) -> int:
    from fixer.patching.apply import PatchError, apply

    chosen = [p for p in patches if p.applicability == "safe" or unsafe]
    skipped = len(patches) - len(chosen)
    if skipped:
        print(f"fixer: {skipped} unsafe patch(es) not applied; review them and pass --unsafe", file=sys.stderr)
    if not chosen:
        return NOT_APPLIED
    if not yes and not consent(chosen):
        print("fixer: nothing written", file=sys.stderr)
        return NOT_APPLIED
    written: list[Patch] = []
    for patch in chosen:
        try:
            apply(patch, root)
        except PatchError as exc:
            print(f"fixer: {exc}", file=sys.stderr)
            _remember(written, root)
            return NOT_APPLIED
        written.append(patch)
        print(f"fixer: patched {patch.path}", file=sys.stderr)
    _remember(written, root)
    return OK if not skipped else NOT_APPLIED


def _remember(written: list[Patch], root: Path) -> None:
    """Keep the way back; a cache that cannot be written costs the undo, not the patch."""
    if not written:
        return
    from fixer.patching import journal

    try:
        journal.record(written, root)
    except OSError as exc:
        print(f"fixer: could not keep a record to revert with ({exc.strerror or exc})", file=sys.stderr)
        return
    print("fixer: to undo: fixer patch --revert", file=sys.stderr)


def revert(args: argparse.Namespace) -> int:
    """Undo the project's last applied run, all of it or nothing: a file edited since keeps the edit."""
    from fixer.patching import journal
    from fixer.patching.apply import PatchError, apply

    root = _root(args.root)
    record = journal.latest(root)
    if record is None:
        raise CliError(f"nothing to revert: fixer has no applied patch on record for {root.resolve()}", NO_MATCH)
    try:
        undo = [written.undo() for written in record.written]
    except journal.Unrevertable as exc:
        raise CliError(str(exc), NOT_APPLIED) from None
    if not args.yes and not consent(undo):
        print("fixer: nothing written", file=sys.stderr)
        return NOT_APPLIED
    for patch in undo:
        try:
            apply(patch, root)
        except PatchError as exc:
            print(f"fixer: {exc}", file=sys.stderr)
            return NOT_APPLIED
        print(f"fixer: reverted {patch.path}", file=sys.stderr)
    record.file.unlink(missing_ok=True)
    return OK


def consent(patches: list[Patch]) -> bool:
    """Ask on the terminal itself: stdin may be the piped traceback. Unbuffered bytes, because a
    terminal cannot seek and a text wrapper over a read-write file insists on it."""
    names = ", ".join(str(p.path) for p in patches)
    try:
        with open("/dev/tty", "r+b", buffering=0) as tty:
            tty.write(f"Apply {len(patches)} patch(es) to {names}? [y/N] ".encode())
            answer = tty.readline().decode(errors="replace")
    except OSError:
        raise CliError("no terminal to ask for consent; pass --yes to apply without asking", NOT_APPLIED) from None
    return answer.strip().lower() in {"y", "yes"}
