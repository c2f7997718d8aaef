"""The argument parser: every command, its options and its --help text, in one place."""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable, Sequence
from functools import partial
from typing import NoReturn

from fixer import __version__
from fixer.cli.common import CliError

DEFAULT_EXAMPLE = "optimizer-state-after-resume"
EXPORT_FORMATS = ("wiki", "mkdocs", "confluence", "notion", "json", "html", "notebooks")

EPILOG = """\
exit codes: 0 matched / success, 1 no KB entry matches (patch: no automatic patch or nothing to revert;
lint: problems found), 2 bad usage or unreadable input, 3 no traceback found in the input,
4 patch not applied (declined, unsafe without --unsafe, or the file changed),
5 plain `fixer` on a pipe: the log shows a traceback (the program failed; --exit-zero gives 0).

Plain `fixer` with piped input passes the text through live and explains the last
traceback:  python train.py 2>&1 | fixer
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's default prints usage; one line is kinder
        raise CliError(f"{message} (see `{self.prog} --help`)")


COLORS = ("auto", "always", "never")
# What a command's builder calls to make its parser: `add_parser` with the name, help and shared options given.
_Add = Callable[..., argparse.ArgumentParser]


def _columns(value: str) -> int:
    if not value.isdigit() or int(value) < 20:
        raise argparse.ArgumentTypeError(f"{value!r} is not a width: give a number of columns, 20 or more")
    return int(value)


def _display_options(parser: argparse.ArgumentParser, color: str, width: object) -> None:
    parser.add_argument(
        "--color",
        choices=COLORS,
        default=color,
        help="colour and boxes: auto (a terminal, unless NO_COLOR; FORCE_COLOR forces), always, "
        "never (no escape codes at all)",
    )
    parser.add_argument(
        "--width",
        type=_columns,
        default=width,
        metavar="N",
        help="wrap text at N columns (default: the terminal's width, or COLUMNS; "
        "a pipe or a file gets unwrapped lines)",
    )


def _kb_option(parser: argparse.ArgumentParser, default: object, drafts: object) -> None:
    parser.add_argument(
        "--kb",
        action="append",
        default=default,
        metavar="DIR",
        help="add a team's KB directory to the built-in entries (repeatable; FIXER_KB_PATH lists more)",
    )
    parser.add_argument(
        "--drafts",
        action="store_true",
        default=drafts,
        help="use draft entries too, whose TODO fields no one has written yet (left out of ranking and "
        "exports otherwise)",
    )


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser for a run of `command` (see `chosen`): only its options are added. argparse spends a
    few gettext lookups on each parser it makes and more on each option, some ten milliseconds over all
    of fixer's commands, which a run of one command need not pay; `fixer --help` lists every command
    from its help line alone."""
    parser = _Parser(
        prog="fixer",
        description="Explain and fix PyTorch device-placement errors.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"fixer {__version__}")
    _display_options(parser, "auto", None)
    _kb_option(parser, [], False)
    parser.add_argument(
        "--exit-zero",
        action="store_true",
        help="plain `fixer` on a pipe: exit 0 even when the log shows a traceback (default: 5)",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (summary, fill) in COMMANDS.items():
        if name == command:
            fill(partial(commands.add_parser, name, parents=[_shared()], help=summary))
        else:
            commands.add_parser(name, help=summary, add_help=False)
    return parser


def chosen(argv: Sequence[str]) -> str | None:
    """The command `argv` runs, found as argparse finds it: the first word that is neither an option nor
    the value of a global option that takes one (`fixer --kb team explain`, `--wid 90`: argparse takes a
    prefix of an option's name); None for no command or an unknown one."""
    value_next = False
    for word in argv:
        if value_next:
            value_next = False
        elif word.startswith("-"):
            value_next = "=" not in word and len(word) > 2 and any(o.startswith(word) for o in _GLOBAL_VALUES)
        else:
            return word if word in COMMANDS else None
    return None


_GLOBAL_VALUES = ("--color", "--width", "--kb")


def _shared() -> _Parser:
    """The options each command takes too, as a parent parser; SUPPRESS keeps `fixer --color never explain`
    from being reset by the command's own default."""
    shared = _Parser(add_help=False)
    _display_options(shared, argparse.SUPPRESS, argparse.SUPPRESS)
    _kb_option(shared, argparse.SUPPRESS, argparse.SUPPRESS)
    return shared


def _explain(add: _Add) -> None:
    explain = add(
        description="Find the traceback in FILE (or stdin) and rank its likely causes from the KB.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    explain.add_argument("file", nargs="?", default="-", metavar="FILE", help="log or traceback; '-' is stdin")
    explain.add_argument("--top", type=_positive, default=3, metavar="N", help="candidates to show (default 3)")
    _report_options(explain, "machine-readable output (see README)")
    explain.add_argument(
        "--no-input",
        action="store_true",
        help="never ask follow-up questions (asked only when stdin and stderr are terminals, never with --json)",
    )
    explain.add_argument(
        "--answer",
        action="append",
        default=[],
        type=_answer,
        metavar="FACT=yes|no",
        help="answer a follow-up question without being asked (repeatable): the fact is the one --json names "
        "as uncertain.question_fact, and `fixer questions` lists them",
    )
    _libraries_option(explain)
    explain.add_argument(
        "--no-project",
        action="store_true",
        help="do not read the git work tree around the current directory for answers to the questions",
    )
    explain.add_argument(
        "--example",
        nargs="?",
        const=DEFAULT_EXAMPLE,
        metavar="ID",
        help=f"explain a real example traceback from the KB (default: {DEFAULT_EXAMPLE})",
    )


def _patch(add: _Add) -> None:
    patch = add(
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
    patch.add_argument(
        "--root",
        metavar="DIR",
        help="with --apply: the project whose files may be written (default: the current directory)",
    )
    patch.add_argument("--entry", metavar="ID", help="use this KB entry's fix instead of the best match")
    patch.add_argument(
        "--revert",
        action="store_true",
        help="undo the last --apply in the project (--root), in files unchanged since; reads no traceback",
    )
    patch.add_argument("--json", action="store_true", help="the patches as JSON")
    _libraries_option(patch)


def _diagnose(add: _Add) -> None:
    diagnose = add(
        description="Run the environment probes (torch build, devices, ranks, libraries) in a child process, "
        "read your files the traceback names, a checkpoint's saved devices or an exported program's graph "
        "without loading or running them, and re-rank a traceback's causes with what they confirm or rule "
        "out. Runs no code of yours; `fixer run` is the command that does.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    diagnose.add_argument("--traceback", metavar="FILE", help="a log or traceback to re-rank ('-' is stdin)")
    diagnose.add_argument("--checkpoint", metavar="PATH", help="a torch.save file to inspect (never loaded)")
    diagnose.add_argument("--exported", metavar="PATH", help="a torch.export .pt2 file to inspect (never run)")
    _report_options(diagnose, "findings and matches as JSON")
    diagnose.add_argument("--no-input", action="store_true", help="never ask follow-up questions")


def _run(add: _Add) -> None:
    run = add(
        description=_paragraphs(
            "Run SCRIPT with ARGS unchanged (as `python SCRIPT ARGS` would), watching which module is running. "
            "If a device error escapes, say which module failed and where its tensors and inputs were, then "
            "explain it and propose the patch. Exits with the script's own exit code.",
            "With --fix: patch and run again, round after round, until the script passes, the same error comes "
            "back or no patch is left; each round's patch is written only with your consent (or --yes). It ends "
            "with the rounds as one diff; `fixer patch --revert` undoes them all. `fixer run --fix -- COMMAND "
            "...` does the same for any command (torchrun, accelerate launch, a shell script), reading the "
            "error from its stderr.",
        ),
        epilog="exit status: the script's (or command's) own, from its last run: with --fix, 0 once it passes.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("--fix", action="store_true", help="patch, run again, repeat (see above)")
    run.add_argument("--yes", action="store_true", help="with --fix: write each round's patch without asking")
    run.add_argument("--unsafe", action="store_true", help="with --fix: also write patches marked unsafe")
    run.add_argument(
        "--root", metavar="DIR", help="with --fix: the project whose files may be written (default: the current one)"
    )
    run.add_argument(
        "--rounds", type=_positive, default=10, metavar="N", help="with --fix: run at most N times (default 10)"
    )
    run.add_argument("--diff", metavar="FILE", help="with --fix: also write the combined diff to FILE, byte for byte")
    run.add_argument("--report", metavar="FILE", help=argparse.SUPPRESS)  # a --fix round's process reports here
    run.add_argument("script", metavar="SCRIPT", help="the Python script to run (or, after --, any command)")
    run.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="arguments for the script")


def _show(add: _Add) -> None:
    show = add(description="Show one KB entry in full.")
    show.add_argument("id", metavar="ID")
    show.add_argument("--json", action="store_true", help="the entry as JSON")


def _list(add: _Add) -> None:
    listing = add(description="List the KB entries.")
    listing.add_argument("--json", action="store_true", help="ids and titles as JSON")


def _questions(add: _Add) -> None:
    questions = add(
        description="List the questions fixer asks when a traceback's text leaves its causes close: the fact each "
        "asks about (for `fixer explain --answer FACT=yes`), the question, and how to find the answer.",
    )
    questions.add_argument("--json", action="store_true", help="facts, questions and checks as JSON")


def _scan(add: _Add) -> None:
    scan = add(
        description="Read every file under the PATHs (a cluster's job logs; gzip, bzip2 and xz too), find each "
        "traceback in them, rank its cause as `fixer explain` does (the code each shows, not the files it names), "
        "and group them by cause and by fingerprint (exception, normalised message and user frames). Uses every "
        "local core, or the workers of a Dask cluster with --dask.",
        epilog="exit codes: 0 tracebacks found, 2 bad usage or a missing path, 3 no traceback in any file.",
    )
    scan.add_argument("paths", nargs="+", metavar="PATH", help="log files, or directories to read every file under")
    scan_output = scan.add_mutually_exclusive_group()
    scan_output.add_argument("--json", action="store_true", help="the groups and every traceback as JSON")
    scan_output.add_argument("--csv", action="store_true", help="one row per traceback, for a spreadsheet")
    scan.add_argument("--workers", type=_positive, metavar="N", help="local processes (default: one per core)")
    scan.add_argument(
        "--dask", metavar="ADDRESS", help="scan on this Dask scheduler's workers instead (tcp://host:8786)"
    )


def _train(add: _Add) -> None:
    train = add(
        description="The Training page's exercises in the terminal, from the most common causes to the subtle "
        "ones: each shows a snippet that really raises its error (with a stand-in device) and the traceback it "
        "prints; pick the cause among four, then see why. Keeps a score; q stops.",
    )
    train.add_argument("--entries", metavar="IDS", help="only these entries' exercises (comma-separated ids)")
    train.add_argument("--count", type=_positive, metavar="N", help="at most N exercises (default: the whole path)")
    train.add_argument("--json", action="store_true", help="the exercises and their answers as JSON; asks nothing")
    train.add_argument(
        "--seed",
        type=int,
        metavar="N",
        help="draw the order and the answers' places from N, to repeat a quiz (default: a new draw each time)",
    )


def _export(add: _Add) -> None:
    export = add(
        description="Write every entry (team directories included) for another home: wiki: a page per entry, "
        "Home.md and _Sidebar.md for a GitHub or GitLab wiki; mkdocs: a page per entry and index.md, linked by "
        "file name, for a folder of a team's MkDocs site; confluence: a page per entry and index.xml in "
        "Confluence's storage format, the body its REST API takes, linking pages by title; notion: Markdown "
        "pages under a front page and fixer-kb-notion.zip of them, for Notion's Import (Text & Markdown); json: one "
        "document, fixer-kb.json (schema on the site's Team page); html: a self-contained snippet per entry, "
        "no scripts, nothing loaded, and index.html; "
        "notebooks: a Jupyter notebook per entry whose repro runs on a CPU: the error, why, a copy to fix with a "
        "check cell, and a folded solution.",
    )
    export.add_argument("--format", required=True, choices=EXPORT_FORMATS, help="what to write")
    export.add_argument(
        "-o", "--output", required=True, metavar="DIR", help="the directory to write into ('-' with json: stdout)"
    )


def _kb(add: _Add) -> None:
    kb = add(description="Maintain the KB.")
    shared = _shared()
    kb_commands = kb.add_subparsers(dest="kb_command", metavar="KB_COMMAND", parser_class=_Parser)
    schema = kb_commands.add_parser(
        "schema",
        parents=[shared],
        help="write the entry JSON Schema",
        description="Write the JSON Schema of a KB entry.",
    )
    schema.add_argument("-o", "--output", metavar="PATH", help="file to write (default: stdout)")
    new = kb_commands.add_parser(
        "new",
        parents=[shared],
        help="draft a new entry from a traceback",
        description="Turn a traceback into a draft entry: an id from the message, a signature from the normalised "
        "message, the traceback as the first example, and TODO where a person must write the cause and the fix. "
        "The draft passes the schema; `fixer kb lint` lists what is left. Says which entries already match.",
    )
    new.add_argument("file", nargs="?", default="-", metavar="FILE", help="log or traceback; '-' is stdin")
    new.add_argument("-o", "--output", metavar="PATH", help="a directory (writes ID.yaml) or a file (default: stdout)")
    new.add_argument("--id", dest="entry_id", metavar="ID", help="the entry's id (default: suggested from the message)")
    new.add_argument("--source", metavar="URL", help="the public page the traceback is quoted from")
    new.add_argument("--force", action="store_true", help="overwrite an existing file")
    new.add_argument(
        "--no-redact",
        dest="redact",
        action="store_false",
        help="keep the example as pasted (default: redacted as `explain --redact` does, since a team KB is "
        "shared: no home folders, user or host names, addresses or tokens)",
    )
    lint = kb_commands.add_parser(
        "lint",
        parents=[shared],
        help="check every entry",
        description="Check the KB, with the team directories given by --kb and FIXER_KB_PATH; exits 1 on any problem.",
    )
    lint.add_argument("--json", action="store_true", help="problems as JSON")
    stats = kb_commands.add_parser(
        "stats",
        parents=[shared],
        help="per-entry and total counts",
        description="Examples and repro verification per entry.",
    )
    stats.add_argument("--json", action="store_true", help="the counts as JSON")
    accuracy = kb_commands.add_parser(
        "accuracy",
        parents=[shared],
        help="score the KB on a labelled corpus",
        description="Top-1/top-3 of `fixer explain` on a YAML list of {id, traceback, expect} items.",
    )
    accuracy.add_argument("corpus", metavar="CORPUS", help="e.g. ../shared/corpus/dev_tracebacks.yaml")
    accuracy.add_argument("--misses", action="store_true", help="list the items whose first match is wrong")
    accuracy.add_argument("--json", action="store_true", help="the figures as JSON")
    priors = kb_commands.add_parser(
        "priors",
        parents=[shared],
        help="count how often each cause is behind a bare message",
        description="Count, over the labelled corpora given, how often each cause is behind each message, "
        "and write the counts the matcher uses as priors (points where several causes print a message; every "
        "message is listed, so that a cut one is read against all it may be).",
    )
    priors.add_argument("corpora", nargs="*", metavar="CORPUS", help="labelled corpora to count too")
    priors.add_argument("-o", "--output", metavar="PATH", help="file to write (default: stdout)")


COMMANDS: dict[str, tuple[str, Callable[[_Add], None]]] = {
    "explain": ("explain a traceback (file, '-' for stdin, or paste it)", _explain),
    "patch": ("propose (or apply) a patch to your code for a traceback", _patch),
    "diagnose": ("check this machine (and a checkpoint or exported program) to confirm or rule out causes", _diagnose),
    "run": ("run your script and explain a device error from inside it", _run),
    "show": ("show a KB entry", _show),
    "list": ("list KB entries", _list),
    "questions": ("list the follow-up questions and the facts they ask about", _questions),
    "scan": ("find every traceback in many logs and group them by cause and fingerprint", _scan),
    "train": ("a quiz from the KB's exercises: read the code and its traceback, pick the cause", _train),
    "export": (
        "write the KB as wiki, MkDocs, Confluence or Notion pages, one JSON document, HTML snippets or notebooks",
        _export,
    ),
    "kb": ("maintain the knowledge base", _kb),
}


def _report_options(command: argparse.ArgumentParser, json_help: str) -> None:
    """--json or --markdown, and --redact for either: what explain and diagnose print for a script or an issue."""
    output = command.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help=json_help)
    output.add_argument("--markdown", action="store_true", help="a <details> block to paste into an issue")
    command.add_argument(
        "--redact",
        action="store_true",
        help="with --markdown or --json, for a public post: paths from the package or home on (SITE-PACKAGES:, "
        "HOME:), no user or host names, IP addresses, tokens, keys or signed URLs",
    )


def _libraries_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--libraries",
        action="store_true",
        help="also show the fix to the installed libraries the traceback passes through, where a library's own "
        "line fails (never PyTorch itself): a diff to send upstream or apply by hand, since --apply never "
        "writes into site-packages",
    )


def _paragraphs(*paragraphs: str) -> str:
    """Text for a RawDescriptionHelpFormatter: each paragraph filled as argparse would, kept apart."""
    return "\n\n".join(textwrap.fill(paragraph, 79) for paragraph in paragraphs)


def _answer(text: str) -> tuple[str, bool]:
    fact, sep, reply = text.partition("=")
    replies = {"yes": True, "y": True, "no": False, "n": False}
    if not sep or not fact.strip() or reply.strip().lower() not in replies:
        raise argparse.ArgumentTypeError(f"{text!r}: write FACT=yes or FACT=no")
    return fact.strip(), replies[reply.strip().lower()]


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {value!r}")
    return number
