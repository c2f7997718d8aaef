"""`fixer kb ...`: the maintainers' commands (schema, lint, stats, accuracy on a corpus)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from fixer.cli.common import NO_MATCH, NO_TRACEBACK, OK, CliError, catalog, progress, team_kb

if TYPE_CHECKING:
    from fixer.output.render import ColorChoice


def schema(output: str | None) -> int:
    from fixer.kb.schema import Entry

    _emit(json.dumps(Entry.model_json_schema(), indent=2) + "\n", output, "")
    return OK


def _emit(text: str, output: str | None, what: str) -> None:
    """To stdout, or to `output` (its folder made) with a line on stderr saying what was written."""
    if output is None:
        sys.stdout.write(text)
        return
    try:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write {output}: {exc.strerror or exc}") from None
    print(f"wrote {output}{what}", file=sys.stderr)


def lint(*, as_json: bool) -> int:
    from fixer.kb.catalog import default_root
    from fixer.kb.lint import entry_stats, lint

    root = default_root()
    if not root.is_dir():
        raise CliError(f"no knowledge base at {root}")
    entries, problems = lint(root, team_kb())
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


def stats(*, as_json: bool, color: ColorChoice = "auto") -> int:
    from collections import Counter

    from fixer.kb.lint import entry_stats

    kb = catalog()
    stats = [entry_stats(e, kb.sources) for e in sorted(kb, key=lambda e: e.id)]
    repro = Counter(s.repro for s in stats)
    own = [m for m in kb.sources if m.library == "pytorch"]
    built_on = [m for m in kb.sources if m.library != "pytorch"]
    libraries = sorted({m.library for m in built_on})
    totals = {
        "entries": len(stats),
        "pytorch_messages": len(own),
        "pytorch_messages_outside": sum(not m.entries for m in own),
        "library_messages": len(built_on),
        "library_messages_outside": sum(not m.entries for m in built_on),
        "libraries": libraries,
        "examples": sum(s.examples for s in stats),
        "entries_with_examples": sum(s.examples > 0 for s in stats),
        "repro": {kind: repro.get(kind, 0) for kind in ("cpu", "cuda-only", "none")},
    }
    if as_json:
        print(json.dumps({"entries": [vars(s) for s in stats], "totals": totals}, indent=2))
        return OK
    from fixer.output import render

    render.console(color=color).print(render.stats_table(stats))
    print(
        f"{totals['entries']} entries, {totals['examples']} cited examples; repro verified on cpu: "
        f"{repro['cpu']}, cuda-only: {repro['cuda-only']}, none: {repro['none']}"
    )
    for what, messages in (
        ("of PyTorch's own messages (kb/messages/pytorch.yaml)", own),
        (f"messages of {len(libraries)} libraries built on it (kb/messages/)", built_on),
    ):
        outside = sum(not m.entries for m in messages)
        print(f"{len(messages)} {what}: {len(messages) - outside} name a cause, {outside} no entry covers yet")
    return OK


def accuracy(corpus: str, *, misses: bool, as_json: bool, color: ColorChoice = "auto") -> int:
    from fixer.explain.match import Matcher
    from fixer.kb.evaluate import CorpusError, evaluate, load_corpus

    try:
        items = load_corpus(Path(corpus))
    except CorpusError as exc:
        raise CliError(f"cannot read the corpus {corpus}: {exc}") from None
    matcher = Matcher(catalog())
    with progress(len(items), "scoring the corpus") as advance:

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
    from fixer.output import render

    render.console(color=color).print(render.accuracy_table(score))
    if misses:
        for item_id, expect, got in score.misses:
            print(f"miss {item_id}: want {list(expect)}, got {got}")
    return OK


def priors(corpora: list[str], output: str | None) -> int:
    from fixer.explain import priors as counted
    from fixer.explain.match import Matcher
    from fixer.kb.evaluate import CorpusError, countable, load_corpus

    matcher = Matcher(catalog())
    labelled: list[tuple[str, tuple[str, ...]]] = []
    for corpus in corpora:
        try:
            labelled.extend((item.text, item.expect) for item in load_corpus(Path(corpus)) if countable(item))
        except CorpusError as exc:
            raise CliError(f"cannot read the corpus {corpus}: {exc}") from None

    def message_of(text: str) -> str:
        evidence = matcher.explain(text).evidence
        return evidence.message if evidence else ""

    counts = counted.count(labelled, message_of)
    text = counted.dump(counts, [Path(c).name for c in corpora])
    several = sum(len(causes) > 1 for causes in counts.values())
    _emit(text, output, f": {len(counts)} message(s), {several} with more than one cause")
    return OK


def new(
    text: str, *, entry_id: str | None, source: str | None, output: str | None, force: bool, redact: bool = True
) -> int:
    """Draft a KB entry from a pasted traceback: the YAML to stdout, or to a file (`output`, or
    `<id>.yaml` in the directory `output` names), never over an existing file unless `force`."""
    from fixer.kb.draft import DraftError, NoTraceback, draft_entry

    try:
        draft = draft_entry(text, catalog(), entry_id=entry_id, source=source, redact=redact)
    except NoTraceback as exc:
        raise CliError(str(exc), NO_TRACEBACK) from None
    except DraftError as exc:
        raise CliError(str(exc)) from None
    if draft.closest:
        shown = ", ".join(f"{match} ({score})" for match, score in draft.closest[:3])
        more = f" and {len(draft.closest) - 3} more" if len(draft.closest) > 3 else ""
        print(
            f"the KB already matches this traceback: {shown}{more}; if it is one of these causes, add the "
            "traceback to that entry's examples instead",
            file=sys.stderr,
        )
    if output is None:
        sys.stdout.write(draft.yaml)
        print(
            f"next: save it as {draft.id}.yaml, fill in the TODO fields, then `fixer kb lint --kb DIR`", file=sys.stderr
        )
        return OK
    from fixer.kb.catalog import default_root
    from fixer.kb.draft import SCHEMA_BESIDE, with_schema

    path = Path(output)
    if path.is_dir() or output.endswith(("/", os.sep)):
        path = path / f"{draft.id}.yaml"
    built_in = path.parent.resolve() == default_root().resolve()
    _write_new(path, draft.yaml if built_in else with_schema(draft.yaml, SCHEMA_BESIDE), force=force)
    print(f"wrote {path}", file=sys.stderr)
    if not built_in and not (path.parent / SCHEMA_BESIDE).exists():
        print(f"for completion in your editor: fixer kb schema -o {path.parent / SCHEMA_BESIDE}", file=sys.stderr)
    if path.stem != draft.id:
        print(f"note: `fixer kb lint` wants the entry {draft.id!r} in a file named {draft.id}.yaml", file=sys.stderr)
    print(f"next: fill in the TODO fields, then `{_lint_command(path.parent)}`", file=sys.stderr)
    return OK


def _lint_command(directory: Path) -> str:
    """The command that lints `directory`: the built-in KB is linted by default, a team's with --kb."""
    from fixer.kb.catalog import default_root

    return "fixer kb lint" if directory.resolve() == default_root().resolve() else f"fixer kb lint --kb {directory}"


def _write_new(path: Path, text: str, *, force: bool) -> None:
    """Created only if absent (checked by the open itself, so no race), unless `force`."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w" if force else "x", encoding="utf-8") as file:
            file.write(text)
    except FileExistsError:
        raise CliError(f"{path} already exists; pass --force to overwrite it") from None
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
