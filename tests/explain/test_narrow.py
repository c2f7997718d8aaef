"""Follow-up questions on real KB tracebacks: a bare "cuda:0 and cpu!" is narrowed by the answers, a
clear traceback asks nothing, and `fixer explain` asks only a person at a terminal."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixer.explain import narrow
from fixer.explain.match import Match, Matcher
from fixer.explain.narrow import Asked, answer, interview, next_question, settled
from fixer.kb.catalog import Catalog
from fixer.kb.index import Card

RESUME = "optimizer-state-after-resume"
BARE = re.compile(
    r"RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
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
def resume(catalog: Catalog) -> Asked:
    entry = catalog.get(RESUME)
    assert entry is not None
    return Asked(RESUME, next(q for q in Card.of(entry).questions if "optimizer state dict" in q.ask))


def _position(matches: list[Match], entry_id: str) -> int:
    return [m.id for m in matches].index(entry_id)


def _never(question: str) -> bool | None:
    raise AssertionError(f"asked {question!r} of a settled traceback")


def test_a_bare_message_is_open_and_a_named_argument_is_settled(matcher: Matcher, catalog: Catalog, ranked):
    var = matcher.explain(_example(catalog, "FoundationVision/VAR")).matches
    assert not settled(ranked)
    assert settled(var) and var[0].id == RESUME
    assert var[0].score - var[1].score >= narrow.MARGIN > ranked[0].score - ranked[1].score


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


def test_yes_to_a_runner_up_question_puts_that_cause_first(ranked):
    runner_up = ranked[1]
    asked = Asked(runner_up.id, next(q for q in runner_up.card.questions if q.if_yes > 0))
    after = answer(ranked, asked, True)
    first = after[0]
    assert first.id == runner_up.id
    assert first.score == min(100, runner_up.score + asked.question.if_yes)
    assert first.reasons[0].text == f"you answered yes: {asked.text}"
    assert first.reasons[0].points == asked.question.if_yes
    assert [(-m.score, m.id) for m in after] == sorted((-m.score, m.id) for m in after)


def test_no_to_the_checkpoint_question_moves_optimizer_state_down(ranked, resume):
    before = ranked[_position(ranked, RESUME)]
    after = answer(ranked, resume, False)
    moved = after[_position(after, RESUME)]
    assert _position(after, RESUME) > _position(ranked, RESUME)
    assert moved.score == max(0, before.score + resume.question.if_no)
    assert moved.reasons[0].text == f"you answered no: {resume.text}"
    assert {m.id: m for m in after if m.id != RESUME} == {m.id: m for m in ranked if m.id != RESUME}


def test_scores_stay_within_0_and_100(matcher: Matcher, catalog: Catalog, resume):
    var = matcher.explain(_example(catalog, "FoundationVision/VAR")).matches
    assert answer(var, resume, True)[0].score == 100
    assert all(0 <= m.score <= 100 for reply in (True, False) for m in answer(var, resume, reply))


def test_dont_know_changes_nothing_and_is_not_asked_again(ranked):
    asked: list[str] = []

    def ask(question: str) -> None:
        asked.append(question)

    assert interview(ranked, ask, limit=50) == ranked
    assert asked and len(asked) == len(set(asked))
    question = next_question(ranked, [])
    assert question is not None and answer(ranked, question, None) == ranked


def test_a_clear_traceback_asks_nothing(matcher: Matcher, catalog: Catalog):
    var = matcher.explain(_example(catalog, "FoundationVision/VAR")).matches
    assert next_question(var, []) is not None  # it has questions, but nothing left to settle
    assert interview(var, _never) == var


@pytest.mark.parametrize("limit", [0, 1, 2, 3])
def test_the_interview_asks_at_most_limit_distinct_questions(ranked, limit):
    asked: list[str] = []

    def ask(question: str) -> bool:
        asked.append(question)
        return False

    interview(ranked, ask, limit=limit)
    assert len(asked) <= limit and len(asked) == len(set(asked))
    assert bool(asked) == bool(limit)  # a bare message is open: the first question always comes


def test_end_of_input_stops_the_interview_and_keeps_earlier_answers(ranked):
    first = next_question(ranked, [])
    assert first is not None
    replies: Iterator[bool] = iter([False])

    def ask(question: str) -> bool:
        try:
            return next(replies)
        except StopIteration:
            raise EOFError from None

    assert interview(ranked, ask) == answer(ranked, first, False)


def test_truthful_answers_lead_every_open_kb_example_to_its_own_entry(matcher: Matcher, catalog: Catalog):
    """What the questions are for: on every KB example the text leaves open, answering each question
    as the example's real cause would puts that cause first within the default three questions."""
    opened = 0
    for entry in catalog:
        own = {q.ask for q in entry.questions}
        for example in entry.examples:
            matches = matcher.explain(example.traceback).matches
            if settled(matches):
                continue
            opened += 1
            assert interview(matches, lambda q, own=own: q in own)[0].id == entry.id, example.source
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
def test_answers_at_a_terminal_rerank_the_explanation(bare_file: Path, ranked):
    script, given = [True, True, True], []

    def ask(question: str) -> bool:
        given.append(script[len(given)])
        return given[-1]

    expected = interview(ranked, ask)
    assert expected[0].id != ranked[0].id, "the answers should change the first cause"
    output, code = _in_a_terminal(["explain", str(bare_file)], replies=["y" if reply else "n" for reply in given])
    assert code == 0
    assert output.count(PROMPT) == len(given)
    assert f"{expected[0].id} · score {expected[0].score}/100".encode() in output
    assert b"you answered yes: " in output
