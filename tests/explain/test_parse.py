"""The parser on real pasted text (parser_cases.yaml beside this file: each case cites its public page)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import ROOT
from pastes import AFTER_A_CRASH, LONG_LINE_MESSAGE, LONG_LINES, rich_boxes, rich_traceback, word_wrapped

from fixer.explain.parse import MAX_MESSAGE_CHARS, clean, parse

CASES = yaml.safe_load((Path(__file__).parent / "parser_cases.yaml").read_text())
REALCODE = {item["id"]: item for item in yaml.safe_load((ROOT / "benchmarks/realcode/threads.yaml").read_text())}


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


def test_terminal_hyperlinks_leave_only_their_text(known):
    # Terminals that print frames as OSC 8 hyperlinks (`ESC ]8;;URI ESC \ text ESC ]8;; ESC \`) around a real paste.
    item = case("full-torchsummary-input-weight-type")
    plain = parse(item["text"], known)

    def linked(line: str) -> str:
        if '"' not in line:
            return line
        head, path, tail = line.split('"', 2)
        return f'{head}"\x1b]8;;file://{path}\x1b\\{path}\x1b]8;;\x1b\\"{tail}'

    tb = parse("\n".join(linked(line) for line in item["text"].split("\n")), known)
    assert (tb.exception, tb.message, tb.frames) == (plain.exception, plain.message, plain.frames)


def test_a_link_text_keeps_one_level_of_brackets():
    assert clean("[Cell In[5]](vscode-notebook-cell:?execution_count=5)") == "Cell In[5]"


def test_numbers_no_file_or_rank_has_are_read_without_failing(known):
    message = (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
    )
    huge = "9" * 5000
    frame = parse(
        f'Traceback (most recent call last):\n  File "train.py", line {huge}, in step\n    loss.backward()\n{message}\n'
    )
    assert frame is not None and frame.frames[0].line is None and frame.frames[0].code == "loss.backward()"
    rank = parse(f"[rank{huge}]: {message}\n", known)
    assert rank is not None and rank.ranks == () and rank.message.endswith("cuda:0 and cpu!")


def test_a_huge_message_is_cut_to_its_leading_part():
    message = "RuntimeError: Expected all tensors to be on the same device:\n" + ("0.1234 " * 1000 + "\n") * 50
    tb = parse(message)
    assert tb is not None and len(tb.message) == MAX_MESSAGE_CHARS
    assert tb.message.startswith("Expected all tensors to be on the same device")


READING_SHAPES = {"hard-wrapped", "editor-links", "no-exception-type", "re-typed", "run-together", "curly-quotes",
                  "logger-prefix", "torchscript"}  # fmt: skip


@pytest.mark.parametrize("item", [c for c in CASES if c["kind"] in READING_SHAPES], ids=lambda c: c["name"])
def test_a_damaged_paste_with_a_device_message_gets_candidates(item, matcher):
    result = matcher.explain(item["text"])
    if result.traceback is not None and result.traceback.message:
        assert result.matches, "a device error message that yields no candidate"


def test_every_reading_shape_has_a_real_paste():
    assert {c["kind"] for c in CASES} >= READING_SHAPES


@pytest.mark.parametrize(
    ("name", "cause"),
    [
        ("wrapped-deserialize-cuda-72col", "torch-load-without-map-location"),
        ("wrapped-deserialize-cuda-mid-word", "torch-load-without-map-location"),
        ("wrapped-same-device-index-select", "inputs-not-moved"),
    ],
)
def test_a_hard_wrapped_message_reads_as_the_whole_one(name, cause, matcher):
    assert matcher.explain(case(name)["text"]).matches[0].id == cause


def _example(catalog, entry_id: str, holds: str) -> str:
    return next(e.traceback for e in catalog.get(entry_id).examples if holds in e.traceback)


def test_a_frame_header_wrapped_at_its_spaces_is_one_frame_again(catalog):
    # https://github.com/ChaoningZhang/MobileSAM/pull/47, a KB example: at 60 columns its last header
    # falls on three lines (`File`, the path, `line 274, in forward`), at 80 on two (`in` / `forward`)
    text = _example(catalog, "plain-tensor-attribute", "tiny_vit_sam.py")
    whole = parse(text, catalog.known_messages)
    for width in (60, 80):
        tb = parse(word_wrapped(text, width), catalog.known_messages)
        assert [(f.path, f.line, f.function, f.code) for f in tb.frames] == [
            (f.path, f.line, f.function, f.code) for f in whole.frames
        ]


def test_a_code_line_wrapped_at_its_spaces_is_one_line_again(catalog):
    # https://github.com/Canjie-Luo/MORAN_v2/issues/143, a KB example: a mail client's 76 or 80 columns
    # put the rest of the failing line, which closes the brackets it opened, flush left under it
    text = _example(catalog, "cpu-copy-meets-gpu-tensor", "morn.py")
    whole = parse(text, catalog.known_messages)
    for width in (76, 80):
        tb = parse(word_wrapped(text, width), catalog.known_messages)
        assert [f.code for f in tb.frames] == [f.code for f in whole.frames]


def test_a_code_line_left_open_by_python_takes_no_line_that_does_not_close_it():
    text = '  File "x.py", line 3, in f\n    return F.embedding(\nsee the log above\nRuntimeError: boom'
    assert clean(text) == text


def test_a_line_ending_in_the_word_file_is_joined_only_into_a_whole_header():
    text = 'saving the checkpoint File\n"ckpt.pt" failed, line 3 of the log\nRuntimeError: boom'
    assert clean(text) == text


def test_a_message_without_its_type_is_found_across_a_wrap(catalog):
    # https://github.com/mkshing/e4t-diffusion/issues/10 (a KB example): the message is a quoted string
    text = _example(catalog, "accelerate-offloaded-model-moved", "sequential model offloading")
    tb = parse(word_wrapped(text, 80), catalog.known_messages)
    assert tb.message.startswith("activated sequential model offloading by calling")


def test_a_short_or_finished_line_goes_on_when_the_next_completes_a_known_message(catalog):
    # KB examples: a wrap leaves `only work` alone on a line (https://github.com/wenwenyu/PICK-pytorch/issues/21),
    # or breaks after a full stop that a longer known message goes past, `...device.` / `Received ...`
    # (https://github.com/Lightning-AI/pytorch-lightning/issues/7023)
    for entry_id, holds, goes_on in [
        ("ddp-module-not-on-device", "only work\nwith single-device", "with single-device CUDA modules"),
        ("tensor-created-without-device", "Received cpu and cuda:0", "Received cpu and cuda:0"),
    ]:
        tb = parse(word_wrapped(_example(catalog, entry_id, holds), 60), catalog.known_messages)
        assert goes_on in " ".join(tb.message.split())


def test_a_known_message_ending_a_line_of_thousands_of_characters_still_ends_the_message(catalog):
    # The line is no wrap's, and only its tail can hold the known message: the log line after it stays out.
    tb = parse(LONG_LINES[0], catalog.known_messages)
    assert tb.message.endswith(LONG_LINE_MESSAGE)


def test_frame_headers_cut_mid_word_at_a_console_width_are_whole_again(catalog):
    # https://github.com/kamalkraj/BERT-NER/issues/27 (benchmarks/realcode): the headers are cut at 78
    # columns inside a name and a path, while a code line of 79 stayed whole
    text = REALCODE["bert-ner-torch-load-gpu-checkpoint-on-cpu"]["traceback"]
    frames = parse(text, catalog.known_messages).frames
    assert [(f.path.rsplit("\\", 1)[-1], f.function, f.code) for f in frames[1:]] == [
        ("bert.py", "__init__", "self.model , self.tokenizer, self.model_config = self.load_model(model_dir)"),
        ("bert.py", "load_model", "model.load_state_dict(torch.load(output_model_file))"),
        ("serialization.py", "load", "return _load(f, map_location, pickle_module, **pickle_load_args)"),
    ]


def test_frames_that_end_without_their_exception_line_are_marked_cut(catalog):
    whole = _example(catalog, "optimizer-state-after-resume", "Traceback")
    assert not parse(whole, catalog.known_messages).final.cut
    cut = whole[: whole.rindex("\n", 0, len(whole.rstrip("\n")))]  # the exception line gone
    tb = parse(cut, catalog.known_messages)
    assert tb.frames and tb.final.cut


def test_a_message_a_logger_printed_above_its_traceback_ends_where_the_traceback_begins(catalog):
    # https://github.com/QuentinFuxa/WhisperLiveKit/issues/197 (benchmarks/realcode): two log records say
    # the message, the third prints the traceback after its own words, with no blank line between
    text = REALCODE["whisperlivekit-audio2mel-featurizer-on-cpu"]["traceback"]
    tb = parse(text, catalog.known_messages)
    assert tb.message == (
        "Expected all tensors to be on the same device, but got mat2 is on cuda:0, different from other tensors "
        "on cpu (when checking argument in method wrapper_CUDA_bmm)"
    )
    assert [f.function for f in tb.frames] == ["diarization_processor", "diarize", "get_features"]


def test_a_frame_that_lost_its_file_prefix_is_still_a_frame(catalog):
    # https://github.com/LLaVA-VL/LLaVA-NeXT/issues/204, quoted as the KB's device-map-auto-split example
    example = next(e for e in catalog.get("device-map-auto-split").examples if "llava_arch.py" in e.traceback)
    tb = parse(example.traceback, catalog.known_messages)
    assert tb.frames[0].path.endswith("llava/model/llava_arch.py") and tb.frames[0].line == 363


def test_run_together_frames_are_split_into_frame_code_and_error():
    tb = parse(case("run-together-frames-curly-quotes-invalid-ordinal")["text"])
    assert all(frame.code for frame in tb.frames) and tb.message.startswith("CUDA error: invalid device ordinal")


def test_an_error_after_its_source_line_on_one_line_keeps_its_type(catalog):
    tb = parse(case("oneline-source-and-invalid-ordinal")["text"], catalog.known_messages)
    assert (tb.exception, tb.message[:39]) == ("RuntimeError", "CUDA error (10): invalid device ordinal")


@pytest.mark.parametrize("after", AFTER_A_CRASH)
def test_the_device_error_outlives_what_is_printed_after_it(after, known):
    item = case("full-torchsummary-input-weight-type")
    alone = parse(item["text"], known)
    tb = parse(item["text"].rstrip("\n") + "\n" + after, known)
    assert (tb.exception, tb.message, tb.frames) == (alone.exception, alone.message, alone.frames)


def test_a_message_that_goes_on_past_a_full_stop_keeps_its_parenthesis_and_its_indented_lines(known):
    text = (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"
        "(when checking argument for argument mat1 in method wrapper_CUDA_addmm)\n"
    )
    assert parse(text, known).message.endswith("wrapper_CUDA_addmm)")
    compiled = "torch._dynamo.exc.TorchRuntimeError: Tensor device mismatch.\n  Explanation: cpu and meta!\n"
    assert parse(compiled, known).message.endswith("cpu and meta!")


@pytest.mark.parametrize("width", [60, 80, 100])
def test_a_rich_box_reads_alike_wherever_a_frame_meets_its_edge(width, tmp_path_factory, monkeypatch, known):
    import traceback

    monkeypatch.chdir(tmp_path_factory.mktemp("r"))  # a short folder: rich folds at a space only a path it fits whole
    misread = []
    for depth, (text, exc) in enumerate(rich_boxes(width, range(1, width)), start=1):
        printed = [(f.filename, f.lineno, f.name) for f in traceback.extract_tb(exc.__traceback__)[1:]]
        if [(f.path, f.line, f.function) for f in parse(text, known).frames[1:]] != printed:
            misread.append(depth)
    assert misread == []


@pytest.mark.parametrize("width", [60, 80, 120])
@pytest.mark.parametrize("locals_", [False, True], ids=["plain", "locals"])
def test_a_rich_traceback_reads_as_python_prints_it(width, locals_, known):
    import traceback

    text, exc = rich_traceback(width, locals_=locals_)
    tb = parse(text, known)
    printed = traceback.extract_tb(exc.__traceback__)
    assert [(f.path, f.line, f.function) for f in tb.frames] == [(f.filename, f.lineno, f.name) for f in printed]
    assert printed[0].line.strip().startswith(tb.frames[0].code)  # rich crops source lines at its width
    assert tb.exception == type(exc).__name__
    assert " ".join(tb.message.split()) == " ".join(str(exc).split())


def test_ipython_keeps_the_numbered_lines_up_to_the_failing_one_with_their_indentation(known):
    tb = parse(case("file-uri-line-links-jupyter-vscode")["text"], known)
    container = tb.frames[0]
    assert container.code == "input = module(input)"
    assert container.context == (
        "def forward(self, input):",
        "    for module in self:",
        "        input = module(input)",
    )
    assert tb.frames[-1].context == ()  # its numbered lines were cut from the paste


def test_ipython_joins_the_numbered_lines_of_a_call_the_arrowed_line_leaves_open(known):
    """The failing call's `generator=` is on a numbered line after the arrow."""
    cell = parse(case("jupyter-colab-call-continued-after-arrow")["text"], known).frames[0]
    assert cell.code == (
        "latents = torch.randn( (batch_size, unet.config.in_channels, height // 8, width // 8), "
        "generator=generator, device=torch_device, )"
    )
    assert cell.context == ("latents = torch.randn(",)  # what encloses it stays what IPython printed above
