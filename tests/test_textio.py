from __future__ import annotations

import io

import pytest

from fixer.parse import parse
from fixer.textio import TAIL_LINES, BoundedText, InputError, collect, read_file

# https://github.com/microsoft/Cream/issues/2
CREAM = """\
Traceback (most recent call last):
  File "tools/train.py", line 243, in <module>
    main()
  File "/usr/local/lib/python3.8/site-packages/torch/optim/sgd.py", line 106, in step
    buf.mul_(momentum).add_(d_p, alpha=1 - dampening)
RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:2 and cpu!
"""


def _log(before: int, after: int) -> bytes:
    head = "".join(f"epoch 1 step {i} loss 0.{i % 97}\n" for i in range(before))
    tail = "".join(f"wandb: syncing run {i}\n" for i in range(after))
    return (head + CREAM + tail).encode()


def _chunks(data: bytes, size: int = 4096):
    for start in range(0, len(data), size):
        yield data[start : start + size]


def test_traceback_in_a_long_log_is_kept_in_bounded_memory():
    text = collect(_chunks(_log(before=50_000, after=100)))
    assert len(text.splitlines()) <= TAIL_LINES
    tb = parse(text)
    assert tb is not None and tb.message.endswith("cuda:2 and cpu!")


def test_traceback_followed_by_more_lines_than_the_tail_is_still_found():
    text = collect(_chunks(_log(before=10, after=TAIL_LINES * 3)))
    assert len(text.splitlines()) <= 2 * TAIL_LINES
    tb = parse(text)
    assert tb is not None and "cuda:2 and cpu!" in tb.message
    assert tb.frames[-1].function == "step"


def test_echo_passes_every_byte_through():
    data = _log(before=300, after=300)
    sink = io.BytesIO()
    collect(_chunks(data, 777), echo=sink)
    assert sink.getvalue() == data


def test_progress_bar_carriage_returns_split_lines():
    bounded = BoundedText()
    bounded.feed(" 10%|#         |\r 20%|##        |\r")
    bounded.feed(CREAM)
    assert parse(bounded.text()) is not None


def test_utf8_split_across_chunks_decodes():
    data = "Error：Input and parameter tensors are not at the same device\n".encode()
    text = collect([data[:6], data[6:]])
    assert "Error：Input" in text


def test_binary_input_is_refused():
    with pytest.raises(InputError, match="binary"):
        collect([b"\x7fELF\x00\x00\x01"])


def test_directory_and_missing_file_are_refused(tmp_path):
    with pytest.raises(InputError, match="directory"):
        read_file(str(tmp_path))
    with pytest.raises(InputError, match="no such file"):
        read_file(str(tmp_path / "nope.log"))
