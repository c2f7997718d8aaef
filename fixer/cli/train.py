"""`fixer train`: the Training page's exercises as a quiz in the terminal, with a score."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from fixer.cli.common import OK, CliError, catalog

if TYPE_CHECKING:
    from rich.console import Console

    from fixer.output.render import ColorChoice
    from fixer.training import Exercise


def train(
    only: str | None, count: int | None, *, as_json: bool, color: ColorChoice = "auto", seed: int | None = None
) -> int:
    """A quiz drawn from `seed`, or from a fresh one that the report names so the quiz can be repeated."""
    import secrets

    from fixer.training import exercises

    seed = secrets.randbelow(10_000) if seed is None else seed

    kb = catalog()
    wanted = [part.strip() for part in (only or "").split(",") if part.strip()]
    unknown = [entry_id for entry_id in wanted if kb.get(entry_id) is None]
    if unknown:
        raise CliError(f"no KB entry {', '.join(map(repr, unknown))}; `fixer list` shows the ids")
    chosen = exercises(kb, wanted, seed)[:count]
    missing = sorted(set(wanted) - {exercise.entry.id for exercise in chosen})
    if missing and not count:
        raise CliError(f"no exercise for {', '.join(missing)}: its repro needs a real accelerator, or it has none")
    if as_json:
        print(json.dumps({"seed": seed, "exercises": [_document(e) for e in chosen]}, indent=2))
        return OK
    from fixer.output import render

    out = render.console(color=color)
    right = asked = 0
    for number, exercise in enumerate(chosen, 1):
        out.print(render.exercise_view(exercise, number, len(chosen)))
        chosen_answer = _ask(out, len(exercise.choices))
        if chosen_answer is None:
            break
        asked += 1
        right += chosen_answer == exercise.answer
        out.print(render.exercise_answer(exercise, chosen_answer))
    stopped = f" (stopped after {asked} of {len(chosen)})" if asked < len(chosen) else ""
    out.print(f"Score: {right}/{asked}{stopped}. This quiz again: fixer train --seed {seed}", highlight=False)
    return OK


def _ask(out: Console, choices: int) -> int | None:
    """The chosen index, asked until it is one; None when the person stops (q, or the input ends)."""
    while True:
        try:
            reply = out.input(f"Your answer (1-{choices}, q to stop): ").strip().lower()
        except EOFError:
            out.print()
            return None
        if reply in ("q", "quit"):
            return None
        if reply.isdigit() and 1 <= int(reply) <= choices:
            return int(reply) - 1
        out.print(f"Type a number from 1 to {choices}, or q.", highlight=False)


def _document(exercise: Exercise) -> dict[str, object]:
    return {
        "id": exercise.entry.id,
        "snippet": exercise.snippet,
        "traceback": exercise.traceback,
        "choices": [{"id": choice.id, "title": choice.title} for choice in exercise.choices],
        "answer": exercise.entry.id,
    }
