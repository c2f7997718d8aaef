"""Priors: how often each cause is behind a message several causes print, counted in real corpora."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import CORPUS, ROOT

from fixer.explain import priors
from fixer.explain.match import Matcher

CUDA_CPU = (
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
)


def test_messages_that_differ_in_ordinals_case_wrapping_and_cuda_boilerplate_share_a_key():
    plain = priors.key("CUDA error: invalid device ordinal")
    assert priors.key("cuda error: invalid device\nordinal") == plain
    assert priors.key("runtimeerror: cuda error: invalid device ordinal") == plain
    boilerplate = (
        "CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously reported at some other API "
        "call, so the stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1"
    )
    assert priors.key(boilerplate) == plain
    assert priors.key("found at least two devices , cuda:1 and cuda:0!") == priors.key(
        "found at least two devices, cuda:3 and cuda:2!"
    )


def test_another_accelerator_borrows_the_counts_of_cuda(catalog):
    counted = priors.load(catalog.root)
    cuda = priors.lookup(counted, CUDA_CPU)
    assert cuda and priors.lookup(counted, CUDA_CPU.replace("cuda:0", "mps:0")) == cuda


def test_a_bare_message_gets_points_in_proportion_to_the_counts(matcher: Matcher, catalog):
    counted = priors.lookup(priors.load(catalog.root), CUDA_CPU)
    matches = {m.id: m for m in matcher.explain(CUDA_CPU).matches}
    for cause, prior in counted.items():
        said = [r for r in matches[cause].reasons if "real cases of this message alone" in r.text]
        assert said and said[0].points == prior.points and f"{prior.count} of {prior.total}" in said[0].text
    most = max(counted.values(), key=lambda p: p.count)
    assert most.points == priors.PRIOR_POINTS


def test_a_message_like_the_cases_of_several_entries_gets_no_similarity_points(matcher: Matcher):
    for match in matcher.explain(CUDA_CPU).matches:
        assert not any("like a known case" in r.text for r in match.reasons), match.id


def test_a_kb_without_a_priors_file_has_none(tmp_path):
    assert priors.load(tmp_path) == {}
    (tmp_path / "priors").mkdir()
    (tmp_path / "priors" / "messages.yaml").write_text("- message: x\n  counts: not a mapping\n")
    assert priors.load(tmp_path) == {}


@pytest.mark.skipif(not CORPUS.exists(), reason="../shared/corpus is not beside this checkout")
def test_the_committed_counts_are_those_of_the_corpora_today():
    # the census's holdout half and its `new:` labels are left out by `fixer kb priors` itself
    others = ("benchmarks/unseen/tune.yaml", "kb/priors/threads.yaml", "benchmarks/census/census.yaml")
    corpora = [str(CORPUS), *(str(ROOT / path) for path in others)]
    command = [sys.executable, "-m", "fixer", "kb", "priors", *corpora]
    counted = subprocess.run(command, capture_output=True, text=True, timeout=300, check=True).stdout
    committed = (ROOT / "kb" / "priors" / "messages.yaml").read_text()
    assert counted == committed, "run: fixer kb priors <corpora> -o kb/priors/messages.yaml"


def test_an_argument_clause_never_counted_backs_off_to_the_bare_message(catalog):
    counted = priors.load(catalog.root)
    bare = priors.lookup(counted, CUDA_CPU)
    # an argument no entry's evidence names, in a clause no corpus counted
    clause = " (when checking argument for argument sorted_sequence in method wrapper_CUDA_searchsorted)"
    with_clause = CUDA_CPU + clause
    assert bare and priors.lookup(counted, with_clause, back_off=True) == bare
    assert priors.lookup(counted, with_clause) == {}
    other = "RuntimeError: something else (when checking argument for argument x)"
    assert priors.lookup(counted, other, back_off=True) == {}


def test_the_wording_of_pytorch_2_8_takes_the_counts_of_the_earlier_one(catalog):
    """PyTorch 2.8 moved the argument into the sentence (MESSAGES.md W-2.8); quoted from
    https://github.com/ClownsharkBatwing/RES4LYF/pull/223."""
    since = (
        "RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cpu, different from "
        "other tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)"
    )
    before = CUDA_CPU + " (when checking argument for argument mat1 in method wrapper_CUDA_addmm)"
    assert priors.key(since) == priors.key(before)
    assert priors.key(since.split(" (when")[0]) == priors.key(CUDA_CPU)
    counted = priors.load(catalog.root)
    assert priors.lookup(counted, since, back_off=True) == priors.lookup(counted, CUDA_CPU) != {}


def test_an_argument_that_entries_weigh_keeps_the_bare_message_priors_out(matcher: Matcher):
    # https://github.com/damian0815/compel/issues/121: the index of an embedding lookup
    line = CUDA_CPU + " (when checking argument for argument index in method wrapper_CUDA__index_select)"
    unspoken = line.replace("argument index in method wrapper_CUDA__index_select", "argument boundaries in method x")
    assert not any("real cases" in r.text for m in matcher.explain(line).matches for r in m.reasons)
    assert any("real cases" in r.text for m in matcher.explain(unspoken).matches for r in m.reasons)


def test_a_message_cut_at_its_line_break_takes_the_counts_of_the_whole_message(catalog):
    """CRAFT-pytorch#16 pasted the first sentence of torch.load's message on its own line, retyped."""
    cut = "Attempting to deserialize object on a CUDA device but torch.cuda.is_available () is False."
    found = priors.lookup(priors.load(catalog.root), cut)
    assert found["torch-load-without-map-location"].count > found["torch-load-missing-ordinal"].count


def test_a_cut_that_several_counted_messages_start_with_takes_their_counts_together(catalog):
    counted = priors.load(catalog.root)
    starting = [causes for k, causes in counted.items() if k.startswith(priors.key(CUDA_CPU[:70]))]
    assert len(starting) > 1
    found = priors.lookup(counted, CUDA_CPU[:70])
    assert {c: p.count for c, p in found.items()} == {
        cause: sum(causes[cause].count for causes in starting if cause in causes) for cause in found
    }
    assert set(found) == {cause for causes in starting for cause in causes}


def test_a_cut_message_takes_the_causes_of_every_counted_message_it_starts(catalog):
    """espnet#1315's old wording, cut before its argument: several counted messages start so, each with
    its own argument and op, and the cut one could be any of them."""
    cut = "Expected object of device type cuda but got device type cpu"
    counted = priors.load(catalog.root)
    assert sum(k.startswith(priors.key(cut)) for k in counted) > 1
    assert {"inputs-not-moved", "model-not-moved"} <= set(priors.lookup(counted, cut))


def test_a_message_behind_one_cause_alone_gives_no_points(catalog):
    """One cause alone is its signatures' job; the count is kept so that cuts are read against it."""
    counted = priors.load(catalog.root)
    single = next(
        k
        for k, causes in counted.items()
        if len(causes) == 1 and not any(other != k and other.startswith(k) for other in counted)
    )
    assert priors.lookup(counted, single) == {}
