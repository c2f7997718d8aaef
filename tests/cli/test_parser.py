"""The parser builds only the command a run names: it must find that command exactly as argparse does,
whatever global options come first, or a valid command line would fail to parse."""

from __future__ import annotations

import pytest

from fixer.cli.common import CliError
from fixer.cli.parser import _GLOBAL_VALUES, COMMANDS, build_parser, chosen


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["explain", "log.txt"], "explain"),
        (["--color", "never", "explain", "--json"], "explain"),
        (["--color=never", "scan", "logs"], "scan"),
        (["--kb", "list", "explain"], "explain"),  # a team directory named like a command
        (["--kb=list", "show", "model-not-moved"], "show"),
        (["--wid", "90", "explain"], "explain"),  # argparse takes a prefix of an option's name
        (["--drafts", "--exit-zero", "kb", "lint"], "kb"),
        (["--help"], None),
        ([], None),
        (["explian", "x"], None),
    ],
)
def test_the_chosen_command_is_the_one_argparse_runs(argv: list[str], command: str | None) -> None:
    assert chosen(argv) == command
    if command is not None:
        assert build_parser(command).parse_args(argv).command == command


def test_every_command_parses_its_options_when_chosen_and_only_then() -> None:
    argv = ["--color", "never", "explain", "--json", "--top", "2", "log.txt"]
    args = build_parser(chosen(argv)).parse_args(argv)
    assert (args.command, args.json, args.top, args.file, args.color) == ("explain", True, 2, "log.txt", "never")
    with pytest.raises(CliError, match="unrecognized arguments"):
        build_parser("list").parse_args(argv)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_has_its_own_help_when_chosen(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser(name).parse_args([name, "--help"])
    assert f"usage: fixer {name} " in capsys.readouterr().out


def test_chosen_skips_the_value_of_every_global_option_that_takes_one() -> None:
    """`chosen` names them by hand, to find the command before any parser is built: a global option added
    with a value would otherwise be read as the command."""
    parser = build_parser()
    taking = {name for action in parser._actions for name in action.option_strings if action.nargs != 0}
    assert {name for name in taking if name.startswith("--")} == set(_GLOBAL_VALUES)
