"""`fixer run --fix`: run, explain, patch on consent, run again, until the command passes.

Each round runs in a fresh process, so the patched files are what the next round imports. A Python
script runs under `fixer run --report` in that process, and what its failure showed (the failing
module, the objects in its frames, the machine) comes back to rank the cause, as under `fixer run`;
any other command (`-- torchrun ...`) is run as it is, its stderr passed through and read as a log.

The loop stops at the first of: the command passes; it fails with no device error fixer knows; the
same error comes back (the patch did not fix it); no patch is left (none, only unsafe ones without
--unsafe, or consent refused); --rounds. It ends with one summary and the series' combined diff, and
keeps one journal record of the series, so `fixer patch --revert` undoes every round at once.
"""

from __future__ import annotations

import codecs
import os
import shlex
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fixer.cli.common import CliError

if TYPE_CHECKING:
    from rich.console import Console

    from fixer.cli.run import Seen
    from fixer.explain.match import Explanation, Matcher
    from fixer.output.render import ColorChoice
    from fixer.patching.plan import Patch
    from fixer.patching.series import Series


@dataclass(frozen=True)
class Options:
    yes: bool = False
    unsafe: bool = False
    root: Path = Path()
    rounds: int = 10
    diff: Path | None = None  # where the combined diff goes, byte for byte, besides the terminal
    color: ColorChoice = "auto"


@dataclass(frozen=True)
class _Ran:
    status: int
    seen: Seen | None  # None when it passed, or failed with nothing fixer could read


def fix(command: list[str], script: bool, options: Options) -> int:
    """The exit status of the command's last run: 0 once it passes, so a script can rely on it."""
    from rich.markup import escape

    from fixer.cli.common import catalog
    from fixer.explain.match import Matcher
    from fixer.explain.project import current, launched
    from fixer.output import render
    from fixer.patching.series import Series

    if not command:
        raise CliError("--fix needs a script, or `--` and a command")
    if script and not Path(command[0]).is_file():
        raise CliError(f"{command[0]}: no such file")
    out = render.console(stderr=True, color=options.color)
    matcher = Matcher(catalog(), project=current(), command=launched())
    series = Series()
    record: Path | None = None
    status, ending = 1, f"stopped after {options.rounds} run(s) (--rounds)"
    try:
        for number in range(1, options.rounds + 1):
            out.print(f"[bold]fixer:[/bold] round {number}: running {escape(shlex.join(command))}")
            ran = _round(command, script)
            status = ran.status
            stop = _after_run(number, ran, series, matcher, out, options)
            if series.rounds[-1].written:
                record = _remember(record, series, out, options)
            if stop is not None:
                ending = stop
                break
    finally:
        _summary(series, ending, out, options)
    return status


def _after_run(number: int, ran: _Ran, series: Series, matcher: Matcher, out: Console, options: Options) -> str | None:
    """Add the round to the series, writing its patch on consent; why the series ends here (None: go on)."""
    from fixer.cli.common import catalog
    from fixer.diagnose.in_process import explained
    from fixer.output import render
    from fixer.patching.series import Round, signature

    if ran.status == 0:
        series.add(Round(0))
        return "the command passed"
    if ran.seen is None:
        series.add(Round(ran.status))
        return f"the command failed (exit status {ran.status}) with no traceback fixer could read"
    result = explained(matcher, ran.seen.text, ran.seen.findings, catalog())
    if result.traceback is None or not result.read:
        series.add(Round(ran.status))
        return "the command failed with an error that is not a device error fixer knows"
    error, cause = signature(result.traceback), result.matches[0].id
    again = series.repeats(error)
    if again is not None:
        series.add(Round(ran.status, error, cause))
        return f"round {number} failed with the same error as round {again}: the patch did not fix it"
    _show_explanation(ran.seen, result, out)
    patches, why_not = _chosen(result, options.unsafe)
    if not patches:
        series.add(Round(ran.status, error, cause))
        return why_not
    for patch in patches:
        out.print(render.patch_view(patch))
    written, failure = _write(patches, options)
    series.add(Round(ran.status, error, cause, written))
    return failure


def _remember(record: Path | None, series: Series, out: Console, options: Options) -> Path | None:
    """The series' one journal record, renewed after each round that wrote: a cache that cannot be
    written costs the undo, not the patch."""
    from fixer.patching import journal

    try:
        return journal.rerecord(record, series.combined(), options.root)
    except OSError as exc:
        out.print(f"fixer: could not keep a record to revert with ({exc.strerror or exc})")
        return record


