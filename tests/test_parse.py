"""The parser on real pasted text (tests/fixtures/parser_cases.yaml: each case cites its public page)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fixer.parse import clean, parse

CASES = yaml.safe_load((Path(__file__).parent / "fixtures" / "parser_cases.yaml").read_text())


def case(name: str) -> dict:
    return next(c for c in CASES if c["name"] == name)


@pytest.fixture(scope="module")
def known(catalog):
    return catalog.known_messages


@pytest.mark.parametrize("item", CASES, ids=[c["name"] for c in CASES])
def test_real_paste(item, known):
    expect = item["expect"]
    tb = parse(item["text"], known)
    assert tb is not None
    assert tb.exception == expect.get("exception")
    if expect.get("message_starts") is not None:
        assert tb.message.startswith(expect["message_starts"])
    assert len(tb.frames) == expect.get("frames", 0)
    if "last_frame" in expect:
        last = tb.frames[-1]
        assert (last.path, last.line, last.function) == (
            expect["last_frame"]["path"],
            expect["last_frame"]["line"],
            expect["last_frame"]["function"],
        )
    if "ranks" in expect:
        assert list(tb.ranks) == expect["ranks"]
    if "chained" in expect:
        assert len(tb.chain) + 1 == expect["chained"]


def test_every_kind_of_paste_is_covered():
    kinds = {c["kind"] for c in CASES}
    assert {"bare-line", "full", "log", "rank-prefix", "chained", "keras-wrapper", "jupyter", "windows"} <= kinds


def test_crlf_line_ends_parse_like_lf(known):
    item = case("full-torchsummary-input-weight-type")
    lf = parse(item["text"], known)
    crlf = parse(item["text"].replace("\n", "\r\n"), known)
    assert (crlf.exception, crlf.message, crlf.frames) == (lf.exception, lf.message, lf.frames)


def test_ansi_colours_are_ignored(known):
    # Python 3.13 colours tracebacks; no public page keeps the escape bytes, so colour a real one.
    item = case("full-torchsummary-input-weight-type")
    plain = parse(item["text"], known)
    coloured = "\n".join(
        f"\x1b[35m{line}\x1b[0m" if "File" in line else f"\x1b[1;31m{line}\x1b[0m" for line in item["text"].split("\n")
    )
    tb = parse(coloured, known)
    assert (tb.exception, tb.message, tb.frames) == (plain.exception, plain.message, plain.frames)


def test_interleaved_ranks_are_separated_and_the_lowest_rank_explained(known):
    # Two real torchrun outputs from different runs, interleaved line by line as concurrent ranks print.
    first, second = (c["text"] for c in CASES if c["kind"] == "rank-prefix")
    a, b = first.splitlines(), second.splitlines()
    mixed = [line for pair in zip(a, b, strict=False) for line in pair] + a[len(b) :] + b[len(a) :]
    tb = parse("\n".join(mixed), known)
    alone = {t.rank: t for t in (parse(first, known), parse(second, known))}
    assert set(tb.ranks) == set(alone)
    lowest = alone[min(alone)]
    assert (tb.rank, tb.exception, tb.message) == (lowest.rank, lowest.exception, lowest.message)


def test_keras_wrapper_keeps_the_torch_message_inside(known):
    tb = parse(case("keras-dense-call-dataparallel-cuda1-cuda0")["text"], known)
    assert tb.message.startswith("Exception encountered when calling Dense.call()")
    assert "found at least two devices, cuda:1 and cuda:0!" in tb.message
    assert "Arguments received by Dense.call()" in tb.message


def test_compile_user_code_frames_are_kept_apart(known):
    tb = parse(case("multiline-dynamo-fake-tensor-from-user-code")["text"], known)
    assert tb.final.compiled_frames, "the 'from user code:' frames"
    assert any(f.is_user for f in tb.final.compiled_frames)
    assert tb.final.compiled_frames[0] in tb.all_frames


def test_glued_output_of_two_processes_keeps_one_type(known):
    tb = parse(case("rank-interleaved-two-final-lines-unprefixed")["text"], known)
    assert tb.exception == "RuntimeError"


def test_plain_text_has_no_traceback():
    assert parse("Epoch 1/3\n100%|##########| 469/469 [00:12<00:00]\nval_acc=0.98\n") is None


def test_clean_strips_markdown_links_but_not_code():
    text = "Cell In[5], [line 1](vscode-notebook-cell:?execution_count=5&line=1)\nout = layers[0](x)"
    assert clean(text) == "Cell In[5], line 1\nout = layers[0](x)"
