"""Terminal rendering with rich, in layers: what the error means, the likely cause here and why it
matched, how to fix it, then other candidates (friendly-traceback's order).

Entry text is rendered from the KB as written, so terminal, JSON and site say the same thing. Prose
wraps to the width; code and diffs never wrap or crop, so what a user copies is what runs. Boxes
are drawn for a terminal only: a pipe or a file gets plain text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.panel import Panel
from rich.rule import Rule
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from fixer.diagnose.probes import PROBES, how_to_run
from fixer.explain.match import Explanation, Match
from fixer.explain.narrow import Answer, Certainty, certainty
from fixer.explain.parse import Traceback
from fixer.kb.index import Card, Outside
from fixer.output import diff as unified
from fixer.output import display, prose
from fixer.output.prose import CodeLines, Hanging
from fixer.patching.needs import NEEDS

ColorChoice = Literal["auto", "always", "never"]

if TYPE_CHECKING:  # only other commands render these; explain must not import them
    from fixer.diagnose.findings import Finding
    from fixer.fleet.scan import Triage
    from fixer.kb.evaluate import Score
    from fixer.kb.lint import EntryStats
    from fixer.kb.schema import Entry, Fact
    from fixer.patching.plan import Patch
    from fixer.training import Exercise

_SAFETY_STYLE = {"safe": "green", "unsafe": "yellow", "manual": "magenta"}
_SAFETY_WORDS = {
    "safe": "safe: keeps the meaning of your code",
    "unsafe": "unsafe: may change behaviour, review it",
    "manual": "manual: no automatic patch; follow the steps",
}


def _indent(renderable: RenderableType, by: int = 2) -> Hanging:
    return Hanging(" " * by, renderable)


class _Boxed:
    """A panel in a terminal; a titled, indented block in a pipe or a file."""

    def __init__(self, title: str, body: RenderableType, border_style: str) -> None:
        self.title, self.body, self.border_style = title, body, border_style

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if options.is_terminal:
            yield Panel(self.body, title=self.title, title_align="left", border_style=self.border_style)
        else:
            yield Text(f"{self.title}:", style="bold")
            yield _indent(self.body)
        yield Text()


_DIFF_STYLE: dict[unified.Kind, str] = {"header": "bold", "hunk": "cyan", "added": "green", "removed": "red"}


class _DiffLines:
    """A diff line for line, its carriage returns and tabs kept: the same bytes `fixer patch` writes."""

    def __init__(self, diff: str) -> None:
        self.diff = diff

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for kind, text, _ in unified.lines(self.diff):
            style = _DIFF_STYLE.get(kind)
            yield Segment(text, console.get_style(style) if style else None)
            yield Segment.line()


def _section(title: str, body: RenderableType) -> Group:
    return Group(Text(title, style="bold cyan"), _indent(body), Text())


def _prose(markdown: str) -> Group:
    """Markdown from an entry read whole; a card's prose comes parsed in the index (`Card.prose`)."""
    return prose.render(prose.parse(markdown))


def _code(code: str, title: str) -> Group:
    """Highlighted in a terminal, plain elsewhere; either way each line is the entry's line."""
    code = code.rstrip("\n")
    return Group(Text(f"{title}:", style="bold dim"), CodeLines(code), Text())


def _where(tb: Traceback) -> RenderableType | None:
    """The innermost user frame: its place wraps like prose, its code line never does."""
    user = [f for f in tb.all_frames if f.is_user]
    frame = user[-1] if user else (tb.frames[-1] if tb.frames else None)
    if frame is None:
        return None
    place = Text("  at ", style="dim")
    place.append(f"{frame.path}:{frame.line}", style="bold")
    if frame.function:
        place.append(f" in {frame.function}", style="dim")
    if not frame.code:
        return _indent(place, by=0)
    return Group(_indent(place, by=0), CodeLines(Text(f"     {frame.code}")))


MESSAGE_MISSING = (
    "The paste ends before the error message (the traceback's last line, RuntimeError: ...), which tells the "
    "causes apart: paste through to it."
)


