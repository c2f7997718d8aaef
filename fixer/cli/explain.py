"""`fixer explain` and plain `fixer`: rank a traceback's causes. Imports neither torch nor LibCST."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from fixer.cli.common import FAILED_LOG, NO_MATCH, NO_TRACEBACK, OK, CliError, catalog, kb_index, say_slow

if TYPE_CHECKING:
    from pathlib import Path

    from fixer.explain.match import Explanation
    from fixer.kb.index import Question
    from fixer.output.render import ColorChoice
    from fixer.patching.plan import Patch


def example_text(entry_id: str) -> str:
    entry = catalog().get(entry_id)
    if entry is None:
        raise CliError(f"no KB entry {entry_id!r}; `fixer list` shows the ids")
    return entry.examples[0].traceback


def explain_text(
    text: str,
    *,
    top: int,
    as_json: bool,
    passthrough: bool,
    markdown: bool = False,
    redact: bool = False,
    no_input: bool = False,
    color: ColorChoice = "auto",
    exit_zero: bool = False,
    answers: Sequence[tuple[str, bool]] = (),
    look: bool = True,
    libraries: bool = False,
) -> int:
    """Explain the text; passing a log through (plain `fixer` on a pipe), the exit status says whether the
    log shows a traceback, so `python train.py 2>&1 | fixer` fails a CI job when the script crashed.
    `answers`: (fact, yes) pairs given on the command line; `look`: read the project around the current
    directory for the answers it shows; `libraries`: patch the installed libraries' files the traceback
    names as well as the user's own."""
    from fixer.explain.match import Matcher
    from fixer.explain.project import current

    if not text.strip() and not as_json:  # a script reading --json gets the no-traceback document
        if passthrough:
            return OK
        raise CliError("the input is empty; paste or pipe a traceback", NO_TRACEBACK)
    result = Matcher(kb_index(), project=current() if look else None).explain(text)
    say_slow(result.slow)
    if answers:
        result = given(result, answers)
    if not (as_json or markdown or passthrough) and can_ask(no_input=no_input):
        result = narrowed(result, color)
    patches = local_patches(result, libraries=libraries) if not markdown else []
    beside = [] if libraries or patches or markdown else patchable_libraries(result)
    if as_json:
        from fixer.explain.narrow import certainty
        from fixer.output.report import explain_out, to_json

        known = certainty(result.matches, result.questions, result.answers)
        document = explain_out(
            result.traceback,
            result.evidence,
            result.matches[:top],
            patches,
            known,
            result.slow,
            result.answers,
            result.matches,
            result.outside,
            beside,
        )
        print(to_json(document, redact=redact))
    elif markdown:
        from fixer.output.issue_report import issue_markdown
        from fixer.output.redact import redact as redacted

        block = issue_markdown("explain", [], result.matches[:top], result.traceback)
        print(redacted(block) if redact else block, end="")
    else:
        _print_explanation(result, top, passthrough, patches, color, beside)
    if passthrough:
        return OK if result.traceback is None or exit_zero else FAILED_LOG
    if result.traceback is None:
        return NO_TRACEBACK
    return OK if result.read else NO_MATCH  # the nearest causes of an unread message are no match


def can_ask(*, no_input: bool) -> bool:
    """A person at a terminal can answer; a pipe, a script or CI never gets a question."""
    from fixer import textio

    return not no_input and textio.stdin_is_terminal() and sys.stderr.isatty()


def given(result: Explanation, answers: Sequence[tuple[str, bool]]) -> Explanation:
    """The ranking after the answers given on the command line, each to a question the KB asks."""
    from fixer.explain.narrow import Answer, answer

    questions = {q.fact: q for q in result.questions}
    unknown = sorted({fact for fact, _ in answers} - questions.keys())
    if unknown:
        raise CliError(f"no question about {', '.join(unknown)}; `fixer questions` lists the facts")
    matches, settled = result.matches, list(result.answers)
    for fact, reply in answers:
        settled.append(Answer(questions[fact], reply))
        matches = answer(matches, settled[-1])
    return replace(result, matches=matches, answers=tuple(settled))


def narrowed(result: Explanation, color: ColorChoice = "auto") -> Explanation:
    """Let the person who ran the code settle what the text cannot; the questions go to stderr so
    that stdout, perhaps a file, holds only the explanation."""
    from fixer.explain import narrow

    prompt = _Prompt(color)
    found = narrow.interview(result.matches, result.questions, prompt, answered=result.answers)
    if prompt.started:
        prompt.console.print()
    return replace(result, matches=found.matches, answers=found.answers)


