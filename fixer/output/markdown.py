"""Markdown for KB entries: the site's entry pages and indexes, rendered from the same entries as the
terminal, so the two never drift apart (DESIGN.md: one source, one renderer).

The same page goes to two dialects. The site speaks mkdocs-material's (tabs, admonitions, collapsible
blocks); a GitHub or GitLab wiki, and the HTML snippets made from it, get plain GitHub Markdown with
`<details>` for what the site folds away. A `Flavour` holds only those differences and how one entry
links to another, so the text and the order of the sections stay written once.
"""

from __future__ import annotations

import difflib
import html
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fixer.diagnose.probes import PROBES, how_to_run
from fixer.kb.schema import Entry
from fixer.patching.needs import NEEDS

if TYPE_CHECKING:
    from fixer.training import Exercise

_SAFETY = {
    "safe": ("success", "Safe fix", "the patch keeps the meaning of your code."),
    "unsafe": ("warning", "Unsafe fix", "the patch may change behaviour; review it before keeping it."),
    "manual": ("info", "Manual fix", "no automatic patch exists; follow the steps."),
}


def _code(code: str, language: str = "python") -> str:
    return f"```{language}\n{code.rstrip()}\n```"


def _indent(text: str, prefix: str = "    ") -> str:
    """A blank line stays as it is inside an indented block (a diff's context line is one space) and
    continues a quote."""
    return "\n".join(prefix + line if line.strip() else prefix.rstrip() or line for line in text.splitlines())


@dataclass(frozen=True)
class Flavour:
    link: Callable[[str], str]  # an entry id -> the address of its page, relative to another entry's page
    tabs: Callable[[list[tuple[str, str]]], str]  # (label, Markdown) -> the blocks side by side, or in turn
    note: Callable[[str, str, str], str]  # (kind, title, Markdown) -> a callout
    folded: Callable[[str, str, str], str]  # (kind, title, Markdown) -> a block the reader opens
    unsearched: Callable[[str], str] = lambda markdown: markdown  # kept out of a search index (quiz answers)


def _material_tabs(tabs: list[tuple[str, str]]) -> str:
    return "\n\n".join(f'=== "{label}"\n\n' + _indent(body) for label, body in tabs)


MATERIAL = Flavour(
    link=lambda entry_id: f"{entry_id}.md",
    tabs=_material_tabs,
    note=lambda kind, title, body: f'!!! {kind} "{title}"\n\n' + _indent(body),
    folded=lambda kind, title, body: f'??? {kind} "{title}"\n\n' + _indent(body),
    # the search plugin leaves out what carries data-search-exclude; md_in_html renders the Markdown inside
    unsearched=lambda markdown: f"<div data-search-exclude markdown>\n\n{markdown}\n\n</div>",
)


_CODE_SPAN = re.compile(r"`([^`]+)`")


def _details(title: str, body: str, attributes: str) -> str:
    """GitHub renders Markdown inside <details> only after a blank line, and Python-Markdown (the HTML
    export) only where the element says markdown="1"; neither renders it in <summary>, so the title's
    code spans are written as HTML there."""
    parts = _CODE_SPAN.split(title)  # text, code, text, code, ...
    summary = "".join(
        f"<code>{html.escape(part, quote=False)}</code>" if odd else html.escape(part, quote=False)
        for odd, part in ((i % 2 == 1, part) for i, part in enumerate(parts))
    )
    return f"<details{attributes}>\n<summary>{summary}</summary>\n\n{body}\n\n</details>"


def gfm(link: Callable[[str], str], *, details_attributes: str = "") -> Flavour:
    """Plain GitHub Markdown, which a wiki renders; `link` says how its pages address each other."""
    return Flavour(
        link=link,
        tabs=lambda tabs: "\n\n".join(f"**{label}**\n\n{body}" for label, body in tabs),
        note=lambda kind, title, body: _indent(f"**{title}:** {body}", prefix="> "),
        folded=lambda kind, title, body: _details(title, body, details_attributes),
    )


def _message(entry: Entry) -> str:
    """The error as users see it: the last lines of the first real example."""
    lines = [line for line in entry.examples[0].traceback.strip().splitlines() if line.strip()]
    return "\n".join(lines[-3:])


