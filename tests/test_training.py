"""The exercises: made from the entries' verified repros, most common causes first, four distinct choices
whose wrong ones are the causes fixer ranks next for that traceback, the same on every run."""

from __future__ import annotations

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
