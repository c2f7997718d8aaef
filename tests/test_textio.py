from __future__ import annotations

import codecs
import io
import os
import random
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from fixer.explain.parse import parse
from fixer.textio import MAX_LINE_CHARS, TAIL_CHARS, TAIL_LINES, BoundedText, InputError, collect, read_file

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


def test_long_lines_around_a_traceback_are_kept_to_a_bounded_number_of_characters():
    wide = "x" * MAX_LINE_CHARS + "\n"
    data = (wide * 300).encode() + _log(before=0, after=0) + (wide * 300).encode()
    text = collect(_chunks(data, 1 << 16))
    assert len(text) <= 2 * TAIL_CHARS + 2 * MAX_LINE_CHARS
    tb = parse(text)
    assert tb is not None and tb.message.startswith("Expected all tensors") and tb.frames[-1].function == "step"


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


def test_a_log_with_stray_nul_bytes_is_explained_without_them():
    data = _log(before=200, after=5)
    text = collect(_chunks(data[:1000] + b"\x00\x00" + data[1000:3000] + b"\x00" + data[3000:]))
    assert "\x00" not in text
    assert parse(text) == parse(CREAM)


def test_a_truncated_then_appended_log_is_read_past_its_hole_of_nul_bytes():
    text = collect(_chunks(b"\x00" * 100_000 + _log(before=20, after=5)))
    assert parse(text) == parse(CREAM)


BOMS = {"utf-8": codecs.BOM_UTF8, "utf-16-le": codecs.BOM_UTF16_LE, "utf-16-be": codecs.BOM_UTF16_BE}


@pytest.mark.parametrize(
    ("encoding", "bom"),
    [
        ("utf-8", True),
        ("utf-16-le", True),
        ("utf-16-be", True),
        ("utf-16-le", False),
        ("utf-16-be", False),
        ("utf-32-le", True),
        ("utf-32-be", True),
        ("utf-32-le", False),
    ],
)
@pytest.mark.parametrize("chunk", [1, 777, 1 << 16])
def test_unicode_logs_decode_with_or_without_a_bom(encoding, bom, chunk):
    log = _log(before=40, after=3).decode()
    mark = {"utf-32-le": codecs.BOM_UTF32_LE, "utf-32-be": codecs.BOM_UTF32_BE, **BOMS}[encoding] if bom else b""
    text = collect(_chunks(mark + log.encode(encoding), chunk))
    assert text == collect([log.encode()])
    assert parse(text) == parse(CREAM)


def _binaries() -> list[bytes]:
    noise = random.Random(0).randbytes(100_000)
    png = Path(__file__).resolve().parents[1] / "docs" / "assets" / "screenshot-entry.png"
    return [noise, noise.replace(b"\x00", b""), png.read_bytes(), Path(sys.executable).resolve().read_bytes()]


@pytest.mark.parametrize("data", _binaries(), ids=["random", "random-without-nul", "png", "elf"])
@pytest.mark.parametrize("chunk", [1, 4096])
def test_binary_data_is_refused_however_it_arrives(data, chunk):
    with pytest.raises(InputError, match="binary"):
        collect(_chunks(data[: 1 << 16], chunk))


def test_a_file_of_nul_bytes_is_binary():
    with pytest.raises(InputError, match="binary"):
        collect([b"\x00" * 10_000])


def test_crlf_split_between_any_two_chunks_reads_like_the_whole_text():
    log = _log(before=3, after=3).decode().replace("\n", "\r\n")
    whole = BoundedText()
    whole.feed(log)
    expected = whole.text()
    assert parse(expected) == parse(CREAM)
    for cut in range(1, len(log)):
        bounded = BoundedText()
        bounded.feed(log[:cut])
        bounded.feed(log[cut:])
        assert bounded.text() == expected, cut


def test_a_lone_carriage_return_at_the_end_still_ends_a_line():
    bounded = BoundedText()
    bounded.feed("10%\r")
    bounded.feed("20%\r")
    assert bounded.text() == "10%\n20%"


@pytest.mark.parametrize("stdin", ["closed", "none"])
def test_closed_stdin_is_an_input_error(stdin):
    code = (
        "import sys\n"
        "from fixer.textio import InputError, read_stdin\n"
        + ("sys.stdin = None\n" if stdin == "none" else "")
        + "try:\n    read_stdin()\nexcept InputError as exc:\n    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        timeout=60,
        check=False,
        preexec_fn=lambda: os.close(0),
    )
    assert result.stderr == b""
    assert b"standard input" in result.stdout


def _path_kinds(tmp_path: Path) -> dict[str, str]:
    """Every kind of path a user or a log directory can hold that is no readable log, made here."""
    import socket

    os.mkfifo(tmp_path / "nobody-writes.fifo")
    (tmp_path / "zero.log").symlink_to("/dev/zero")
    (tmp_path / "a.log").symlink_to(tmp_path / "b.log")
    (tmp_path / "b.log").symlink_to(tmp_path / "a.log")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "control.sock"))
    return {
        "nobody-writes.fifo": "a named pipe nothing writes to",
        "zero.log": "is a device, not a regular file",
        "a.log": "a loop of symbolic links",
        "control.sock": "is a socket, not a regular file",
        "a" * 5000: "the path is too long for this system",
        "missing.log": "no such file",
        ".": "is a directory",
    }


def test_every_kind_of_path_that_is_no_log_gets_one_line_and_exit_2_without_waiting(tmp_path):
    for name, reason in _path_kinds(tmp_path).items():
        done = subprocess.run(
            [sys.executable, "-m", "fixer", "explain", name], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 2, (name[:20], done.stderr)
        assert done.stderr.count("\n") == 1 and reason in done.stderr and len(done.stderr) < 400, done.stderr


def test_a_pipe_something_writes_to_is_read_like_a_file(tmp_path):
    """`fixer explain <(python train.py 2>&1)`: the shell hands fixer a pipe whose writer is already there,
    and which stays silent a while before the traceback comes."""
    (tmp_path / "train.log").write_text(CREAM)
    command = f"{shlex.quote(sys.executable)} -m fixer explain --json <(sleep 1; cat train.log)"
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "cuda:2 and cpu!" in done.stdout, done.stderr
