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


@pytest.fixture(scope="module")
def chosen(catalog) -> list:
    """The two exercises in the order the quiz asks them: the path's, whatever order they were named in."""
    return exercises(catalog, [FIRST, SECOND])


def _spawn(*args: str) -> pexpect.spawn:
    env = {**os.environ, "COLUMNS": "160", "LINES": "60", "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    return pexpect.spawn(sys.executable, ["-m", "fixer", "train", *args], env=env, encoding="utf-8", timeout=60)


def test_one_right_and_one_wrong_answer_score_one_of_two(chosen):
    """Driven through a pseudo-terminal, as a person would: the verdicts, a reply that is no choice, the score."""
    quiz = _spawn("--entries", f"{SECOND},{FIRST}")
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
    quiz.expect("Score: 1/2")
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
    assert capsys.readouterr().out.rstrip().endswith("Score: 0/0 (stopped after 0 of 2)")


def test_json_gives_each_exercise_with_its_answer_and_asks_nothing(capsys, chosen):
    assert main(["train", "--entries", f"{FIRST},{SECOND}", "--json"]) == OK
    documents = json.loads(capsys.readouterr().out)
    assert {d["id"] for d in documents} == {FIRST, SECOND}
    for document in documents:
        ids = [choice["id"] for choice in document["choices"]]
        expected = next(exercise.answer for exercise in chosen if exercise.entry.id == document["id"])
        assert len(set(ids)) == 4 and ids.index(document["answer"]) == expected
        assert document["traceback"].startswith("Traceback (most recent call last):")


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
