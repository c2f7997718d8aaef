"""Follow-up questions on real KB tracebacks: a bare "cuda:0 and cpu!" is narrowed by the answers, each
answer a Bayesian update in the ranking's points, a cause an answer contradicts is gone, answers against
every known cause end in "probably not in the KB", and `fixer explain` asks only a person at a terminal."""

from __future__ import annotations

import math
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from fixer.explain import narrow
from fixer.explain.match import Match, Matcher
from fixer.explain.narrow import Answer, answer, chance, first, information, interview, next_question, settled
from fixer.kb.catalog import Catalog
from fixer.kb.chances import CHANCES
from fixer.kb.index import Question
from fixer.output.render import uncertain_note

RESUME = "optimizer-state-after-resume"
BARE = re.compile(
    r"RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
)
BARE_TWO_GPUS = re.compile(
    r"RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cuda:0!"
)
PROMPT = b"[y/n/?]"
INTRO = b"A few questions"


def _example(catalog: Catalog, wanted: re.Pattern[str] | str) -> str:
    """A real traceback from the KB: the one whose text fully matches `wanted`, or whose source has it."""
    for entry in catalog:
        for example in entry.examples:
            text = example.traceback.strip()
            if isinstance(wanted, re.Pattern) and wanted.fullmatch(text):
                return text
            if isinstance(wanted, str) and wanted in str(example.source):
                return text
    raise AssertionError(f"no KB example for {wanted}")


@pytest.fixture(scope="module")
def bare(catalog: Catalog) -> str:
    return _example(catalog, BARE)


@pytest.fixture(scope="module")
def ranked(matcher: Matcher, bare: str) -> list[Match]:
    return matcher.explain(bare).matches


@pytest.fixture(scope="module")
def questions(matcher: Matcher) -> dict[str, Question]:
    return {q.fact: q for q in matcher.index.facts}


def _position(matches: list[Match], entry_id: str) -> int:
    return [m.id for m in matches].index(entry_id)


def _never(question: Question) -> bool | None:
    raise AssertionError(f"asked {question.ask!r} of a settled traceback")


def _as_cause_says(catalog: Catalog, entry_id: str):
    facts = catalog.get(entry_id).facts  # type: ignore[union-attr]

    def ask(question: Question) -> bool:
        said = facts.get(question.fact)
        return (question.base if said is None else CHANCES[said]) >= 0.5

    return ask


def test_a_bare_message_is_open_and_a_named_argument_is_settled(matcher: Matcher, catalog: Catalog, ranked):
    var = matcher.explain(_example(catalog, "FoundationVision/VAR")).matches
    assert not settled(ranked)
    assert settled(var) and var[0].id == RESUME
    assert var[0].score - var[1].score >= narrow.MARGIN > ranked[0].score - ranked[1].score


def test_a_lone_cause_is_settled_only_when_it_clearly_beats_one_outside_the_kb(matcher: Matcher, catalog: Catalog):
    var = matcher.explain(_example(catalog, "FoundationVision/VAR")).matches[:1]
    assert settled(var) and var[0].score - narrow.BEYOND >= narrow.MARGIN
    weak = [replace(var[0], score=narrow.BEYOND + narrow.MARGIN - 1)]
    assert not settled(weak)
    known = narrow.certainty(weak)
    assert known is not None and not known.confident and known.lead == narrow.MARGIN - 1
    assert "leads a cause the KB does not hold by 24 points" in uncertain_note(weak, known).plain


def test_a_cause_behind_a_close_race_stays_within_reach_and_one_behind_a_clear_leader_does_not(
    matcher: Matcher, catalog: Catalog, ranked
):
    fourth = ranked[3]
    assert not settled(ranked) and ranked[0].score - fourth.score < narrow.MARGIN
    assert narrow.within_reach(ranked, fourth.id)
    var = matcher.explain(_example(catalog, "FoundationVision/VAR")).matches
    assert narrow.within_reach(var, var[2].id)
    assert settled(var) and len(var) > 3 and not narrow.within_reach(var, var[3].id)
    assert not narrow.within_reach(ranked, "no-such-cause")