def _round(command: list[str], script: bool) -> _Ran:
    """One run in a fresh process: a script under `fixer run --report`, any other command as it is."""
    if not script:
        return _teed(command)
    from fixer.cli.run import read_report

    with tempfile.TemporaryDirectory(prefix="fixer-round-") as folder:
        report = Path(folder) / "report.json"
        child = [sys.executable, "-m", "fixer", "run", "--report", str(report), *command]
        status = _status(subprocess.run(child, check=False).returncode)
        return _Ran(status, read_report(report) if status else None)


def _teed(command: list[str]) -> _Ran:
    """The command with its stderr passed through as it comes and kept, bounded as any log, to read."""
    from fixer import textio
    from fixer.cli.run import Seen

    try:
        child = subprocess.Popen(command, stderr=subprocess.PIPE)
    except OSError as exc:
        raise CliError(f"{command[0]}: cannot run it ({exc.strerror or exc})") from None
    assert child.stderr is not None
    kept, decoder = textio.BoundedText(), codecs.getincrementaldecoder("utf-8")("replace")
    with child.stderr:
        while chunk := os.read(child.stderr.fileno(), 1 << 16):
            sys.stderr.buffer.write(chunk)
            sys.stderr.buffer.flush()
            kept.feed(decoder.decode(chunk))
    kept.feed(decoder.decode(b"", final=True))
    status = _status(child.wait())
    return _Ran(status, Seen(kept.text(), None, ()) if status else None)


def _status(code: int) -> int:
    """A child killed by a signal reads as a shell shows it: 128 + the signal."""
    if code == -signal.SIGINT:
        raise KeyboardInterrupt
    return 128 - code if code < 0 else code


def _show_explanation(seen: Seen, result: Explanation, out: Console) -> None:
    from rich.markup import escape

    from fixer.output import render

    if seen.culprit is not None:
        out.print(f"[bold]fixer:[/bold] the failing module was {escape(seen.culprit)}")
    out.print(render.explanation(result, top=3))


def _chosen(result: Explanation, unsafe: bool) -> tuple[list[Patch], str]:
    """The patches to write this round, or why there are none."""
    from fixer.cli.explain import local_patches

    patches = local_patches(result)
    if not patches:
        from fixer.patching.targets import libraries_beside, user_files
        from fixer.patching.why_none import why_no_patch

        assert result.traceback is not None  # only a matched traceback is patched
        tb = result.traceback
        return [], f"no patch left: {why_no_patch(result.matches[0].entry, user_files(tb), libraries_beside(tb))}"
    chosen = [p for p in patches if p.applicability == "safe" or unsafe]
    if not chosen:
        return [], "no patch left: the only patch is unsafe; review it above and pass --unsafe to write it"
    return chosen, ""


def _write(patches: list[Patch], options: Options) -> tuple[tuple[Patch, ...], str | None]:
    """The patches written, and why the series stops here (None: run again)."""
    from fixer.cli.patch import consent
    from fixer.patching.apply import PatchError, apply

    if not options.yes and not consent(patches):
        return (), "no patch left: the patch was declined, so nothing was written this round"
    written: list[Patch] = []
    for patch in patches:
        try:
            apply(patch, options.root)
        except PatchError as exc:
            return tuple(written), f"the patch could not be written: {exc}"
        written.append(patch)
    return tuple(written), None


def _summary(series: Series, ending: str, out: Console, options: Options) -> None:
    """Every round on one line, why it ended, then the series as one diff and the way back."""
    from fixer.output import diff, render

    out.print(render.rule("fixer run --fix"))
    for number, done in enumerate(series.rounds, 1):
        written = ", ".join(f"{p.path.name} ({p.codemod})" for p in done.written)
        what = f"{done.cause}: patched {written}" if written else (done.cause or f"exit status {done.status}")
        out.print(f"round {number}: {'passed' if done.status == 0 else what}")
    out.print(f"[bold]fixer:[/bold] {ending}")
    combined = series.combined()
    if not combined:
        return
    rounds = sum(1 for done in series.rounds if done.written)
    text = "".join(p.diff for p in combined)
    out.print(f"[bold]fixer:[/bold] the {rounds} round(s) of patches as one diff (fixer patch --revert undoes them):")
    out.file.flush()
    diff.write(text, sys.stderr.buffer, color=render.colors(out))
    if options.diff is not None:
        try:
            options.diff.write_bytes(text.encode("utf-8", errors="surrogateescape"))
        except OSError as exc:
            out.print(f"[bold]fixer:[/bold] could not write the diff to {options.diff} ({exc.strerror or exc})")
        else:
            out.print(f"[bold]fixer:[/bold] wrote the diff to {options.diff}")
