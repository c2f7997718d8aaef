"""Messages cut or retyped still reach the signatures they were printed from (fixer.explain.tolerant)."""

from __future__ import annotations

import pytest
import yaml
from conftest import ROOT

from fixer.explain.match import Matcher
from fixer.explain.tolerant import HOLE, MAX_READINGS, Wordings, align, reach, readings, words

CENSUS = {item["id"]: item for item in yaml.safe_load((ROOT / "benchmarks/census/census.yaml").read_text())}


def _paste(item_id: str) -> str:
    item = CENSUS[item_id]
    assert item["half"] == "tune"  # the holdout is only ever scored
    return str(item["traceback"])


def skeleton(pattern: str) -> tuple[str, ...]:
    """The first reading: fixed words, and a hole for anything that varies."""
    found = readings(pattern)
    return found[0] if found else ()


def test_a_skeleton_keeps_the_fixed_words_and_marks_what_varies() -> None:
    fixed = words("Expected all tensors to be on the same device, but found at least two devices")
    assert skeleton(r"Expected all tensors to be on the same device, but found at least two devices, \S+ and") == (
        *fixed,
        HOLE,
        "and",
    )
    assert skeleton(r"Input type \((?:torch\.cuda\.\w+)\) and weight type") == (
        "input", "type", "torch", "cuda", HOLE, "and", "weight", "type",
    )  # fmt: skip
    assert skeleton("(") == ()


def test_readings_take_each_way_through_the_alternatives_after_the_skeleton() -> None:
    found = readings(r"Expected object of (?:device type|backend) \S+ but got (?:device type|backend) \S+")
    assert " ".join(found[0]) == "expected object of * but got *"
    assert " ".join(found[1]) == "expected object of device type * but got device type *"
    assert " ".join(found[-1]) == "expected object of backend * but got backend *"
    assert len(found) == 5


def test_alternatives_that_would_make_too_many_readings_stay_holes() -> None:
    found = readings(r"(?:a|b|c) one (?:d|e|f) two (?:g|h|i) three")
    assert len(found) <= MAX_READINGS + 1
    assert all(reading[-2:] == (HOLE, "three") for reading in found)


def test_words_keep_names_with_their_digits() -> None:
    assert words("mat2 is on cuda:0, isn't it") == ("mat2", "is", "on", "cuda", "0", "isn", "t", "it")


def test_a_cut_at_both_ends_aligns_with_no_cost() -> None:
    wording = skeleton(r"Attempting to deserialize object on a CUDA device but torch\.cuda\.is_available\(\) is False")
    got = align(words("deserialize object on a CUDA device but torch.cuda.is_available"), wording)
    assert (got.agreed, got.cost, got.good) == (11, 0.0, True)


def test_a_typo_costs_half_a_word_and_a_wrong_word_a_whole_one() -> None:
    wording = skeleton(r"Expected object of backend \w+ but got backend \w+ for argument")
    assert align(words("Expected objetc of backend CPU but got backend CUDA for argument"), wording).cost == 0.5
    assert align(words("Expected thing of backend CPU but got backend CUDA for argument"), wording).cost == 1.0


def test_words_before_the_wording_count_against_it() -> None:
    wording = skeleton(r"but got weight is on \S+, different from other tensors on \S+")
    assert align(words("mat2 is on cpu, different from other tensors on cuda:0"), wording).cost == 1.0


def test_a_good_alignment_may_span_every_word_within_reach() -> None:
    """The bound on the words aligned is not too tight: a wrong word before the message and holes filled
    to their span still read as the wording."""
    wording = skeleton(r"Input type \(\S+\) and weight type \(\S+\) should be the same")
    line = words("oops Input type (a.b.c.d) and weight type (e.f.g.h) should be the same")
    assert len(line) == reach(wording)
    got = align(line, wording)
    assert (got.agreed, got.cost, got.good) == (9, 1.0, True)


def test_words_past_a_message_change_nothing_however_many() -> None:
    wording = skeleton(r"Input type \(\S+\) and weight type \(\S+\) should be the same")
    message = "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same"
    assert align(words(message + " torch.cuda.FloatTensor" * 5000), wording) == align(words(message), wording)