def error_header(tb: Traceback) -> Group:
    lines = tb.message.strip().splitlines() or [""]
    shown = "\n".join(lines[:6]) + ("\n…" if len(lines) > 6 else "")
    head = Text()
    if tb.exception or shown:
        head.append(f"{tb.exception or 'Error'}: ", style="bold red")
        head.append(shown)
    else:
        head.append(MESSAGE_MISSING, style="bold red")
    parts: list[RenderableType] = [_indent(head, by=0)]
    if tb.rank is not None:
        parts.append(Text(f"  on rank {tb.rank} (ranks with errors: {', '.join(map(str, tb.ranks))})", "dim"))
    where = _where(tb)
    if where is not None:
        parts.append(where)
    return Group(*parts, Text())


def fix_section(card: Card) -> Group:
    safety = Text(f"[{_SAFETY_WORDS[card.fix_safety]}]", style=_SAFETY_STYLE[card.fix_safety])
    steps = Text()
    for number, step in enumerate(card.fix_steps, 1):
        steps.append(f"{number}. ", style="bold")
        steps.append(" ".join(step.split()) + "\n")
    steps.rstrip()
    need = NEEDS.get(card.fix_codemod) if card.fix_codemod else None
    needs = [Text(f"fixer patch's rewrite needs {need.text}.")] if need else []
    body = Group(prose.render(card.prose["fix_summary"]), safety, steps, *needs)
    return Group(
        Text("How to fix", style="bold cyan"),
        _indent(body),
        Text(),
        _code(card.fix_before, "before"),
        _code(card.fix_after, "after"),
    )


def explanation(result: Explanation, top: int) -> Group:
    tb = result.traceback
    assert tb is not None
    known = certainty(result.matches, result.questions, result.answers)
    if known is not None and known.beyond:
        return beyond_kb(result, top)
    best, *others = result.matches
    card = best.card  # from the index: no entry file read, no model validated
    why = Text()
    for reason in best.reasons:
        sign = "+" if reason.points >= 0 else "−"
        why.append(f"  {sign} ", style="green" if reason.points >= 0 else "red")
        why.append(f"{reason.text} ({reason.points:+d})\n")
    why.rstrip()
    parts: list[RenderableType] = [
        error_header(tb),
        _section("What it means", prose.render(card.prose["meaning"])),
        _Boxed(
            "Most likely cause",
            Group(
                Text(card.title, style="bold green"),
                Text(f"{card.id} · score {best.score}/100", style="dim"),
                Text(),
                Text(card.summary),
                Text(),
                Text("Why it happens", style="bold"),
                prose.render(card.prose["cause"]),
            ),
            border_style="green",
        ),
        _section("Why fixer thinks so", why),
    ]
    if any(not a.from_text for a in result.answers):
        parts.insert(-1, _section("Answered", answered(result.answers)))
    if known is not None and not known.confident:
        parts.append(_indent(uncertain_note(result.matches, known), by=0))
    parts.append(fix_section(card))
    if others:
        parts.append(_section("Other candidates", candidates(others[: max(top - 1, 0)])))
    parts.append(_indent(Text(f"More: fixer show {card.id}", style="dim"), by=0))
    return Group(*parts)


def answered(answers: Sequence[Answer]) -> Text:
    lines = Text()
    for given in (a for a in answers if not a.from_text):  # what the traceback shows, it already shows
        reply = "don't know" if given.reply is None else "yes" if given.reply else "no"
        reply = "probably not" if given.recall is not None else reply
        lines.append(f"  {reply}", style="bold")
        lines.append(f" ({given.where})" if given.where else "", style="dim")
        lines.append(f": {given.question.ask}\n")
    lines.rstrip()
    return lines


