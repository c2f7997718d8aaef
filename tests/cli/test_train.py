"""`fixer train` asks a person at a terminal, keeps the score, and says how to stop; scripts get JSON."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pexpect
import pytest

from fixer.cli import OK, USAGE, main
from fixer.training import exercises

ROOT = Path(__file__).resolve().parents[2]
FIRST, SECOND = "loss-weight-on-cpu", "rnn-hidden-state-on-cpu"


SEED = 7


@pytest.fixture(scope="module")
def chosen(catalog) -> list:
    """The two exercises in the order `--seed 7` asks them, whatever order they were named in."""
    return exercises(catalog, [FIRST, SECOND], SEED)


def _spawn(*args: str) -> pexpect.spawn:
    env = {**os.environ, "COLUMNS": "160", "LINES": "60", "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    return pexpect.spawn(sys.executable, ["-m", "fixer", "train", *args], env=env, encoding="utf-8", timeout=60)


def test_one_right_and_one_wrong_answer_score_one_of_two(chosen):
    """Driven through a pseudo-terminal, as a person would: the verdicts, a reply that is no choice, the score."""
    quiz = _spawn("--entries", f"{SECOND},{FIRST}", "--seed", str(SEED))
    quiz.expect("Exercise 1 of 2")
    quiz.expect(r"Your answer \(1-4, q to stop\): ")
    quiz.sendline(str(chosen[0].answer + 1))
    quiz.expect("Right.")
    quiz.expect("Exercise 2 of 2")
    quiz.expect(r"Your answer \(1-4, q to stop\): ")
    quiz.sendline("9")  # not a choice: asked again
    quiz.expect("Type a number from 1 to 4, or q.")
    quiz.sendline(str((chosen[1].answer + 1) % 4 + 1))  # the next choice round: a wrong one
    quiz.expect("Not this time: it is")
    quiz.expect(f"Score: 1/2. This quiz again: fixer train --seed {SEED}")
    quiz.expect(pexpect.EOF)
    quiz.close()
    assert quiz.exitstatus == OK


def test_q_stops_with_the_score_so_far():
    quiz = _spawn("--count", "3")
    quiz.expect(r"Your answer \(1-4, q to stop\): ")
    quiz.sendline("q")
    quiz.expect(r"Score: 0/0 \(stopped after 0 of 3\)")
    quiz.expect(pexpect.EOF)
    quiz.close()
    assert quiz.exitstatus == OK


def test_the_end_of_the_input_stops_the_quiz(monkeypatch, capsys):
    with open(os.devnull) as nothing:
        monkeypatch.setattr("sys.stdin", nothing)
        assert main(["train", "--count", "2", "--color", "never"]) == OK
    assert "Score: 0/0 (stopped after 0 of 2). This quiz again: fixer train --seed " in capsys.readouterr().out


def test_json_gives_each_exercise_with_its_answer_and_asks_nothing(capsys, chosen):
    assert main(["train", "--entries", f"{FIRST},{SECOND}", "--json", "--seed", str(SEED)]) == OK
    document = json.loads(capsys.readouterr().out)
    assert document["seed"] == SEED
    assert [d["id"] for d in document["exercises"]] == [exercise.entry.id for exercise in chosen]
    for exercise, quiz in zip(chosen, document["exercises"], strict=True):
        ids = [choice["id"] for choice in quiz["choices"]]
        assert len(set(ids)) == 4 and ids.index(quiz["answer"]) == exercise.answer
        assert quiz["traceback"].startswith("Traceback (most recent call last):")


def test_two_seeds_draw_two_quizzes_and_one_seed_the_same_one_again(capsys):
    def drawn(seed: str) -> list[list[str]]:
        assert main(["train", "--json", "--seed", seed]) == OK
        return [[c["id"] for c in e["choices"]] for e in json.loads(capsys.readouterr().out)["exercises"]]

    first, second = drawn("1"), drawn("2")
    assert first == drawn("1") and first != second
    assert sorted(map(sorted, first)) == sorted(map(sorted, second))  # the same exercises, drawn differently
    assert main(["train", "--json"]) == OK
    assert isinstance(json.loads(capsys.readouterr().out)["seed"], int)  # a fresh draw names its seed


def test_the_right_answer_moves_between_places(catalog):
    places = [e.answer for seed in range(5) for e in exercises(catalog, seed=seed)]
    assert set(places) == {0, 1, 2, 3}
    assert max(places.count(p) for p in range(4)) < 0.5 * len(places)


@pytest.mark.parametrize(
    ("entries", "error"),
    [
        ("no-such-entry", "fixer: no KB entry 'no-such-entry'; `fixer list` shows the ids"),
        (
            "dataparallel-params-not-on-device0",
            "fixer: no exercise for dataparallel-params-not-on-device0: its repro needs a real accelerator, or it "
            "has none",
        ),
    ],
)
def test_an_entry_without_an_exercise_is_one_line_and_exit_2(entries, error, capsys):
    assert main(["train", "--entries", entries]) == USAGE
    assert capsys.readouterr().err == error + "\n"
