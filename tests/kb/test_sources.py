"""The messages PyTorch and the libraries built on it raise (kb/messages/) against the KB: every one is
read, and read as the causes its record names."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from fixer.explain.match import Matcher
from fixer.kb.catalog import load
from fixer.kb.schema import SourceMessage
from fixer.kb.sources import SOURCE_WEIGHT, derived, pattern_of, sample_of

CATALOG = load(strict=True)
MATCHER = Matcher(CATALOG)
ASSIGNED = [m for m in CATALOG.sources if m.entries]


def test_the_catalogue_holds_the_main_family_and_its_old_and_new_wordings() -> None:
    keys = {m.key for m in CATALOG.sources}
    assert "Expected all tensors to be on the same device, but found at least two devices, {} and {}!" in keys
    assert "Input type ({}) and weight type ({}) should be the same" in keys
    assert "stft input and window must be on the same device but got self on {} and window on {}" in keys
    assert len(CATALOG.sources) >= 250
    assert sum(not m.entries for m in CATALOG.sources) / len(CATALOG.sources) < 0.25


@pytest.mark.parametrize("message", ASSIGNED, ids=lambda m: m.key[:60])
def test_every_assigned_message_gets_a_candidate_among_its_causes(message: SourceMessage) -> None:
    line = f"{message.raised}: {sample_of(message.template)}"
    found = [m.id for m in MATCHER.explain(line).matches]
    assert found, line
    assert set(found) & set(message.entries), (line, found)


def test_a_message_inside_a_real_traceback_is_read_as_its_causes() -> None:
    pasted = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 41, in <module>\n'
        "    spec = torch.stft(wave, 400, window=window, return_complex=True)\n"
        "RuntimeError: stft input and window must be on the same device but got self on cuda:0 and window on cpu\n"
    )
    found = [m.id for m in MATCHER.explain(pasted).matches]
    assert {"inputs-not-moved", "tensor-created-without-device"} <= set(found)


def test_a_librarys_kernel_check_is_read_as_its_causes() -> None:
    """flash-attn's device check names the argument and nothing else: a tensor the caller made or left on
    the CPU, or a model that never moved."""
    by_library = {m.key: m.library for m in CATALOG.sources}
    assert by_library["{} must be on CUDA"] == "flash-attention"
    found = [m.id for m in MATCHER.explain("RuntimeError: cu_seqlens_q must be on CUDA").matches]
    assert {"inputs-not-moved", "tensor-created-without-device", "model-not-moved"} == set(found)
    found = MATCHER.explain(
        "ValueError: If passing a string for `device_map`, please choose 'auto', 'balanced', 'balanced_low_0' or "
        "'sequential'."
    ).matches
    assert [m.id for m in found] == ["malformed-device-argument"]


def test_the_sample_line_splices_devices_where_the_source_splices_them() -> None:
    template = (
        "stft input and window must be on the same device but got self on {self.device()} and window on "
        "{window.device()}"
    )
    assert (
        sample_of(template)
        == "stft input and window must be on the same device but got self on cuda:0 and window on cpu"
    )
    assert sample_of("expected {a.device().type()} got {b.device()}") == "expected cuda got cuda:0"


def test_a_pattern_reads_the_fixed_text_and_anything_in_the_holes() -> None:
    pattern = pattern_of("Tensor on device {} is not on the expected device {}!")
    assert re.search(pattern, "RuntimeError: Tensor on device meta is not on the expected device cpu!")
    assert not re.search(pattern, "Tensor on device meta is on the expected device cpu")


def test_a_message_becomes_a_signature_of_each_of_its_causes() -> None:
    messages = [
        SourceMessage(key="new words {}", template="new words {x}", raised="RuntimeError", where="b.cpp:2",
                      versions=["2.6.0"], entries=["inputs-not-moved", "model-not-moved"]),
    ]  # fmt: skip
    added = derived(messages)
    assert {k: [s.pattern for s in v] for k, v in added.items()} == {
        "inputs-not-moved": [pattern_of("new words {}")],
        "model-not-moved": [pattern_of("new words {}")],
    }
    assert all(s.weight == SOURCE_WEIGHT for v in added.values() for s in v)


def test_a_written_signature_decides_where_it_reads_the_message() -> None:
    """The 2.13 fused-optimizer wording is PyTorch's and is written in the KB: the written one decides."""
    found = MATCHER.explain(
        "RuntimeError: Tensors of the same index must be on the same device and the same dtype except `step` "
        "tensors that can be CPU and float32/64 notwithstanding"
    ).matches
    assert found[0].id == "optimizer-state-after-resume"
    assert all(not r.text.startswith("the message reads as") for r in found[0].reasons)


def test_a_message_names_causes_or_says_why_none() -> None:
    fields = {"key": "some message {}", "template": "some message {x}", "raised": "RuntimeError", "where": "a.py:1",
              "versions": ["2.6.0"]}  # fmt: skip
    with pytest.raises(ValidationError, match="either"):
        SourceMessage(**fields, entries=[])
    with pytest.raises(ValidationError, match="either"):
        SourceMessage(**fields, entries=["inputs-not-moved"], outside="a reason long enough")
    assert SourceMessage(**fields, entries=[], outside="no KB cause covers it").outside