def outside_kb(outside: Outside) -> Group:
    """A message PyTorch or a library raises itself whose cause no entry covers: where it comes from and
    why the KB has no answer, rather than a bare "no match" or a guess from a message that reads alike."""
    versions = ", ".join(outside.versions)
    who = "PyTorch" if outside.library == "pytorch" else outside.library
    whose = f"{who}'" if who.endswith("s") else f"{who}'s"
    return Group(
        _Boxed(
            f"{whose} own message, not in the KB yet",
            Group(
                Text(f"{who} raises it in {outside.where} (seen in {versions})."),
                Text(f"No KB entry covers its cause: {outside.reason}."),
            ),
            border_style="yellow",
        ),
        Text("Once you know the cause, `fixer kb new` drafts an entry from this traceback."),
    )


def beyond_kb(result: Explanation, top: int) -> Group:
    """What is left when no cause fixer knows leads, because the answers ruled them out or because nothing
    in the KB reads the message: a plain "probably not one of these", and the way to find and record the
    cause, instead of a winner at a few points."""
    assert result.traceback is not None
    replied = any(a.reply is not None and not a.from_text for a in result.answers)
    said = (
        "Your answers rule out the causes fixer knows for this message, or leave each less likely than a cause "
        "it does not hold."
        if replied
        else "Nothing in the KB reads this message; the causes below are only those whose real cases it is "
        "worded most like."
    )
    steps = Text()
    for number, step in enumerate(BEYOND_STEPS, 1):
        steps.append(f"{number}. ", style="bold")
        steps.append(step + "\n")
    steps.rstrip()
    parts: list[RenderableType] = [
        error_header(result.traceback),
        _Boxed(
            "Probably not in the KB",
            Group(Text(said), *((Text(), answered(result.answers)) if replied else ())),
            border_style="yellow",
        ),
        _section("What to check", steps),
    ]
    if result.matches:
        heading = "Still possible, though less likely" if replied else "Worded most like the cases of"
        parts.append(_section(heading, candidates(result.matches[:top])))
    return Group(*parts)


BEYOND_STEPS = (
    "Print `.device` for every tensor the failing line takes, the layer's parameters included "
    "(`{n: p.device for n, p in layer.named_parameters()}`): the odd one out is where to look.",
    "Trace where that tensor is made or loaded, and move it (or make it) on the device of the others.",
    "`fixer diagnose` runs the checks that need your machine: CUDA, devices, a checkpoint (`--checkpoint`).",
    "Once you know the cause, `fixer kb new` turns the traceback into an entry, so the next person gets the answer.",
)


def uncertain_note(matches: list[Match], known: Certainty) -> Text:
    """Said plainly when the first place is a close call, with what would settle it."""
    runner_up = matches[1].id if len(matches) > 1 else "a cause the KB does not hold"
    note = Text(f"Not certain: {matches[0].id} leads {runner_up} by {known.lead} points.", style="yellow")
    if known.question is not None:
        note.append(f" What would tell them apart: {known.question.ask}", style="yellow")
    elif known.probe is not None:
        note.append(f" To tell them apart, check {how_to_run(known.probe)}.", style="yellow")
    return note


def candidates(matches: list[Match]) -> Table:
    table = Table(box=None, show_header=True, header_style="bold")
    table.add_column("score", justify="right")
    table.add_column("id")
    table.add_column("cause")
    for match in matches:
        table.add_row(str(match.score), match.id, match.card.title)
    return table


def entry_page(entry: Entry) -> Group:
    parts: list[RenderableType] = [
        _indent(Group(Text(entry.title, style="bold"), Text(entry.id, style="dim"), Text(), _prose(entry.summary)), 0),
        Text(),
        _section("What it means", _prose(entry.meaning)),
        _section("Why it happens", _prose(entry.cause)),
    ]
    if entry.diagnostics:
        probes = "\n".join(f"{probe}: {how_to_run(probe)}" for probe in entry.diagnostics if probe in PROBES)
        parts.append(_section("How to confirm", Text(probes)))
    parts.append(fix_section(Card.of(entry)))
    examples = Text()
    for example in entry.examples:
        last = example.traceback.strip().splitlines()[-1]
        examples.append(f"{example.source}\n", style="underline")
        examples.append(f"  {last[:160]}\n", style="dim")
    parts.append(_section("Seen in the wild", examples))
    if entry.related:
        parts.append(_section("Related", Text(", ".join(entry.related))))
    return Group(*parts)


