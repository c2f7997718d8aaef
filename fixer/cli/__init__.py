"""The `fixer` command line. Side effects (reading input, printing, exit codes) live here only.

One module per command; this one only dispatches, so `fixer explain` imports no command it does
not run.

Exit codes, for scripts:
  0  a KB entry matched (explain), a patch was proposed or applied (patch), or the command succeeded
  1  a traceback was found but no KB entry matches it, or (patch) no automatic patch exists;
     `kb lint` found problems
  2  bad usage or unreadable input (missing file, directory, binary data, broken KB)
  3  no traceback or known error message in the input
  4  (patch --apply) nothing written: declined, unsafe without --unsafe, or the file changed
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from fixer.cli.common import NO_MATCH, NO_TRACEBACK, NOT_APPLIED, OK, USAGE, CliError, read_input
from fixer.cli.parser import build_parser

__all__ = ["NOT_APPLIED", "NO_MATCH", "NO_TRACEBACK", "OK", "USAGE", "build_parser", "main"]


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
    from fixer.cli import explain

    parser = build_parser()
    if not argv:
        if textio.stdin_is_terminal():
            parser.print_help()
            return USAGE
        return explain.explain_text(read_input("-", passthrough=True), top=3, as_json=False, passthrough=True)
    args = parser.parse_args(argv)
    if args.command == "explain":
        text = explain.example_text(args.example) if args.example else read_input(args.file, passthrough=False)
        return explain.explain_text(text, top=args.top, as_json=args.json, passthrough=False, no_input=args.no_input)
    if args.command == "patch":
        from fixer.cli.patch import patch

        return patch(read_input(args.file, passthrough=False), args)
    if args.command == "diagnose":
        from fixer.cli.diagnose import diagnose

        return diagnose(args)
    if args.command == "run":
        from fixer.cli.run import run

        return run(args.script, args.args)
    if args.command in ("show", "list"):
        from fixer.cli import browse

        return browse.show(args.id, as_json=args.json) if args.command == "show" else browse.listing(as_json=args.json)
    if args.command == "kb" and args.kb_command:
        from fixer.cli import kb

        if args.kb_command == "schema":
            return kb.schema(args.output)
        if args.kb_command == "lint":
            return kb.lint(args.kb, as_json=args.json)
        if args.kb_command == "stats":
            return kb.stats(as_json=args.json)
        return kb.accuracy(args.corpus, misses=args.misses, as_json=args.json)
    if args.command == "kb":
        parser.parse_args(["kb", "--help"])
    parser.print_help()
    return USAGE