def test_an_answer_moves_each_cause_by_the_log_of_how_much_likelier_it_makes_it(ranked, questions):
    """Bayes' rule in the ranking's points: a cause that says a yes is likely gains, one that says it is
    unlikely loses, one that says nothing of the fact stays, and the answer is among the reasons."""
    question = questions["fails-in-forward"]
    after = {m.id: m for m in answer(ranked, Answer(question, True))}
    for match in ranked:
        said = dict(match.card.facts).get("fails-in-forward")
        moved = after[match.id]
        if said is None:
            assert moved == match
            continue
        points = round(narrow.TEMPERATURE * math.log(said / question.base))
        start = min(match.score, sum(r.points for r in match.reasons))  # below zero where the text argues against
        assert moved.score == max(0, min(100, start + points))
        assert moved.reasons[0].text == f"you answered yes: {question.ask}" and moved.reasons[0].points == points
    reordered = answer(ranked, Answer(question, True))
    order = [(-m.score, -m.wording, -m.prevalence, m.id) for m in reordered]
    assert order == sorted(order)


def test_an_answer_against_what_a_cause_cannot_be_without_rules_it_out(ranked, questions):
    assert chance(ranked[_position(ranked, RESUME)], questions["resumed"]) == CHANCES["always"]
    after = answer(ranked, Answer(questions["resumed"], False))
    assert RESUME not in {m.id for m in after}
    assert len(after) == len(ranked) - sum(
        1 for m in ranked if dict(m.card.facts).get("resumed", 0.5) >= 1 - narrow.RULED_OUT
    )
    kept = answer(ranked, Answer(questions["resumed"], True))
    assert kept[0].id == RESUME  # a yes to what only it says puts it first


def test_a_no_read_from_what_a_project_lacks_weighs_less_and_rules_nothing_out(ranked, questions):
    """A project without a resume in its code says "probably not": the cause that must have resumed
    loses points, fewer than a person's no takes, and stays in the race for the question to settle."""
    resumed = replace(questions["resumed"], absent=0.6)
    soft = answer(ranked, Answer(resumed, False, "nothing in the 3 Python files of this project shows it", recall=0.6))
    hard = answer(ranked, Answer(resumed, False))
    assert RESUME in {m.id for m in soft} and RESUME not in {m.id for m in hard}
    before, after = ranked[_position(ranked, RESUME)], soft[_position(soft, RESUME)]
    missed = 1 - 0.6
    always = CHANCES["always"]
    points = round(
        narrow.TEMPERATURE * math.log((1 - always + always * missed) / (1 - resumed.base + resumed.base * missed))
    )
    assert after.reasons[0].points == points < 0 and after.score == max(0, before.score + points)
    assert after.reasons[0].text.startswith("probably not: nothing in the 3 Python files")
    spared = Answer(resumed, False, "nothing", recall=0.6)
    assert next_question(ranked, [resumed], [spared], worth=0) == resumed  # still the person's to answer


def test_a_fact_read_from_the_project_only_is_never_asked(ranked, questions):
    resumed = questions["resumed"]
    assert next_question(ranked, [resumed], worth=0) == resumed  # a yes would put its cause first
    assert next_question(ranked, [replace(resumed, asked=False)], worth=0) is None


def test_a_base_rate_below_the_rule_out_line_rules_out_nothing(ranked, questions):
    """A cause that says nothing of a rare fact keeps its place after a yes to it: only what a cause says
    of itself can rule it out."""
    keras = questions["keras"]
    assert keras.base <= narrow.RULED_OUT
    assert {m.id for m in answer(ranked, Answer(keras, True))} == {m.id for m in ranked}


def test_scores_stay_within_0_and_100(matcher: Matcher, catalog: Catalog, questions):
    var = matcher.explain(_example(catalog, "FoundationVision/VAR")).matches
    assert answer(var, Answer(questions["resumed"], True))[0].score == 100
    after = [answer(var, Answer(q, reply)) for q in questions.values() for reply in (True, False)]
    assert all(0 <= m.score <= 100 for matches in after for m in matches)


def test_a_cause_the_text_argues_against_moves_from_its_reasons_not_from_the_floor(
    matcher: Matcher, catalog: Catalog, questions
):
    """Two GPUs in the message argue against a legacy CPU type (-70). A yes to using one, which a search
    of a large old project often finds somewhere, must outweigh that argument, not lift the cause from
    the floor of 1 to a score above causes the message supports."""
    two_gpus = matcher.explain(_example(catalog, BARE_TWO_GPUS)).matches
    legacy = two_gpus[_position(two_gpus, "legacy-tensor-type-device")]
    against = sum(r.points for r in legacy.reasons)
    assert legacy.score == 1 and against < 0
    after = answer(two_gpus, Answer(questions["legacy-tensor-type"], True))
    moved = after[_position(after, "legacy-tensor-type-device")]
    gained = moved.reasons[0].points
    assert gained > -against / 2 and moved.score == max(0, against + gained) < after[0].score


