from __future__ import annotations

import codecs
import json

import pytest
from conftest import CORPUS, ROOT

from fixer.kb.evaluate import CorpusError, Labelled, countable, evaluate, load_corpus

# https://github.com/FoundationVision/VAR/issues/127
VAR = (
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 "
    "and cpu! (when checking argument for argument state_steps in method wrapper_CUDA___fused_adamw_)\n"
)


@pytest.mark.skipif(not CORPUS.exists(), reason="needs the shared dev corpus")
def test_the_dev_corpus_loads_every_labelled_item():
    items = load_corpus(CORPUS)
    assert len(items) >= 50
    assert all(item.expect and item.text.strip() for item in items)


def test_unlabelled_items_are_skipped_and_numeric_ids_kept(tmp_path):
    corpus = tmp_path / "corpus.yaml"
    corpus.write_text(
        json.dumps(
            [
                {"id": 127, "traceback": VAR, "expect": "optimizer-state-after-resume", "source": "x"},
                {"id": "unlabelled", "traceback": VAR},
            ]
        )
    )
    assert load_corpus(corpus) == [Labelled(id="127", text=VAR, expect=("optimizer-state-after-resume",))]


def test_only_tune_items_of_known_causes_are_counted_into_what_fixer_learns(tmp_path):
    corpus = tmp_path / "census.yaml"
    rows = [("tune", "optimizer-state-after-resume"), ("holdout", "optimizer-state-after-resume"), ("tune", "new:x")]
    corpus.write_text(
        json.dumps([{"id": n, "traceback": VAR, "expect": cause, "half": half} for n, (half, cause) in enumerate(rows)])
    )
    assert [item.id for item in load_corpus(corpus) if countable(item)] == ["0"]


def test_a_utf16_corpus_with_a_bom_loads(tmp_path):
    corpus = tmp_path / "corpus.yaml"
    text = f"- id: var\n  traceback: {json.dumps(VAR)}\n  expect: [optimizer-state-after-resume]\n"
    corpus.write_bytes(codecs.BOM_UTF16_LE + text.encode("utf-16-le"))
    assert [item.text for item in load_corpus(corpus)] == [VAR]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ((ROOT / "docs" / "assets" / "screenshot-entry.png").read_bytes(), "not YAML text"),
        (b"- id: x\n  traceback: [unclosed\n", "not YAML text"),
        (b"a plain string\n", "expected a list of items"),
        (b"{id: var, traceback: x, expect: y}\n", "expected a list of items"),
        (b"- just\n- strings\n", "item 1: expected a mapping"),
        (b"- id: var\n  expect: optimizer-state-after-resume\n", "item 1: traceback: "),
        (
            b"- id: var\n  traceback: x\n  expect: y\n- id: two\n  traceback: [1, 2]\n  expect: y\n",
            "item 2: traceback: ",
        ),
    ],
)
def test_an_unusable_corpus_says_what_is_wrong_on_one_line(tmp_path, content, problem):
    corpus = tmp_path / "corpus.yaml"
    corpus.write_bytes(content)
    with pytest.raises(CorpusError, match=problem) as error:
        load_corpus(corpus)
    assert "\n" not in str(error.value)


def test_a_missing_corpus_is_a_corpus_error(tmp_path):
    with pytest.raises(CorpusError, match="No such file"):
        load_corpus(tmp_path / "missing.yaml")


def test_a_list_of_expected_ids_accepts_any_of_them():
    items = [Labelled("a", "x", ("one", "two")), Labelled("b", "y", ("three",))]
    score = evaluate(lambda text: ["two", "three"], items)
    assert (score.overall.top1, score.overall.top3, score.overall.n) == (1, 2, 2)
    assert score.misses == [("b", ("three",), ["two", "three"])]
