"""The `fixer` command line. Side effects (reading input, printing, exit codes) live here only.

One module per command; this one only dispatches, so `fixer explain` imports no command it does
not run.

Exit codes, for scripts:
  0  a KB entry matched (explain), a patch was proposed or applied (patch), or the command succeeded
  1  a traceback was found but no KB entry matches it, or (patch) no automatic patch exists or nothing to revert;
     `kb lint` found problems
  2  bad usage or unreadable input (missing file, directory, binary data, broken KB)
  3  no traceback or known error message in the input
  4  (patch --apply) nothing written: declined, unsafe without --unsafe, or the file changed
  5  plain `fixer` reading a pipe: the log shows a traceback, so the program that wrote it failed
     (`--exit-zero` keeps the old 0); a log without one gives 0
  70 fixer itself failed (a bug): one line on stderr; FIXER_DEBUG=1 adds the Python traceback
  74 the output could not be written (a full disk, an I/O error)
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
from collections.abc import Sequence

from fixer.cli.common import (
    FAILED_LOG,
    INTERNAL_ERROR,
    NO_MATCH,
    NO_TRACEBACK,
    NOT_APPLIED,
    OK,
    OUTPUT_ERROR,
    USAGE,
    CliError,
    read_input,
    using_team_kb,
)
from fixer.cli.parser import build_parser, chosen
from fixer.kb.paths import KBError
from fixer.output.display import using_width

__all__ = [
    "FAILED_LOG",
    "INTERNAL_ERROR",
    "NOT_APPLIED",
    "NO_MATCH",
    "NO_TRACEBACK",
    "OK",
    "OUTPUT_ERROR",
    "USAGE",
    "build_parser",
    "main",
]

# What a write to a full or failing disk raises; fixer writes nowhere but its output streams outside
# `patch --apply`, which reports its own write errors.
_WRITE_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})
# A path from the command line that the system refused: the user's input, said on one line (exit 2).
_PATH_ERRORS = frozenset(
    {errno.ENAMETOOLONG, errno.ELOOP, errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.EACCES, errno.EPERM}
)


def main(argv: Sequence[str] | None = None) -> int:
    """Every way out of fixer is an exit code and at most one line on stderr, never a traceback:
    a script reading the code must be able to tell a verdict about its input from fixer failing."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        code = _dispatch(args_list)
        sys.stdout.flush()  # a full disk shows at the flush: report it here, not at interpreter exit
        return code
    except CliError as exc:
        _say(f"fixer: {exc}")
        return exc.code
    except KBError as exc:  # the KB or its index went bad under a running command
        _say(f"fixer: {exc}")
        return INTERNAL_ERROR
    except KeyboardInterrupt:
        _say("fixer: interrupted")
        return 130
    except BrokenPipeError:
        _discard_stdout()  # a closed pager or `| head`: nothing left to say
        return OK
    except OSError as exc:
        if exc.errno in _PATH_ERRORS and exc.filename:  # a path given on the command line: --root, -o, --kb
            from fixer.textio import describe

            _say(f"fixer: {describe(exc)}")
            return USAGE
        if exc.errno not in _WRITE_ERRORS:
            return _internal_error(exc)
        _discard_stdout()
        _say(f"fixer: cannot write the output ({exc.strerror or exc})")
        return OUTPUT_ERROR
    except Exception as exc:
        return _internal_error(exc)


def _internal_error(exc: Exception) -> int:
    if os.environ.get("FIXER_DEBUG"):
        import traceback

        traceback.print_exc()
    detail = " ".join(str(exc).split())[:200]
    name = type(exc).__name__
    _say(f"fixer: internal error ({name}: {detail}); please report it, with the output of FIXER_DEBUG=1")
    return INTERNAL_ERROR


def _say(line: str) -> None:
    """One line on stderr, if stderr can still take it."""
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)


def _discard_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush cannot fail a second time."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)


def _dispatch(argv: list[str]) -> int:
    from fixer import textio
    from fixer.cli import explain

    parser = build_parser(chosen(argv))
    if not argv:
        if textio.stdin_is_terminal():
            parser.print_help()
            return USAGE
        return explain.explain_text(read_input("-", passthrough=True), top=3, as_json=False, passthrough=True)
    args = parser.parse_args(argv)
    if args.command == "run":
        args.command_form, args.args = _script_and_args(argv, args.script, args.args)
    with using_team_kb(args.kb, args.drafts), using_width(args.width):
        return _run(args, parser)


