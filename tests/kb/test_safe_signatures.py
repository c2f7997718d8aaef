"""No entry can make matching hang: a regex that nests unbounded repeats is refused when the entry is
read (a team's too), and every regex of the KB finishes quickly on text made to make it work hard."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from fixer.kb.catalog import KBError, load
from fixer.kb.lint import hard_texts, lint
from fixer.kb.schema import Signature

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "pattern", ["(a+)+b", r"(\w+\s?)*x", r"((ab)*c)*", r"(?:cuda:\d+,?\s*)+!", r"(?=(\S+\s*)+$)x", r"(x|y+)*z"]
)
def test_a_repeated_repetition_is_refused(pattern):
    with pytest.raises(ValidationError, match="repeats a repetition"):
        Signature(pattern=pattern)


@pytest.mark.parametrize(
    "pattern", [r"(?:\s+\w+){0,3} device", r"found at least two devices, \S+ and \S+!", r"(?:ab){2,64}", r"a+b+c*"]
)
def test_single_and_bounded_repeats_are_allowed(pattern):
    assert Signature(pattern=pattern).pattern == pattern


def test_a_team_entry_that_could_hang_matching_is_skipped_with_one_line(tmp_path):
    data = yaml.safe_load((ROOT / "kb" / "model-not-moved.yaml").read_text())
    data["id"] = "our-slow-entry"
    data["signatures"] = [{"pattern": r"(\w+\s?)*device!", "weight": 40}]
    (tmp_path / "our-slow-entry.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    catalog = load(ROOT / "kb", team=[tmp_path])
    assert catalog.get("our-slow-entry") is None
    assert len(catalog.problems) == 1 and "\n" not in catalog.problems[0]
    assert catalog.problems[0].startswith("our-slow-entry.yaml: signatures.0.pattern:")
    with pytest.raises(KBError, match="repeats a repetition"):
        load(ROOT / "kb", team=[tmp_path], strict=True)


def _patterns(catalog) -> list[str]:
    found = set()
    for entry in catalog:
        for signature in entry.signatures:
            found.update(p for p in (signature.pattern, signature.exception) if p)
        for rule in entry.evidence:
            found.update(
                value for name in ("message", "text", "exception", "argument", "op", "frame")
                if (value := getattr(rule.when, name))
            )  # fmt: skip
    return sorted(found)


def test_every_regex_of_the_kb_finishes_quickly_on_text_made_to_make_it_work_hard(catalog):
    """A linear pattern scans 8,000 characters in well under a millisecond per text; one that
    backtracks takes seconds to years. The bound leaves a slow CI machine a hundredfold margin."""
    slowest = []
    for pattern in _patterns(catalog):
        compiled = re.compile(pattern)
        texts = hard_texts(pattern)
        start = time.perf_counter()
        for text in texts:
            compiled.search(text)
        slowest.append((time.perf_counter() - start, pattern, len(texts)))
    slowest.sort(reverse=True)
    assert slowest[0][0] < 0.5, f"{slowest[0][1]!r} took {slowest[0][0]:.2f} s on {slowest[0][2]} texts"


# Patterns with no nested repeat that still take polynomial time: the loader lets them through, so they
# run under a time bound. The last takes minutes on the text below; the first two are the shapes a
# review found hanging `re` for over a minute.
SLOW_WITHOUT_NESTING = [r"Expected all tensors(.*a){12}$", r"same device.*,.*,.*,.*,.*,.*;", r"x.*x.*x.*x.*x.*x.*y"]
HARD_MESSAGE = (
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
    + " raised by " + "a" * 60 + "," * 300 + "x" * 1000
)  # fmt: skip


def _team_entries(folder: Path, patterns: list[str]) -> list[Path]:
    base = yaml.safe_load((ROOT / "kb" / "model-not-moved.yaml").read_text())
    files = []
    for number, pattern in enumerate(patterns):
        data = {**base, "id": f"our-slow-entry-{number}", "signatures": [{"pattern": pattern, "weight": 40}]}
        data["examples"] = [{**base["examples"][0]}]
        files.append(folder / f"our-slow-entry-{number}.yaml")
        files[-1].write_text(yaml.safe_dump(data, sort_keys=False))
    return files


def test_a_team_regex_slow_without_nesting_is_skipped_by_name_and_the_built_in_kb_answers(tmp_path):
    import json
    import subprocess
    import sys

    team = tmp_path / "team"
    team.mkdir()
    files = _team_entries(team, SLOW_WITHOUT_NESTING)
    paste = tmp_path / "paste.txt"
    paste.write_text(HARD_MESSAGE + "\n")
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "fixer", "--kb", str(team), "explain", "--json", str(paste)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["matches"] and not document["matches"][0]["id"].startswith("our-slow-entry")
    assert document["slow_regexes"] == {str(files[2]): SLOW_WITHOUT_NESTING[2]}
    notices = [line for line in done.stderr.splitlines() if "took over" in line]
    assert len(notices) == 1 and str(files[2]) in notices[0] and "x.*x.*x" in notices[0]
    assert took < 30  # the index is built in this time too; the bound itself is a quarter of a second


def test_a_bounded_regex_spends_its_time_once_per_input_and_then_is_skipped():
    from fixer.explain.literals import BOUND_S, Regex, one_input

    regex = Regex.of(r"x.*x.*x.*x.*x.*x.*y", owner="/team/slow.yaml")
    sound = Regex.of(r"same device", owner="/team/sound.yaml")
    text = "x" * 1000
    with one_input() as first:
        start = time.perf_counter()
        assert regex.compiled().search(text) is None
        assert time.perf_counter() - start < BOUND_S * 4
        assert sound.compiled().search("on the same device").group(0) == "same device"
    assert first.skipped == {"/team/slow.yaml": regex.pattern}
    with one_input() as second:
        start = time.perf_counter()
        assert regex.compiled().search(text) is None
        assert time.perf_counter() - start < 0.01
    assert second.skipped == {"/team/slow.yaml": regex.pattern}
    with one_input() as unrelated:
        assert sound.compiled().search("same device") is not None
    assert unrelated.skipped == {}


def test_the_lint_names_a_team_regex_that_would_run_out_of_time_and_passes_a_sound_one(tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    slow_file, sound_file = _team_entries(team, [SLOW_WITHOUT_NESTING[2], r"same device as (?:its|the) \w+"])
    _, problems = lint(ROOT / "kb", [team])
    timed = [p for p in problems if "text made to make it work hard" in p.message]
    assert [(p.file, SLOW_WITHOUT_NESTING[2] in p.message) for p in timed] == [(str(slow_file), True)]
    assert not any(p.file == str(sound_file) and "work hard" in p.message for p in problems)