def test_a_line_that_only_shares_common_words_reads_as_nothing() -> None:
    wordings = Wordings([readings(r"Expected all tensors to be on the same device, but found at least two devices")])
    assert wordings.read("the model trains on the same device for two epochs but found nothing") == []
    assert wordings.read("Expected all tensors to") == []  # too few words to tell


def test_a_message_retyped_with_spaces_reaches_its_entries(matcher: Matcher) -> None:
    """`torch.cuda.is_available ()` and `map_location = 'cpu'`: retyped by hand from a screenshot."""
    found = [m.id for m in matcher.explain(_paste("craft-test-cpu-load-without-map-location")).matches]
    assert "torch-load-without-map-location" in found[:2]


@pytest.mark.parametrize(
    ("item_id", "entry"),
    [
        ("espnet-transducer-gpu-decoding", "inputs-not-moved"),  # old wording, its argument clause cut off
        ("allennlp-elmo-character-ids-to-not-reassigned", "plain-tensor-attribute"),  # 0.4's type wording, cut
        ("pytorch-torchsim-cueq-convert-default-cpu", "model-not-moved"),  # 2.8's wording, its start cut off
    ],
)
def test_a_message_alone_and_cut_gets_candidates(matcher: Matcher, item_id: str, entry: str) -> None:
    explained = matcher.explain(_paste(item_id))
    assert explained.traceback is not None and explained.traceback.message
    found = [m.id for m in explained.matches]
    assert entry in found
    assert "cut or retyped" in explained.matches[0].reasons[0].text


def test_a_cut_message_above_frames_keeps_the_frames(matcher: Matcher) -> None:
    pasted = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/proj/train.py", line 88, in <module>\n'
        "    state = torch.load(path)\n"
        "deserialize object on a CUDA device but torch.cuda.is_available() is False. If you are running on a\n"
    )
    explained = matcher.explain(pasted)
    assert explained.traceback is not None and len(explained.traceback.final.frames) == 1
    assert explained.matches and explained.matches[0].id == "torch-load-without-map-location"


def test_an_inexact_reading_weighs_no_more_than_a_catalogue_message() -> None:
    from fixer.explain.match import INEXACT_CEILING
    from fixer.kb.sources import SOURCE_WEIGHT

    assert INEXACT_CEILING == SOURCE_WEIGHT


def test_a_message_pytorch_prints_whose_cause_the_kb_lacks_is_said_so_not_read_as_a_near_one(
    matcher: Matcher,
) -> None:
    explained = matcher.explain("ValueError: Expected a cuda or cpu device, but got: mps")
    assert explained.matches == []
    assert explained.outside is not None and explained.outside.where.startswith("torch/cuda/")


def test_a_cut_line_that_agrees_word_for_word_with_several_wordings_reads_as_each(matcher: Matcher) -> None:
    """allennlp#2026 cut 0.4's message before its argument: the wording with `for argument #2 'other'`
    agrees with more of its words than the general one, but a cut line cannot tell them apart."""
    found = [m.id for m in matcher.explain(_paste("allennlp-elmo-character-ids-to-not-reassigned")).matches]
    assert {"plain-tensor-attribute", "inputs-not-moved"} <= set(found[:3])


def test_a_wording_said_many_times_is_aligned_once(monkeypatch) -> None:
    """A team KB may give one message a thousand entries: a cut line is aligned to its words once, and
    read as every one of them."""
    from fixer.explain import tolerant

    wording = readings(r"Expected all tensors to be on the same device, but found at least two devices, \S+ and \S+!")
    calls = []
    monkeypatch.setattr(tolerant, "align", lambda tokens, reading: calls.append(reading) or align(tokens, reading))
    found = Wordings([wording] * 1000).read("to be on the same device, but found at least two devices, cuda:0 and")
    assert [r.number for r in found] == list(range(1000))
    assert len(calls) == len(set(calls)) <= len(wording)