def entry_page(entry: Entry, flavour: Flavour = MATERIAL) -> str:
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
        flavour.tabs([("Before", _code(fix.before)), ("After", _code(fix.after)), ("Diff", _code(diff, "diff"))]),
        flavour.note(kind, title, f"{words} {fix.safety_note.strip()}"),
    ]
    if fix.codemod:
        need = NEEDS.get(fix.codemod)
        needs = f" Its rewrite needs {need.text}." if need else ""
        parts.append(f"`fixer patch` applies this fix to your code with the `{fix.codemod}` codemod.{needs}")
    elif fix.manual_because:
        parts.append(f"No automatic patch: {' '.join(fix.manual_because.split())}")
    examples = []
    for example in entry.examples:
        note = f"\n\n{example.note.strip()}" if example.note else ""
        quoted = f"From [{example.source}]({example.source}):\n\n" + _code(example.traceback, "text") + note
        examples.append(flavour.folded("example", str(example.source), quoted))
    parts.append("## Seen in the wild\n\n" + "\n\n".join(examples))
    if entry.related:
        parts.append("## Related\n\n" + "\n".join(f"- [{r}]({flavour.link(r)})" for r in entry.related))
    quiz = entry.quiz
    options = "\n".join(f"- {option}" for option in sorted([quiz.answer, *quiz.wrong]))
    parts.append(
        flavour.folded(
            "question",
            f"Check yourself: {quiz.question.strip()}",
            f"{options}\n\n" + flavour.unsearched(f"**Answer:** {quiz.answer}\n\n{quiz.explanation.strip()}"),
        )
    )
    return "\n\n".join(parts) + "\n"


FRONT_TITLE = "PyTorch device errors"  # the front page of an export, which holds only the KB


def index_page(entries: Iterable[Entry], link: Callable[[str], str] = MATERIAL.link, title: str = "All entries") -> str:
    """Every entry, then the same entries grouped by library and by op, for browsing; `title` heads it
    (a site's entries section, or an export's front page)."""
    entries = sorted(entries, key=lambda e: e.id)
    by_library: dict[str, list[Entry]] = defaultdict(list)
    by_op: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        for library in entry.tags.libraries or ["torch"]:
            by_library[library].append(entry)
        for op in entry.tags.ops:
            by_op[op].append(entry)
    table = "\n".join(f"| [{e.title}]({link(e.id)}) | `{e.id}` |" for e in entries)
    parts = [f"# {title}", f"| Cause | id |\n|---|---|\n{table}", "## By library"]
    for library in sorted(by_library):
        links = ", ".join(f"[{e.id}]({link(e.id)})" for e in by_library[library])
        parts.append(f"- **{library}**: {links}")
    parts.append("## By op or argument")
    for op in sorted(by_op):
        links = ", ".join(f"[{e.id}]({link(e.id)})" for e in by_op[op])
        parts.append(f"- `{op}`: {links}")
    return "\n\n".join(parts) + "\n"


def training_page(exercises: Sequence[Exercise]) -> str:
    """The site's Training track. Kept out of the search, whose previews would show the answers."""
    parts = [
        "---\nsearch:\n  exclude: true\n---",
        "# Training",
        "A path through the knowledge base, from the causes users meet most often to the subtle ones. Each "
        "exercise is an entry's own reproduction: a short program that really raises the error, with a stand-in "
        "for the accelerator (`FakeTensorMode` or the `meta` device) so that it runs on any CPU, and the "
        "traceback it prints. Read the code, pick the cause, then open the answer.",
        "The same questions run in a terminal with `fixer train`, and `fixer export --format notebooks -o DIR` "
        "writes each exercise as a notebook that shows the error, then the fix.",
    ]
    for number, exercise in enumerate(exercises, 1):
        choices = "\n".join(f"{n}. {choice.title}" for n, choice in enumerate(exercise.choices, 1))
        entry = exercise.entry
        answer = (
            f"**{exercise.answer + 1}. {entry.title}** ([the entry](entries/{entry.id}.md))\n\n"
            f"{' '.join(entry.cause.split())}\n\n**The fix:** {' '.join(entry.fix.summary.split())}"
        )
        parts += [
            f"## Exercise {number}",
            _code(exercise.snippet),
            "It stops with:",
            _code(exercise.traceback, "text"),
            f"Which cause is behind it?\n\n{choices}",
            MATERIAL.folded("question", "Answer", answer),
        ]
    return "\n\n".join(parts) + "\n"