_REPLIES: dict[str, bool | None] = {"y": True, "yes": True, "n": False, "no": False, "": None}


class _Prompt:
    """One question at a time on stderr, read from stdin; Ctrl-D or Ctrl-C ends the questions (not
    the command), so the explanation still shows what the answers so far have settled."""

    def __init__(self, color: ColorChoice) -> None:
        from fixer.output import render

        self.console = render.console(stderr=True, color=color)
        self.started = False

    def __call__(self, question: Question) -> bool | None:
        from rich.text import Text

        if not self.started:
            self.console.print(
                "A few questions narrow the cause (y/n; ?: how to find out; Enter: don't know; Ctrl-D: stop asking)",
                style="bold",
                markup=False,
            )
            self.started = True
        prompt = Text.assemble(("? ", "bold cyan"), question.ask, (" [y/n/?] ", "dim"))
        while True:
            try:
                reply = self.console.input(prompt).strip().lower()
            except (EOFError, KeyboardInterrupt):
                self.console.print()
                raise EOFError from None
            if reply in _REPLIES:
                return _REPLIES[reply]
            if reply == "?":
                self.console.print(Text.assemble(("  How to find out: ", "bold"), question.check))
                prompt = Text("  your answer [y/n/?] ", style="dim")
                continue
            prompt = Text("  y, n, ? to see how to find out, or Enter if you don't know: ", style="dim")


def local_patches(result: Explanation, *, libraries: bool = False) -> list[Patch]:
    """The best match's patch when the traceback's own files are here (with `libraries`, the installed
    libraries' files it names too); LibCST loads only then."""
    if result.traceback is None or not result.read or not result.traceback.all_frames:
        return []
    from fixer.patching import registry
    from fixer.patching.targets import locate

    codemod = result.read[0].card.fix_codemod
    if codemod is None or codemod not in registry.CODEMODS:
        return []
    files = locate(result.traceback, libraries=libraries).files
    if not any(registry.may_change(codemod, _text(path)) for path in files):
        return []
    from fixer.patching.plan import propose

    return propose(files, result.read[0])


def _text(path: Path) -> str:
    """The file as far as it reads: `propose` reads it again, and says nothing of a file it cannot read."""
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return ""


def patchable_libraries(result: Explanation) -> list[Path]:
    """The installed libraries' files that `--libraries` would let the best match's codemod read: where a
    library's own line failed, the fix may be a patch to it, to send upstream. Found without running the
    codemod (LibCST and a library's long files cost a second or more), so said as a place to look."""
    if result.traceback is None or not result.read or not result.traceback.all_frames:
        return []
    from fixer.patching import registry
    from fixer.patching.targets import libraries_beside

    codemod = result.read[0].card.fix_codemod
    if codemod is None or codemod not in registry.CODEMODS:
        return []
    return [path for path in libraries_beside(result.traceback) if registry.may_change(codemod, _text(path))]


def _print_explanation(
    result: Explanation,
    top: int,
    passthrough: bool,
    patches: list[Patch],
    color: ColorChoice,
    beside: Sequence[Path] = (),
) -> None:
    from fixer.output import render

    out = render.console(color=color)
    if passthrough:
        out.print(render.rule("fixer"))
    if result.traceback is None:
        # after a passed-through log the report says so itself: a bare marker would read as output cut off
        where = sys.stdout if passthrough else sys.stderr
        print("fixer: no traceback or known error message found in the input", file=where)
        return
    if not result.matches:
        out.print(render.error_header(result.traceback))
        if result.outside is not None:
            out.print(render.outside_kb(result.outside))
            return
        if result.evidence is not None and result.evidence.dtype_only:
            reason = "the two sides differ only in dtype, not device: this is not a device-placement error"
        elif not result.traceback.message.strip():
            reason = "the frames alone match no KB entry"
        else:
            reason = "no KB entry matches this error"
        out.print(f"fixer: {reason}.")
        return
    out.print(render.explanation(result, top))
    for patch in patches:
        out.print(render.patch_view(patch))
    if patches:
        out.print("[dim]Apply with: fixer patch --apply (it asks first; only safe patches unless --unsafe)[/dim]")
    elif beside:
        more = f" and {len(beside) - 1} more" if len(beside) > 1 else ""
        out.print(
            f"The failing code lies in an installed library ({beside[0]}{more}): rerun with --libraries for fixer "
            "to look for a patch to it, a diff to send upstream.",
            style="dim",
            markup=False,
        )
