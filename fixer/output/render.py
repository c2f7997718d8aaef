"""Terminal rendering with rich, in layers: what the error means, the likely cause here and why it
matched, how to fix it, then other candidates (friendly-traceback's order).

Entry text is rendered from the KB as written, so terminal, JSON and site say the same thing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.markdown import Markdown
from rich.padding import Padding
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from fixer.diagnose.probes import PROBES, how_to_run
from fixer.explain.match import Explanation, Match
from fixer.explain.narrow import Certainty, certainty
from fixer.explain.parse import Traceback
from fixer.kb.schema import Entry

if TYPE_CHECKING:  # only other commands render these; explain must not import them
    from fixer.diagnose.findings import Finding
    from fixer.kb.evaluate import Score
    from fixer.kb.lint import EntryStats
    from fixer.patching.plan import Patch

_SAFETY_STYLE = {"safe": "green", "unsafe": "yellow", "manual": "magenta"}
_SAFETY_WORDS = {
    "safe": "safe: keeps the meaning of your code",
    "unsafe": "unsafe: may change behaviour, review it",
    "manual": "manual: no automatic patch; follow the steps",
}


def _section(title: str, body: RenderableType) -> Group:
    return Group(Text(title, style="bold cyan"), Padding(body, (0, 0, 1, 2)))


def _prose(text: str) -> Markdown:
    return Markdown(text.strip())


def _code(code: str, title: str) -> Panel:
    return Panel(
        Syntax(code.rstrip("\n"), "python", theme="ansi_dark", background_color="default", word_wrap=True),
        title=title,
        title_align="left",
        border_style="dim",
    )


def _where(tb: Traceback) -> Text | None:
    user = [f for f in tb.all_frames if f.is_user]
    frame = user[-1] if user else (tb.frames[-1] if tb.frames else None)
    if frame is None:
        return None
    where = Text("  at ", style="dim")
    where.append(f"{frame.path}:{frame.line}", style="bold")
    if frame.function:
        where.append(f" in {frame.function}", style="dim")
    if frame.code:
        where.append(f"\n     {frame.code}")
    return where


def error_header(tb: Traceback) -> Group:
    lines = tb.message.strip().splitlines() or [""]
    shown = "\n".join(lines[:6]) + ("\n…" if len(lines) > 6 else "")
    head = Text()
    head.append(f"{tb.exception or 'Error'}: ", style="bold red")
    head.append(shown)
    parts: list[RenderableType] = [head]
    if tb.rank is not None:
        parts.append(Text(f"  on rank {tb.rank} (ranks with errors: {', '.join(map(str, tb.ranks))})", "dim"))
    where = _where(tb)
    if where is not None:
        parts.append(where)
    return Group(*parts, Text())


def fix_section(entry: Entry) -> Group:
    fix = entry.fix
    safety = Text(f"[{_SAFETY_WORDS[fix.safety]}]", style=_SAFETY_STYLE[fix.safety])
    steps = Text()
    for number, step in enumerate(fix.steps, 1):
        steps.append(f"{number}. ", style="bold")
        steps.append(" ".join(step.split()) + "\n")
    body = Group(
        _prose(fix.summary),
        safety,
        steps,
        _code(fix.before, "before"),
        _code(fix.after, "after"),
    )
    return _section("How to fix", body)


def explanation(result: Explanation, top: int) -> Group:
    tb = result.traceback
    assert tb is not None
    best, *others = result.matches
    entry = best.entry
    why = Text()
    for reason in best.reasons:
        sign = "+" if reason.points >= 0 else "−"
        why.append(f"  {sign} ", style="green" if reason.points >= 0 else "red")
        why.append(f"{reason.text} ({reason.points:+d})\n")
    parts: list[RenderableType] = [
        error_header(tb),
        _section("What it means", _prose(entry.meaning)),
        Panel(
            Group(
                Text(entry.title, style="bold green"),
                Text(f"{entry.id} · score {best.score}/100", style="dim"),
                Text(),
                Text(entry.summary),
                Text(),
                Text("Why it happens", style="bold"),
                _prose(entry.cause),
            ),
            title="Most likely cause",
            title_align="left",
            border_style="green",
        ),
        _section("Why fixer thinks so", why),
    ]
    known = certainty(result.matches)
    if known is not None and not known.confident:
        parts.append(uncertain_note(result.matches, known))
    parts.append(fix_section(entry))
    if others:
        parts.append(_section("Other candidates", candidates(others[: max(top - 1, 0)])))
    parts.append(Text(f"More: fixer show {entry.id}", style="dim"))
    return Group(*parts)


def uncertain_note(matches: list[Match], known: Certainty) -> Text:
    """Said plainly when the first place is a close call, with what would settle it."""
    note = Text(f"Not certain: {matches[0].id} leads {matches[1].id} by {known.lead} points.", style="yellow")
    if known.question is not None:
        note.append(f" What would tell them apart: {known.question.text}", style="yellow")
    elif known.probe is not None:
        note.append(f" To tell them apart, check {how_to_run(known.probe)}.", style="yellow")
    return note


def candidates(matches: list[Match]) -> Table:
    table = Table(box=None, show_header=True, header_style="bold")
    table.add_column("score", justify="right")
    table.add_column("id")
    table.add_column("cause")
    for match in matches:
        table.add_row(str(match.score), match.id, match.entry.title)
    return table


def entry_page(entry: Entry) -> Group:
    parts: list[RenderableType] = [
        Text(entry.title, style="bold"),
        Text(entry.id, style="dim"),
        Text(),
        _prose(entry.summary),
        Text(),
        _section("What it means", _prose(entry.meaning)),
        _section("Why it happens", _prose(entry.cause)),
    ]
    if entry.diagnostics:
        probes = "\n".join(f"{probe}: {how_to_run(probe)}" for probe in entry.diagnostics if probe in PROBES)
        parts.append(_section("How to confirm", Text(probes)))
    parts.append(fix_section(entry))
    examples = Text()
    for example in entry.examples:
        last = example.traceback.strip().splitlines()[-1]
        examples.append(f"{example.source}\n", style="underline")
        examples.append(f"  {last[:160]}\n", style="dim")
    parts.append(_section("Seen in the wild", examples))
    if entry.related:
        parts.append(_section("Related", Text(", ".join(entry.related))))
    return Group(*parts)


def entry_list(entries: list[Entry]) -> Table:
    table = Table(box=None, header_style="bold")
    table.add_column("id")
    table.add_column("title")
    for entry in entries:
        table.add_row(entry.id, entry.title)
    return table


def accuracy_table(score: Score) -> Table:
    table = Table(header_style="bold", box=None)
    for column in ("entry", "n", "top-1", "top-3"):
        table.add_column(column, justify="left" if column == "entry" else "right", no_wrap=True)
    for entry_id, tally in sorted(score.per_entry.items()):
        table.add_row(entry_id, str(tally.n), f"{tally.top1_rate:.2f}", f"{tally.top3_rate:.2f}")
    overall = score.overall
    table.add_row("overall", str(overall.n), f"{overall.top1_rate:.2f}", f"{overall.top3_rate:.2f}", style="bold")
    return table


def stats_table(stats: list[EntryStats]) -> Table:
    table = Table(header_style="bold", box=None)
    for column in ("entry", "examples", "ambiguous", "signatures", "rules", "repro"):
        table.add_column(column, justify="left" if column in {"entry", "repro"} else "right", no_wrap=True)
    for s in stats:
        table.add_row(s.id, str(s.examples), str(s.ambiguous), str(s.signatures), str(s.rules), s.repro)
    return table


def patch_view(patch: Patch) -> Group:
    style = _SAFETY_STYLE[patch.applicability]
    head = Text()
    head.append(f"{patch.path}", style="bold")
    head.append(f"  {patch.codemod} ({patch.entry}): {patch.summary}  ")
    head.append(f"[{_SAFETY_WORDS[patch.applicability]}]", style=style)
    return Group(head, Syntax(patch.diff.rstrip("\n"), "diff", theme="ansi_dark", background_color="default"), Text())


_VERDICT_STYLE = {"confirms": "green", "rules-out": "red", "could-not-check": "yellow", "info": "dim"}


def findings_view(findings: list[Finding]) -> Table:
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
    return table


def console(stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False, soft_wrap=False)