def exercise_view(exercise: Exercise, number: int, total: int) -> Group:
    traceback = Text(exercise.traceback.rstrip("\n"), style="red")
    choices = Table.grid(padding=(0, 1))  # a long title wraps under itself, not under its number
    choices.add_column(style="bold", no_wrap=True)
    choices.add_column()
    for n, choice in enumerate(exercise.choices, 1):
        choices.add_row(f"{n}.", choice.title)
    return Group(
        Text(f"Exercise {number} of {total}", style="bold cyan"),
        Text(),
        _code(exercise.snippet, "This code"),
        Text("stops with:", style="bold dim"),
        CodeLines(traceback),
        Text(),
        Text("Which cause is behind it?", style="bold"),
        _indent(choices),
    )


def exercise_answer(exercise: Exercise, chosen: int) -> Group:
    entry = exercise.entry
    right = chosen == exercise.answer
    verdict = (
        Text("Right.", style="bold green")
        if right
        else Text(f"Not this time: it is {exercise.answer + 1}. {entry.title}", style="bold yellow")
    )
    return Group(
        verdict,
        _indent(Group(_prose(entry.cause), Text(), _prose(f"**The fix:** {entry.fix.summary}"))),
        Text(f"  More: fixer show {entry.id}", style="dim"),
        Text(),
    )


def triage_view(result: Triage, shown: int) -> RenderableType:
    """What a scan found: the causes, then the fingerprints that recur most."""
    parts: list[RenderableType] = [Text(f"{result.tracebacks} traceback(s) in {result.files} file(s)")]
    if result.tracebacks:
        causes = Table(box=None, header_style="bold")
        causes.add_column("cause")
        causes.add_column("tracebacks", justify="right")
        causes.add_column("files", justify="right")
        for cause, count, files in result.causes:
            causes.add_row(cause or "(no KB entry)", str(count), str(files))
        groups = Table(box=None, header_style="bold")
        for column in ("fingerprint", "tracebacks", "files", "cause", "error", "first seen"):
            groups.add_column(
                column, overflow="fold", no_wrap=column != "error", ratio=1 if column == "error" else None
            )
        for group in result.groups[:shown]:
            error = ": ".join(part for part in ((group.exception or "").rsplit(".", 1)[-1], group.message) if part)
            where = f"{group.first[0]}:{group.first[1]}"
            groups.add_row(group.fingerprint, str(group.count), str(len(group.files)), group.cause or "-", error, where)
        parts += [Text(), Text("By cause", style="bold cyan"), _indent(causes, by=0)]
        parts += [Text(), Text("By fingerprint", style="bold cyan"), _indent(groups, by=0)]
        if len(result.groups) > shown:
            parts.append(Text(f"... and {len(result.groups) - shown} more fingerprints (--json or --csv lists all)"))
    return Group(*parts)


def question_list(facts: Sequence[Fact]) -> Text:
    lines = Text()
    for fact in facts:
        lines.append(fact.id, style="bold")
        lines.append("" if fact.asked else " (read from your project, never asked)", style="dim")
        lines.append(f"\n  {fact.ask}\n")
        lines.append(f"  how to find out: {fact.check}\n", style="dim")
    lines.rstrip()
    return lines


def entry_list(entries: list[Entry]) -> RenderableType:
    table = Table(box=None, header_style="bold")
    table.add_column("id")
    table.add_column("title")
    for entry in entries:
        table.add_row(entry.id, entry.title)
    return _indent(table, by=0)  # a table pads its cells: no trailing spaces in a file


def accuracy_table(score: Score) -> RenderableType:
    table = Table(header_style="bold", box=None)
    for column in ("entry", "n", "top-1", "top-3"):
        table.add_column(column, justify="left" if column == "entry" else "right", no_wrap=True)
    for entry_id, tally in sorted(score.per_entry.items()):
        table.add_row(entry_id, str(tally.n), f"{tally.top1_rate:.2f}", f"{tally.top3_rate:.2f}")
    overall = score.overall
    table.add_row("overall", str(overall.n), f"{overall.top1_rate:.2f}", f"{overall.top3_rate:.2f}", style="bold")
    return _indent(table, by=0)  # a table pads its cells: no trailing spaces in a file