def _script_and_args(argv: list[str], script: str, parsed: list[str]) -> tuple[bool, list[str]]:
    """Whether `--` came before SCRIPT (`fixer run --fix -- torchrun ...`: a command, not a Python
    script), and SCRIPT's arguments exactly as given: argparse drops a `--` that follows SCRIPT, which
    `python SCRIPT -- x` would pass on."""
    at = next(
        i for i in range(len(argv) - 1, -1, -1) if argv[i] == script and argv[i + 1 :] in (parsed, ["--", *parsed])
    )
    return "--" in argv[argv.index("run") + 1 : at], argv[at + 1 :]


def _run_command(args: argparse.Namespace) -> int:
    from pathlib import Path

    if args.fix or args.command_form:
        from fixer.cli.fix import Options, fix

        if not args.fix:
            raise CliError("`fixer run -- COMMAND` goes with --fix; to explain a command's error: COMMAND 2>&1 | fixer")
        root = Path(args.root) if args.root else Path.cwd()
        if not root.is_dir():
            raise CliError(f"--root {args.root}: not a directory")
        diff = Path(args.diff) if args.diff else None
        options = Options(args.yes, args.unsafe, root, args.rounds, diff, args.color)
        return fix([args.script, *args.args], not args.command_form, options)
    if args.yes or args.unsafe or args.root or args.diff:
        raise CliError("--yes, --unsafe, --root and --diff go with --fix")
    from fixer.cli.run import run

    return run(args.script, args.args, color=args.color, report=args.report)


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from fixer import textio
    from fixer.cli import explain

    if args.command is None and not textio.stdin_is_terminal():  # `... | fixer --color always`
        text = read_input("-", passthrough=True)
        return explain.explain_text(
            text, top=3, as_json=False, passthrough=True, color=args.color, exit_zero=args.exit_zero
        )
    if args.command == "explain":
        text = explain.example_text(args.example) if args.example else read_input(args.file, passthrough=False)
        if args.redact and not (args.json or args.markdown):
            raise CliError("--redact goes with --markdown or --json: it makes a report to post")
        return explain.explain_text(
            text,
            top=args.top,
            as_json=args.json,
            markdown=args.markdown,
            redact=args.redact,
            passthrough=False,
            no_input=args.no_input,
            color=args.color,
            answers=args.answer,
            look=not args.no_project,
            libraries=args.libraries,
        )
    if args.command == "patch":
        from fixer.cli.patch import patch, revert

        return revert(args) if args.revert else patch(read_input(args.file, passthrough=False), args)
    if args.command == "diagnose":
        from fixer.cli.diagnose import diagnose

        return diagnose(args)
    if args.command == "run":
        return _run_command(args)
    if args.command == "scan":
        from fixer.cli.scan import scan

        form = "json" if args.json else "csv" if args.csv else "table"
        return scan(args.paths, workers=args.workers, dask=args.dask, form=form, color=args.color)
    if args.command == "train":
        from fixer.cli.train import train

        return train(args.entries, args.count, as_json=args.json, color=args.color, seed=args.seed)
    if args.command == "export":
        from fixer.cli.export import export

        return export(args.format, args.output)
    if args.command in ("show", "list", "questions"):
        from fixer.cli import browse

        if args.command == "show":
            return browse.show(args.id, as_json=args.json, color=args.color)
        if args.command == "questions":
            return browse.questions(as_json=args.json, color=args.color)
        return browse.listing(as_json=args.json, color=args.color)
    if args.command == "kb" and args.kb_command:
        from fixer.cli import kb

        if args.kb_command == "schema":
            return kb.schema(args.output)
        if args.kb_command == "new":
            text = read_input(args.file, passthrough=False)
            return kb.new(
                text,
                entry_id=args.entry_id,
                source=args.source,
                output=args.output,
                force=args.force,
                redact=args.redact,
            )
        if args.kb_command == "lint":
            return kb.lint(as_json=args.json)
        if args.kb_command == "priors":
            return kb.priors(args.corpora, args.output)
        if args.kb_command == "stats":
            return kb.stats(as_json=args.json, color=args.color)
        return kb.accuracy(args.corpus, misses=args.misses, as_json=args.json, color=args.color)
    if args.command == "kb":
        parser.parse_args(["kb", "--help"])
    parser.print_help()
    return USAGE
