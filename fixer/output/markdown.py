"""Markdown for KB entries: the site's entry pages and indexes, rendered from the same entries as the
terminal, so the two never drift apart (DESIGN.md: one source, one renderer)."""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Iterable

from fixer.diagnose.probes import PROBES, how_to_run
from fixer.kb.schema import Entry

_SAFETY = {
    "safe": ("success", "Safe fix", "the patch keeps the meaning of your code."),
    "unsafe": ("warning", "Unsafe fix", "the patch may change behaviour; review it before keeping it."),
    "manual": ("info", "Manual fix", "no automatic patch exists; follow the steps."),
}


def _code(code: str, language: str = "python") -> str:
    return f"```{language}\n{code.rstrip()}\n```"


def _indent(text: str, spaces: int = 4) -> str:
    pad = " " * spaces
    return "\n".join(pad + line if line.strip() else line for line in text.splitlines())


def _message(entry: Entry) -> str:
    """The error as users see it: the last lines of the first real example."""
    lines = [line for line in entry.examples[0].traceback.strip().splitlines() if line.strip()]
    return "\n".join(lines[-3:])


def entry_page(entry: Entry) -> str:
    fix = entry.fix
    kind, title, words = _SAFETY[fix.safety]
    diff = "".join(
        difflib.unified_diff(
            fix.before.splitlines(keepends=True), fix.after.splitlines(keepends=True), "before", "after"
        )
    )
    parts = [
        f"# {entry.title}",
        f"`{entry.id}`" + "".join(f" · `{lib}`" for lib in entry.tags.libraries),
        entry.summary.strip(),
        "## The message\n\n" + _code(_message(entry), "text"),
        "## What it means\n\n" + entry.meaning.strip(),
        "## Why it happens\n\n" + entry.cause.strip(),
    ]
    if entry.diagnostics:
        probes = "\n".join(f"- `{probe}`: {how_to_run(probe)}" for probe in entry.diagnostics if probe in PROBES)
        parts.append(f"## How to confirm\n\nThese probes check it on your machine:\n\n{probes}")
    steps = "\n".join(f"{n}. {' '.join(step.split())}" for n, step in enumerate(fix.steps, 1))
    parts += [
        f"## How to fix\n\n{fix.summary.strip()}\n\n{steps}",
        '=== "Before"\n\n' + _indent(_code(fix.before)),
        '=== "After"\n\n' + _indent(_code(fix.after)),
        '=== "Diff"\n\n' + _indent(_code(diff, "diff")),
        f'!!! {kind} "{title}"\n\n' + _indent(f"{words} {fix.safety_note.strip()}"),
    ]
    if fix.codemod:
        parts.append(f"`fixer patch` applies this fix to your code with the `{fix.codemod}` codemod.")
    elif fix.manual_because:
        parts.append(f"No automatic patch: {' '.join(fix.manual_because.split())}")
    examples = []
    for example in entry.examples:
        note = f"\n\n{_indent(example.note.strip())}" if example.note else ""
        examples.append(f'??? example "{example.source}"\n\n' + _indent(_code(example.traceback, "text")) + note)
    parts.append("## Seen in the wild\n\n" + "\n\n".join(examples))
    if entry.related:
        parts.append("## Related\n\n" + "\n".join(f"- [{r}]({r}.md)" for r in entry.related))
    quiz = entry.quiz
    options = "\n".join(f"- {option}" for option in sorted([quiz.answer, *quiz.wrong]))
    parts.append(
        f'??? question "Check yourself: {quiz.question.strip()}"\n\n'
        + _indent(f"{options}\n\n**Answer:** {quiz.answer}\n\n{quiz.explanation.strip()}")
    )
    return "\n\n".join(parts) + "\n"


def index_page(entries: Iterable[Entry]) -> str:
    """Every entry, then the same entries grouped by library and by op, for browsing."""
    entries = sorted(entries, key=lambda e: e.id)
    by_library: dict[str, list[Entry]] = defaultdict(list)
    by_op: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        for library in entry.tags.libraries or ["torch"]:
            by_library[library].append(entry)
        for op in entry.tags.ops:
            by_op[op].append(entry)
    table = "\n".join(f"| [{e.title}]({e.id}.md) | `{e.id}` |" for e in entries)
    parts = ["# All entries", f"| Cause | id |\n|---|---|\n{table}", "## By library"]
    for library in sorted(by_library):
        links = ", ".join(f"[{e.id}]({e.id}.md)" for e in by_library[library])
        parts.append(f"- **{library}**: {links}")
    parts.append("## By op or argument")
    for op in sorted(by_op):
        links = ", ".join(f"[{e.id}]({e.id}.md)" for e in by_op[op])
        parts.append(f"- `{op}`: {links}")
    return "\n\n".join(parts) + "\n"