def stats_table(stats: list[EntryStats]) -> RenderableType:
    table = Table(header_style="bold", box=None)
    for column in (
        "entry", "examples", "ambiguous", "signatures", "pytorch messages", "library messages", "rules", "repro"
    ):  # fmt: skip
        table.add_column(column, justify="left" if column in {"entry", "repro"} else "right", no_wrap=True)
    for s in stats:
        table.add_row(
            s.id,
            str(s.examples),
            str(s.ambiguous),
            str(s.signatures),
            str(s.pytorch_messages),
            str(s.library_messages),
            str(s.rules),
            s.repro,
        )
    return _indent(table, by=0)  # a table pads its cells: no trailing spaces in a file


def patch_heading(patch: Patch) -> Text:
    head = Text()
    head.append(f"{patch.path}", style="bold")
    head.append(f"  {patch.codemod} ({patch.entry}): {patch.summary}  ")
    head.append(f"[{_SAFETY_WORDS[patch.applicability]}]", style=_SAFETY_STYLE[patch.applicability])
    for why in patch.why:
        head.append(f"\n  {patch.applicability}: {why}", style=_SAFETY_STYLE[patch.applicability])
    return head


def patch_view(patch: Patch) -> Group:
    return Group(patch_heading(patch), _DiffLines(patch.diff), Text())


_VERDICT_STYLE = {"confirms": "green", "rules-out": "red", "could-not-check": "yellow", "info": "dim"}


def findings_view(findings: list[Finding]) -> RenderableType:
    """Verdicts first: what a probe settled matters more than what it merely saw."""
    table = Table(box=None, header_style="bold")
    for column in ("probe", "verdict", "what it saw"):
        table.add_column(column, no_wrap=column != "what it saw")
    order = {"confirms": 0, "rules-out": 1, "could-not-check": 2, "info": 3}
    for finding in sorted(findings, key=lambda f: order[f.verdict]):
        verdict = Text(finding.verdict, style=_VERDICT_STYLE[finding.verdict])
        saw = Text(finding.summary)
        if finding.entries:
            saw.append(f"\n→ {', '.join(finding.entries)}", style="dim")
        table.add_row(finding.probe, verdict, saw)
    return _indent(table, by=0)  # a table pads its cells: no trailing spaces in a file


class _Rule:
    """Where fixer's report starts after the passed-through output: a line across a terminal, a
    plain marker in a file."""

    def __init__(self, title: str) -> None:
        self.title = title

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Rule(self.title) if options.is_terminal else Text(f"-- {self.title} --")


def rule(title: str) -> RenderableType:
    return _Rule(title)


class _Console(Console):
    """A console that never crops: prose wraps itself to the width, code and diffs must not be cut."""

    def print(self, *objects: Any, **options: Any) -> None:
        options.setdefault("crop", False)
        super().print(*objects, **options)


def console(stderr: bool = False, color: ColorChoice = "auto") -> Console:
    """`auto` follows the stream, NO_COLOR and FORCE_COLOR; `always` and `never` overrule them.

    rich's own NO_COLOR handling drops colours but keeps bold and dim; fixer drops every escape code,
    so what `--color never` writes is the text and nothing else."""
    out = _Console(
        stderr=stderr,
        highlight=False,
        soft_wrap=False,
        force_terminal=True if color == "always" else None,
        no_color=False if color == "always" else None,
        color_system=None if display.plain(color) else "auto",
    )
    columns = display.width(out.is_terminal)
    if columns is not None:
        out.width = columns
    return out


def colors(out: Console) -> bool:
    """Whether this console's reader gets colour: raw diffs follow the same choice as rich does."""
    return out.is_terminal and out.color_system is not None and not out.no_color
