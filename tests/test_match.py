"""Ranking on real tracebacks: the KB's own examples and the labelled dev corpus."""

from __future__ import annotations

import pytest
from conftest import CORPUS, corpus_items

from fixer.evaluate import evaluate, load_corpus
from fixer.match import MIN_SCORE

# https://github.com/FoundationVision/VAR/issues/127
VAR = (
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 "
    "and cpu! (when checking argument for argument state_steps in method wrapper_CUDA___fused_adamw_)"
)


def test_every_match_explains_its_score(matcher):
    for match in matcher.explain(VAR).matches:
        assert MIN_SCORE <= match.score <= 100
        assert match.reasons, match.id
        assert match.score == max(0, min(100, sum(r.points for r in match.reasons)))


def test_matches_are_best_first(matcher):
    scores = [m.score for m in matcher.explain(VAR).matches]
    assert scores == sorted(scores, reverse=True)


def test_text_with_no_error_has_no_traceback(matcher):
    result = matcher.explain("epoch 1/10 loss=0.31\nepoch 2/10 loss=0.27\n")
    assert result.traceback is None and result.matches == []


@pytest.mark.skipif(not CORPUS.exists(), reason="../shared/corpus is not beside this checkout")
def test_dev_corpus_accuracy(matcher, catalog):
    items = [i for i in load_corpus(CORPUS) if any(e in catalog.entries for e in i.expect)]
    assert len(items) == len(corpus_items()), "every corpus label should have a KB entry"
    score = evaluate(lambda text: [m.id for m in matcher.explain(text).matches], items)
    misses = "\n".join(f"  {i}: want {list(w)}, got {g}" for i, w, g in score.misses)
    overall = score.overall
    print(f"\ndev corpus: top-1 {overall.top1_rate:.2f}, top-3 {overall.top3_rate:.2f}, n={overall.n}")
    assert overall.top1_rate >= 0.85, f"top-1 {overall.top1_rate:.2f}; misses:\n{misses}"
    assert overall.top3_rate >= 0.97, f"top-3 {overall.top3_rate:.2f}; misses:\n{misses}"