def test_dont_know_changes_nothing_and_is_not_asked_again(ranked, questions):
    asked: list[str] = []

    def ask(question: Question) -> None:
        asked.append(question.fact)

    found = interview(ranked, list(questions.values()), ask, limit=50)
    assert found.matches == ranked
    assert asked and len(asked) == len(set(asked))
    question = next_question(ranked, questions.values())
    assert question is not None and answer(ranked, Answer(question, None)) == ranked


def test_the_next_question_is_the_most_telling_of_those_that_can_change_the_first_place(ranked, questions):
    chosen = next_question(ranked, questions.values())
    assert chosen is not None
    worth = [
        q
        for q in questions.values()
        if any(first(o) != first(ranked) or settled(o) for o in (answer(ranked, Answer(q, r)) for r in (True, False)))
        and information(ranked, q) >= narrow.WORTH
    ]
    assert chosen in worth and information(ranked, chosen) == max(information(ranked, q) for q in worth)
    unspoken = Question("nobody-says", "Is it so?", "Look.", 0.3)
    assert information(ranked, unspoken) == pytest.approx(0.0, abs=1e-12)


def test_a_clear_traceback_asks_nothing(matcher: Matcher, catalog: Catalog, questions):
    var = matcher.explain(_example(catalog, "FoundationVision/VAR")).matches
    assert interview(var, list(questions.values()), _never).matches == var


@pytest.mark.parametrize("limit", [0, 1, 2, 3])
def test_the_interview_asks_at_most_limit_distinct_questions(ranked, questions, limit):
    asked: list[str] = []

    def ask(question: Question) -> bool:
        asked.append(question.fact)
        return False

    interview(ranked, list(questions.values()), ask, limit=limit)
    assert len(asked) <= limit and len(asked) == len(set(asked))
    assert bool(asked) == bool(limit)  # a bare message is open: the first question always comes


def test_end_of_input_stops_the_interview_and_keeps_earlier_answers(ranked, questions):
    first_question = next_question(ranked, questions.values())
    assert first_question is not None
    replies: Iterator[bool] = iter([False])

    def ask(question: Question) -> bool:
        try:
            return next(replies)
        except StopIteration:
            raise EOFError from None

    found = interview(ranked, list(questions.values()), ask)
    assert found.matches == answer(ranked, Answer(first_question, False))
    assert found.answers == (Answer(first_question, False),)


def test_answers_against_every_known_cause_end_beyond_the_kb(matcher: Matcher, catalog: Catalog, questions):
    """No to every question on a bare two-GPU message, asked as long as one could change the first place
    (a person who keeps answering), leaves no known cause ahead of one the KB does not hold: the verdict says
    so, with no winner at a few points, and no cause an answer ruled out is first."""
    result = matcher.explain(_example(catalog, BARE_TWO_GPUS))
    found = interview(result.matches, result.questions, lambda q: False, limit=len(questions), worth=0)
    assert first(found.matches) is None
    known = narrow.certainty(found.matches, result.questions, found.answers)
    assert known is not None and known.beyond and not known.confident
    ruled_out = {
        m.id
        for m in result.matches
        for a in found.answers
        if dict(m.card.facts).get(a.question.fact, 0.5) >= 1 - narrow.RULED_OUT
    }
    assert ruled_out and not ruled_out & {m.id for m in found.matches}


def test_truthful_answers_lead_every_open_kb_example_to_its_own_entry(matcher: Matcher, catalog: Catalog):
    """What the questions are for: on every KB example the text leaves open, answering as a person whose
    run had the example's cause would (what the entry says, else the likelier answer in any run) brings
    that cause first (asked whatever could still change the first place), and keeps it in the top 3 within
    the default three questions, as fixer asks them (a cause tied on score with the third is as high as it)."""
    opened = 0
    for entry in catalog:
        for example in entry.examples:
            result = matcher.explain(example.traceback)
            if settled(result.matches):
                continue
            opened += 1
            ask = _as_cause_says(catalog, entry.id)
            unlimited = interview(result.matches, result.questions, ask, limit=len(result.questions), worth=0)
            assert first(unlimited.matches) == entry.id, example.source
            three = interview(result.matches, result.questions, ask)
            score = next((m.score for m in three.matches if m.id == entry.id), -1)
            ahead = sum(m.score > score for m in three.matches)  # causes tied with it share its place
            assert score >= 0 and ahead < 3, example.source
    assert opened


