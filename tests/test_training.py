"""The exercises: made from the entries' verified repros, most common causes first, four distinct choices
whose wrong ones are the causes fixer ranks next for that traceback, the same on every run, and no
comment of the repro's left in to name the answer."""

from __future__ import annotations

import io
import re
import tokenize

from fixer.explain import priors
from fixer.training import CHOICES, exercises, path


def test_every_cpu_repro_makes_an_exercise(catalog):
    made = {exercise.entry.id for exercise in exercises(catalog)}
    assert made == {e.id for e in catalog if e.repro is not None and e.repro.needs == "cpu"}


def test_the_path_starts_with_the_causes_met_most_often(catalog):
    counts = {e.id: len(e.examples) for e in catalog}
    for causes in priors.load(catalog.root).values():
        for cause, prior in causes.items():
            counts[cause] += prior.count
    order = [counts[entry.id] for entry in path(catalog)]
    assert order == sorted(order, reverse=True)


def test_each_exercise_offers_four_causes_with_the_runners_up_among_them(catalog, matcher):
    for exercise in exercises(catalog):
        ids = [choice.id for choice in exercise.choices]
        assert len(set(ids)) == CHOICES and ids[exercise.answer] == exercise.entry.id
        others = [m.id for m in matcher.explain(exercise.traceback).matches if m.id != exercise.entry.id]
        assert set(others[: CHOICES - 1]) <= set(ids), exercise.entry.id


def test_exercises_are_the_same_on_every_run(catalog):
    first = [[c.id for c in e.choices] for e in exercises(catalog)]
    assert first == [[c.id for c in e.choices] for e in exercises(catalog)]
    assert len({e.answer for e in exercises(catalog)}) > 1  # the answer is not always in one place


def test_no_comment_is_left_to_give_the_answer_away_and_lines_still_match(catalog):
    commented = 0
    for exercise in exercises(catalog):
        code = exercise.entry.repro.code
        commented += "#" in code
        assert not [t for t in _tokens(exercise.snippet) if t.type == tokenize.COMMENT], exercise.entry.id
        assert exercise.snippet.count("\n") == code.count("\n")  # the traceback's line numbers still hold
        lines = exercise.snippet.splitlines()
        for number, printed in re.findall(r'File "exercise\.py", line (\d+), in \S+\n    (.*)', exercise.traceback):
            assert lines[int(number) - 1].strip() == printed, (exercise.entry.id, number)
    assert commented  # the repros do carry comments: the check above can fail


def _tokens(code: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(code).readline))
