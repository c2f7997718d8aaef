"""The `fixer` command line. Side effects (reading input, printing, exit codes) live here only.

Exit codes, for scripts:
  0  a KB entry matched (explain), a patch was proposed or applied (patch), or the command succeeded
  1  a traceback was found but no KB entry matches it, or (patch) no automatic patch exists;
     `kb lint` found problems
  2  bad usage or unreadable input (missing file, directory, binary data, broken KB)
  3  no traceback or known error message in the input
  4  (patch --apply) nothing written: declined, unsafe without --unsafe, or the file changed
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from fixer import __version__

if TYPE_CHECKING:
    from fixer.catalog import Catalog
    from fixer.match import Explanation, Match
    from fixer.patching.plan import Patch

OK, NO_MATCH, USAGE, NO_TRACEBACK, NOT_APPLIED = 0, 1, 2, 3, 4
DEFAULT_EXAMPLE = "optimizer-state-after-resume"

EPILOG = """\
exit codes: 0 matched / success, 1 no KB entry matches (patch: no automatic patch;
lint: problems found), 2 bad usage or unreadable input, 3 no traceback found in the input,
4 patch not applied (declined, unsafe without --unsafe, or the file changed).

Plain `fixer` with piped input passes the text through live and explains the last
traceback:  python train.py 2>&1 | fixer
"""


class CliError(Exception):
    """A one-line error for the user, with the exit code to leave with."""

    def __init__(self, message: str, code: int = USAGE) -> None:
        super().__init__(message)
        self.code = code


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's default prints usage; one line is kinder
        raise CliError(f"{message} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="fixer",
        description="Explain and fix PyTorch device-placement errors.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"fixer {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    explain = commands.add_parser(
        "explain",
        help="explain a traceback (file, '-' for stdin, or paste it)",
        description="Find the traceback in FILE (or stdin) and rank its likely causes from the KB.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    explain.add_argument("file", nargs="?", default="-", metavar="FILE", help="log or traceback; '-' is stdin")
    explain.add_argument("--top", type=_positive, default=3, metavar="N", help="candidates to show (default 3)")
    explain.add_argument("--json", action="store_true", help="machine-readable output (see README)")
    explain.add_argument(
        "--example",
        nargs="?",
        const=DEFAULT_EXAMPLE,
        metavar="ID",
        help=f"explain a real example traceback from the KB (default: {DEFAULT_EXAMPLE})",
    )

    patch = commands.add_parser(
        "patch",
        help="propose (or apply) a patch to your code for a traceback",
        description="Find the traceback in FILE (or stdin), take the most likely cause, and show the "
        "unified diff its fix makes to your own files named in the traceback. Nothing is written "
        "without --apply and your consent.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    patch.add_argument("file", nargs="?", default="-", metavar="FILE", help="log or traceback; '-' is stdin")
    patch.add_argument("--apply", action="store_true", help="write the patch after asking (see --yes)")
    patch.add_argument("--yes", action="store_true", help="with --apply: do not ask")
    patch.add_argument("--unsafe", action="store_true", help="with --apply: also write unsafe patches")
    patch.add_argument("--entry", metavar="ID", help="use this KB entry's fix instead of the best match")
    patch.add_argument("--json", action="store_true", help="the patches as JSON")

    diagnose = commands.add_parser(
        "diagnose",
        help="check this machine (and a checkpoint) to confirm or rule out causes",
        description="Run the environment probe (torch build, devices, ranks, libraries) in a child process, "
        "read a checkpoint's saved devices without loading it, and re-rank a traceback's causes with what "
        "they confirm or rule out. Runs no code of yours.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    diagnose.add_argument("--traceback", metavar="FILE", help="a log or traceback to re-rank ('-' is stdin)")
    diagnose.add_argument("--checkpoint", metavar="PATH", help="a torch.save file to inspect (never loaded)")
    diagnose.add_argument("--json", action="store_true", help="findings and matches as JSON")

    run = commands.add_parser(
        "run",
        help="run your script and explain a device error from inside it",
        description="Run SCRIPT with ARGS unchanged (as `python SCRIPT ARGS` would), watching which module "
        "is running. If a device error escapes, say which module failed and where its tensors and inputs "
        "were, then explain it and propose the patch. Exits with the script's own exit code.",
    )
    run.add_argument("script", metavar="SCRIPT", help="the Python script to run")
    run.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="arguments for the script")

    show = commands.add_parser("show", help="show a KB entry", description="Show one KB entry in full.")
    show.add_argument("id", metavar="ID")
    show.add_argument("--json", action="store_true", help="the entry as JSON")

    listing = commands.add_parser("list", help="list KB entries", description="List the KB entries.")
    listing.add_argument("--json", action="store_true", help="ids and titles as JSON")

    kb = commands.add_parser("kb", help="maintain the knowledge base", description="Maintain the KB.")
    kb_commands = kb.add_subparsers(dest="kb_command", metavar="KB_COMMAND", parser_class=_Parser)
    schema = kb_commands.add_parser(
        "schema", help="write the entry JSON Schema", description="Write the JSON Schema of a KB entry."
    )
    schema.add_argument("-o", "--output", metavar="PATH", help="file to write (default: stdout)")
    lint = kb_commands.add_parser("lint", help="check every entry", description="Check the KB; exits 1 on any problem.")
    lint.add_argument("--kb", metavar="DIR", help="KB directory (default: the installed KB)")
    lint.add_argument("--json", action="store_true", help="problems as JSON")
    stats = kb_commands.add_parser(
        "stats", help="per-entry and total counts", description="Examples and repro verification per entry."
    )
    stats.add_argument("--json", action="store_true", help="the counts as JSON")
    accuracy = kb_commands.add_parser(
        "accuracy",
        help="score the KB on a labelled corpus",
        description="Top-1/top-3 of `fixer explain` on a YAML list of {id, traceback, expect} items.",
    )
    accuracy.add_argument("corpus", metavar="CORPUS", help="e.g. ../shared/corpus/dev_tracebacks.yaml")
    accuracy.add_argument("--misses", action="store_true", help="list the items whose first match is wrong")
    accuracy.add_argument("--json", action="store_true", help="the figures as JSON")
    return parser


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {value!r}")
    return number


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        return _dispatch(args_list)
    except CliError as exc:
        print(f"fixer: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("fixer: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        sys.stderr.close()  # a closed pager or `| head`: nothing left to say
        return OK


def _dispatch(argv: list[str]) -> int:
    from fixer import textio

    parser = build_parser()
    if not argv:
        if textio.stdin_is_terminal():
            parser.print_help()
            return USAGE
        return _explain_text(_read_input("-", passthrough=True), top=3, as_json=False, passthrough=True)
    args = parser.parse_args(argv)
    if args.command == "explain":
        if args.example:
            text = _example_text(args.example)
        else:
            text = _read_input(args.file, passthrough=False)
        return _explain_text(text, top=args.top, as_json=args.json, passthrough=False)
    if args.command == "patch":
        text = _read_input(args.file, passthrough=False)
        return _patch(text, args)
    if args.command == "diagnose":
        return _diagnose(args)
    if args.command == "run":
        return _run(args.script, args.args)
    if args.command == "show":
        return _show(args.id, as_json=args.json)
    if args.command == "list":
        return _list(as_json=args.json)
    if args.command == "kb":
        if args.kb_command == "schema":
            return _schema(args.output)
        if args.kb_command == "lint":
            return _lint(args.kb, as_json=args.json)
        if args.kb_command == "stats":
            return _stats(as_json=args.json)
        if args.kb_command == "accuracy":
            return _accuracy(args.corpus, misses=args.misses, as_json=args.json)
        parser.parse_args(["kb", "--help"])
    parser.print_help()
    return USAGE


def _catalog() -> Catalog:
    from fixer.catalog import KBError, load

    try:
        catalog = load()
    except KBError as exc:
        raise CliError(str(exc)) from None
    if catalog.problems:
        print(
            f"fixer: skipped {len(catalog.problems)} broken KB file(s); run `fixer kb lint`",
            file=sys.stderr,
        )
    return catalog


def _read_input(source: str, *, passthrough: bool) -> str:
    from fixer import textio

    try:
        if source != "-":
            return textio.read_file(source)
        if textio.stdin_is_terminal():
            print(
                "Paste the traceback, then press Ctrl-D (Ctrl-Z then Enter on Windows):",
                file=sys.stderr,
            )
        return textio.read_stdin(echo=passthrough)
    except textio.InputError as exc:
        raise CliError(str(exc)) from None


def _example_text(entry_id: str) -> str:
    entry = _catalog().get(entry_id)
    if entry is None:
        raise CliError(f"no KB entry {entry_id!r}; `fixer list` shows the ids")
    return entry.examples[0].traceback


def _explain_text(text: str, *, top: int, as_json: bool, passthrough: bool) -> int:
    from fixer.match import Matcher

    if not text.strip():
        if passthrough:
            return OK
        raise CliError("the input is empty; paste or pipe a traceback", NO_TRACEBACK)
    result = Matcher(_catalog()).explain(text)
    patches = _local_patches(result)
    if as_json:
        from fixer.report import explain_out

        matches = result.matches[:top]
        print(explain_out(result.traceback, result.evidence, matches, patches).model_dump_json(indent=2))
    else:
        _print_explanation(result, top, passthrough, patches)
    if result.traceback is None:
        return OK if passthrough else NO_TRACEBACK
    return OK if result.matches else NO_MATCH


def _local_patches(result: Explanation) -> list[Patch]:
    """The best match's patch when the traceback's own files are here; LibCST loads only then."""
    from fixer.patching import registry
    from fixer.patching.targets import user_files

    if result.traceback is None or not result.matches:
        return []
    codemod = result.matches[0].entry.fix.codemod
    if codemod not in registry.CODEMODS or not user_files(result.traceback):
        return []
    from fixer.patching.plan import propose

    return propose(result.traceback, result.matches[0])


def _print_explanation(result: Explanation, top: int, passthrough: bool, patches: list[Patch]) -> None:
    from fixer import render

    out = render.console()
    if passthrough:
        out.rule("fixer")
    if result.traceback is None:
        if not passthrough:
            print("fixer: no traceback or known error message found in the input", file=sys.stderr)
        return
    if not result.matches:
        tb = result.traceback
        out.print(render.error_header(tb))
        reason = (
            "the two sides differ only in dtype, not device: this is not a device-placement error"
            if result.evidence is not None and result.evidence.dtype_only
            else "no KB entry matches this error"
        )
        out.print(f"fixer: {reason}.")
        return
    out.print(render.explanation(result, top))
    for patch in patches:
        out.print(render.patch_view(patch))
    if patches:
        out.print("[dim]Apply with: fixer patch --apply (it asks first; only safe patches unless --unsafe)[/dim]")


def _show(entry_id: str, *, as_json: bool) -> int:
    entry = _catalog().get(entry_id)
    if entry is None:
        raise CliError(f"no KB entry {entry_id!r}; `fixer list` shows the ids", NO_MATCH)
    if as_json:
        print(entry.model_dump_json(indent=2))
        return OK
    from fixer import render

    render.console().print(render.entry_page(entry))
    return OK


def _list(*, as_json: bool) -> int:
    entries = sorted(_catalog(), key=lambda e: e.id)
    if as_json:
        print(json.dumps([{"id": e.id, "title": e.title} for e in entries], indent=2))
        return OK
    from fixer import render

    render.console().print(render.entry_list(entries))
    return OK


def _schema(output: str | None) -> int:
    from fixer.schema import Entry

    text = json.dumps(Entry.model_json_schema(), indent=2) + "\n"
    if output is None:
        sys.stdout.write(text)
        return OK
    try:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write {output}: {exc.strerror or exc}") from None
    print(f"wrote {output}", file=sys.stderr)
    return OK


def _lint(kb_dir: str | None, *, as_json: bool) -> int:
    from fixer.catalog import default_root
    from fixer.lint import entry_stats, lint

    root = Path(kb_dir) if kb_dir else default_root()
    if not root.is_dir():
        raise CliError(f"no knowledge base at {root}")
    entries, problems = lint(root)
    stats = [entry_stats(e) for e in entries]
    if as_json:
        print(
            json.dumps(
                {"entries": [vars(s) for s in stats], "problems": [vars(p) for p in problems]},
                indent=2,
            )
        )
    else:
        for entry in stats:
            print(f"{entry.id}: {entry.examples} example(s), repro verified on {entry.repro}")
        for problem in problems:
            print(problem)
        print(f"{len(entries)} entries, {len(problems)} problem(s)")
    return NO_MATCH if problems else OK


def _stats(*, as_json: bool) -> int:
    from collections import Counter

    from fixer.lint import entry_stats

    stats = [entry_stats(e) for e in sorted(_catalog(), key=lambda e: e.id)]
    repro = Counter(s.repro for s in stats)
    totals = {
        "entries": len(stats),
        "examples": sum(s.examples for s in stats),
        "entries_with_examples": sum(s.examples > 0 for s in stats),
        "repro": {kind: repro.get(kind, 0) for kind in ("cpu", "cuda-only", "none")},
    }
    if as_json:
        print(json.dumps({"entries": [vars(s) for s in stats], "totals": totals}, indent=2))
        return OK
    from fixer import render

    render.console().print(render.stats_table(stats))
    print(
        f"{totals['entries']} entries, {totals['examples']} cited examples; repro verified on cpu: "
        f"{repro['cpu']}, cuda-only: {repro['cuda-only']}, none: {repro['none']}"
    )
    return OK


def _accuracy(corpus: str, *, misses: bool, as_json: bool) -> int:
    import yaml

    from fixer.evaluate import evaluate, load_corpus
    from fixer.match import Matcher

    try:
        items = load_corpus(Path(corpus))
    except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError) as exc:
        raise CliError(f"cannot read the corpus {corpus}: {exc}".splitlines()[0]) from None
    matcher = Matcher(_catalog())
    with _progress(len(items), "scoring the corpus") as advance:

        def rank(text: str) -> list[str]:
            advance()
            return [m.id for m in matcher.explain(text).matches]

        score = evaluate(rank, items)
    if as_json:
        per_entry = {
            k: {"n": t.n, "top1": t.top1_rate, "top3": t.top3_rate} for k, t in sorted(score.per_entry.items())
        }
        overall = {"n": score.overall.n, "top1": score.overall.top1_rate, "top3": score.overall.top3_rate}
        print(json.dumps({"overall": overall, "per_entry": per_entry}, indent=2))
        return OK
    from fixer import render

    render.console().print(render.accuracy_table(score))
    if misses:
        for item_id, expect, got in score.misses:
            print(f"miss {item_id}: want {list(expect)}, got {got}")
    return OK


def _patch(text: str, args: argparse.Namespace) -> int:
    from fixer.match import Matcher

    matcher = Matcher(_catalog())
    result = matcher.explain(text)
    if result.traceback is None:
        raise CliError("no traceback or known error message found in the input", NO_TRACEBACK)
    match = next((m for m in result.matches if m.id == args.entry), None) if args.entry else None
    if args.entry and match is None:
        entry = matcher.catalog.get(args.entry)
        if entry is None:
            raise CliError(f"no KB entry {args.entry!r}; `fixer list` shows the ids")
        from fixer.match import Match

        match = Match(entry=entry, score=0, reasons=())  # the user's choice, not a ranking
    match = match or (result.matches[0] if result.matches else None)
    if match is None:
        raise CliError("no KB entry matches this error, so there is nothing to patch", NO_MATCH)
    from fixer.patching.plan import propose

    patches = propose(result.traceback, match)
    if args.json:
        from fixer.report import patch_out

        print(json.dumps({"entry": match.id, "patches": [patch_out(p).model_dump() for p in patches]}, indent=2))
    if not patches:
        if not args.json:
            _explain_no_patch(match)
        return NO_MATCH
    if not args.json:
        from fixer import render

        out = render.console()
        for patch in patches:
            out.print(render.patch_view(patch))
    if not args.apply:
        return OK
    return _apply(patches, yes=args.yes, unsafe=args.unsafe)


def _explain_no_patch(match: Match) -> None:
    entry = match.entry
    print(f"fixer: no automatic patch for {entry.id} in the files this traceback names here.")
    print(f"To fix it by hand ({entry.fix.summary.rstrip('.')}):")
    for number, step in enumerate(entry.fix.steps, 1):
        print(f"  {number}. {' '.join(step.split())}")


def _apply(patches: list[Patch], *, yes: bool, unsafe: bool) -> int:
    from fixer.patching.apply import PatchError, apply

    chosen = [p for p in patches if p.applicability == "safe" or unsafe]
    skipped = len(patches) - len(chosen)
    if skipped:
        print(f"fixer: {skipped} unsafe patch(es) not applied; review them and pass --unsafe", file=sys.stderr)
    if not chosen:
        return NOT_APPLIED
    if not yes and not _consent(chosen):
        print("fixer: nothing written", file=sys.stderr)
        return NOT_APPLIED
    for patch in chosen:
        try:
            apply(patch)
        except PatchError as exc:
            print(f"fixer: {exc}", file=sys.stderr)
            return NOT_APPLIED
        print(f"fixer: patched {patch.path}", file=sys.stderr)
    return OK if not skipped else NOT_APPLIED


def _consent(patches: list[Patch]) -> bool:
    """Ask on the terminal itself: stdin may be the piped traceback."""
    names = ", ".join(str(p.path) for p in patches)
    try:
        with open("/dev/tty", "r+", encoding="utf-8") as tty:
            tty.write(f"Apply {len(patches)} patch(es) to {names}? [y/N] ")
            tty.flush()
            return tty.readline().strip().lower() in {"y", "yes"}
    except OSError:
        raise CliError("no terminal to ask for consent; pass --yes to apply without asking", NOT_APPLIED) from None


@contextmanager
def _progress(total: int, what: str) -> Iterator[Callable[[], None]]:
    """A transient progress bar on stderr when a person is watching; silent for scripts and pipes."""
    if not sys.stderr.isatty():
        yield lambda: None
        return
    from rich.progress import Progress

    from fixer import render

    with Progress(console=render.console(stderr=True), transient=True) as progress:
        task = progress.add_task(what, total=total)
        yield lambda: progress.advance(task)


def _diagnose(args: argparse.Namespace) -> int:
    from fixer.diagnose.checkpoint import checkpoint_findings
    from fixer.diagnose.environment import probe_environment
    from fixer.diagnose.rerank import rerank

    text = _read_input(args.traceback, passthrough=False) if args.traceback else None
    with _status("checking this machine (importing torch in a child process)"):
        findings = probe_environment()
    env = findings[0].facts if findings and findings[0].probe == "env" else None
    if args.checkpoint:
        findings += checkpoint_findings(Path(args.checkpoint), env)
    matches: list[Match] = []
    if text is not None:
        from fixer.match import Matcher

        result = Matcher(_catalog()).explain(text)
        matches = rerank(result.matches, findings)
    if args.json:
        from fixer.report import match_out

        payload = {
            "findings": [vars(f) for f in findings],
            "matches": [match_out(m).model_dump() for m in matches[:3]],
        }
        print(json.dumps(payload, indent=2, default=list))
    else:
        from fixer import render

        out = render.console()
        out.print(render.findings_view(findings))
        if matches:
            out.print(render.candidates(matches[:3]))
    return OK


@contextmanager
def _status(what: str) -> Iterator[None]:
    """A spinner on stderr for the seconds a probe takes, when a person is watching."""
    if not sys.stderr.isatty():
        yield
        return
    from fixer import render

    with render.console(stderr=True).status(what):
        yield


def _run(script: str, script_args: list[str]) -> int:
    if not Path(script).is_file():
        raise CliError(f"{script}: no such file")
    from fixer.runner import run

    code, text, culprit = run(script, script_args)
    if text is None:
        return code
    sys.stderr.write(text)
    from fixer import render
    from fixer.match import Matcher

    out = render.console(stderr=True)
    if culprit is not None:
        out.print(f"[bold]fixer:[/bold] the failing module was {culprit.describe()}")
    result = Matcher(_catalog()).explain(text)
    if culprit is not None and result.matches:
        from dataclasses import replace

        from fixer.diagnose.rerank import rerank
        from fixer.runner import culprit_findings

        result = replace(result, matches=rerank(result.matches, culprit_findings(culprit)))
    if result.matches:
        out.print(render.explanation(result, top=3))
        for patch in _local_patches(result):
            out.print(render.patch_view(patch))
    return code