# The CLI: real processes, with a pseudo-terminal where a person would be.

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")


def _read_until(fd: int, marker: bytes | None, seen: bytes, timeout: float = 30) -> bytes:
    """Read from a pty until `marker` appears in the new output, or (None) until the child closes it."""
    start, out = time.monotonic(), b""
    while marker is None or marker not in out:
        ready, _, _ = select.select([fd], [], [], max(0.0, start + timeout - time.monotonic()))
        if not ready:
            raise AssertionError(f"timed out waiting for {marker!r}; got {(seen + out)[-2000:]!r}")
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the child exited and closed the terminal
            chunk = b""
        if not chunk:
            if marker is None:
                return out
            raise AssertionError(f"exited before {marker!r}; got {(seen + out)[-2000:]!r}")
        out += chunk
    return out


def _in_a_terminal(args: list[str], replies: list[str]) -> tuple[bytes, int]:
    """Run fixer with a terminal on stdin, stdout and stderr, typing `replies` at its prompts."""
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["COLUMNS"] = "200"
        os.execv(sys.executable, [sys.executable, "-m", "fixer", *args])
    output = b""
    try:
        for reply in replies:
            output += _read_until(fd, PROMPT, output)
            os.write(fd, reply.encode() + b"\n")
        output += _read_until(fd, None, output)
    except BaseException:
        os.kill(pid, signal.SIGKILL)  # a child left waiting at a prompt would hang the suite
        raise
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return output, os.waitstatus_to_exitcode(status)


@pytest.fixture
def bare_file(tmp_path: Path, bare: str) -> Path:
    path = tmp_path / "crash.log"
    path.write_text(bare + "\n")
    return path


@posix_only
def test_piped_stdin_is_never_asked_even_with_a_terminal_on_stderr(bare_file: Path):
    controller, terminal = pty.openpty()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "fixer", "explain", str(bare_file)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=terminal,
            timeout=60,
            check=False,
        )
        os.close(terminal)
        stderr = _read_until(controller, None, b"", timeout=5)
    finally:
        os.close(controller)
    assert result.returncode == 0
    assert b"Most likely cause" in result.stdout
    assert INTRO not in stderr and PROMPT not in stderr


@posix_only
def test_no_input_never_asks_at_a_terminal(bare_file: Path, ranked):
    output, code = _in_a_terminal(["explain", "--no-input", str(bare_file)], replies=[])
    assert code == 0
    assert INTRO not in output and PROMPT not in output
    assert f"{ranked[0].id} · score {ranked[0].score}/100".encode() in output


@posix_only
def test_answers_at_a_terminal_rerank_the_explanation(bare_file: Path, ranked, questions):
    # The same reply to every question, yes or no, whichever moves the first cause: which one does
    # follows the counts behind the bare message, not what this test checks.
    reply = next((r for r in (True, False) if _answering(r, ranked, questions)[0][0].id != ranked[0].id), None)
    assert reply is not None, "the answers should change the first cause"
    expected, asked = _answering(reply, ranked, questions)
    typed, said = ("y", "yes") if reply else ("n", "no")
    output, code = _in_a_terminal(["explain", str(bare_file)], replies=[typed] * asked)
    assert code == 0
    assert output.count(PROMPT) == asked
    assert f"{expected[0].id} · score {expected[0].score}/100".encode() in output
    assert f"you answered {said}: ".encode() in output


def _answering(reply: bool, ranked: list[Match], questions: dict[str, Question]) -> tuple[list[Match], int]:
    """The ranking after giving `reply` to every question fixer asks, and how many it asked."""
    asked: list[Question] = []

    def ask(question: Question) -> bool:
        asked.append(question)
        return reply

    return interview(ranked, list(questions.values()), ask).matches, len(asked)


@posix_only
def test_a_question_mark_says_how_to_find_the_answer_and_asks_again(bare_file: Path, ranked, questions):
    question = next_question(ranked, questions.values())
    assert question is not None
    output, code = _in_a_terminal(["explain", str(bare_file)], replies=["?", "n", "", ""])
    assert code == 0
    said = b" ".join(re.sub(rb"\x1b\[[0-9;]*m", b"", output).split())
    assert b"How to find out: " + " ".join(question.check.split()).encode() in said
    assert output.count(question.ask.encode()) >= 1
    assert f"answered no: {question.ask}".lower().encode() in said.lower()  # in a reason, or the answers' summary
