"""The CLI as users and scripts meet it: real processes, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fixer.cli import FAILED_LOG, INTERNAL_ERROR, NO_MATCH, NO_TRACEBACK, OK, OUTPUT_ERROR, USAGE, main

# https://github.com/FoundationVision/VAR/issues/127
VAR = (
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 "
    "and cpu! (when checking argument for argument state_steps in method wrapper_CUDA___fused_adamw_)\n"
)
# https://github.com/chaidiscovery/chai-lab/issues/63: the bare two-GPU message, which a dozen causes print
BARE_TWO_GPUS = (
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cuda:0!\n"
)
# https://github.com/baaivision/See3D/issues/11 (dtype-only: not a device error)
DTYPE_ONLY = (
    "RuntimeError: Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor) should be the same\n"
)


def fixer(*args: str, stdin: str | bytes = "") -> subprocess.CompletedProcess:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run(
        [sys.executable, "-m", "fixer", *args], input=data, capture_output=True, timeout=60, check=False
    )


def test_explain_json_puts_the_matching_entry_first():
    result = fixer("explain", "--json", "-", stdin=VAR)
    assert result.returncode == OK
    out = json.loads(result.stdout)
    assert out["matches"][0]["id"] == "optimizer-state-after-resume"
    assert out["traceback"]["evidence"]["argument"] == "state_steps"
    assert all({"id", "title", "score", "why"} <= set(m) for m in out["matches"])
    scores = [m["score"] for m in out["matches"]]
    assert scores == sorted(scores, reverse=True)


def test_a_close_first_place_is_said_in_json_and_in_the_terminal_with_what_would_settle_it():
    out = json.loads(fixer("explain", "--json", "-", stdin=BARE_TWO_GPUS).stdout)
    first, second = out["matches"][:2]
    assert out["confident"] is False
    uncertain = out["uncertain"]
    assert uncertain["lead"] == first["score"] - second["score"]
    assert uncertain["question"] and uncertain["question_fact"] and uncertain["question_check"]
    assert uncertain["question_entry"] is None or isinstance(uncertain["question_entry"], str)
    assert uncertain["if_yes"] != uncertain["if_no"]  # an answer either way moves the ranking
    terminal = fixer("explain", "--no-input", "-", stdin=BARE_TWO_GPUS).stdout.decode()
    assert f"Not certain: {first['id']} leads {second['id']} by {uncertain['lead']} points." in " ".join(
        terminal.split()
    )


def test_a_clear_first_place_is_called_confident_and_asks_nothing():
    out = json.loads(fixer("explain", "--json", "-", stdin=VAR).stdout)
    assert out["confident"] is True and out["uncertain"] is None
    assert "Not certain" not in fixer("explain", "--no-input", "-", stdin=VAR).stdout.decode()


def test_explain_reads_a_file_and_renders_layers(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("epoch 3\n" + VAR)
    result = fixer("explain", str(log))
    assert result.returncode == OK
    text = result.stdout.decode()
    for layer in ("What it means", "Most likely cause", "Why fixer thinks so", "How to fix"):
        assert layer in text


def test_bundled_example_runs_in_one_step():
    result = fixer("explain", "--example")
    assert result.returncode == OK
    assert b"optimizer-state-after-resume" in result.stdout


def test_plain_fixer_passes_piped_text_through_then_explains_and_fails_like_the_run():
    """`python train.py 2>&1 | fixer` in a CI step must fail the step when the script crashed."""
    log = "".join(f"step {i}\n" for i in range(50)) + VAR
    result = fixer(stdin=log)
    assert result.returncode == FAILED_LOG
    out = result.stdout.decode()
    assert out.startswith(log)
    assert "optimizer-state-after-resume" in out[len(log) :]
    for args in (("--exit-zero",), ("--exit-zero", "--color", "never")):
        kept = fixer(*args, stdin=log)
        assert kept.returncode == OK and kept.stdout == result.stdout


def test_plain_fixer_fails_on_a_traceback_it_cannot_explain_too():
    result = fixer(stdin="step 1\n" + "Traceback (most recent call last):\n  File \"t.py\", line 1\nKeyError: 'x'\n")
    assert result.returncode == FAILED_LOG


def test_plain_fixer_is_quiet_when_the_run_had_no_error():
    log = "".join(f"step {i}\n" for i in range(50))
    result = fixer(stdin=log)
    assert result.returncode == OK
    assert result.stdout.decode().startswith(log)
    # the report after the log says what it found, not a bare marker
    assert result.stdout.decode()[len(log) :].splitlines() == [
        "-- fixer --",
        "fixer: no traceback or known error message found in the input",
    ]


@pytest.mark.parametrize(
    ("stdin", "code"),
    [
        ("", NO_TRACEBACK),
        ("all good, 3 epochs done\n", NO_TRACEBACK),
        (DTYPE_ONLY, NO_MATCH),
        (
            "Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\nKeyError: 'lr'\n",
            NO_MATCH,
        ),
    ],
)
def test_exit_codes_tell_scripts_what_happened(stdin, code):
    result = fixer("explain", "--json", "-", stdin=stdin)
    assert result.returncode == code
    assert b"Traceback" not in result.stderr


def test_dtype_only_mismatch_is_called_out_as_not_a_device_error():
    result = fixer("explain", "-", stdin=DTYPE_ONLY)
    assert result.returncode == NO_MATCH
    assert b"dtype" in result.stdout


def test_a_paste_cut_before_its_message_asks_for_the_last_line():
    """Frames copied from a console without the final line (BERT-NER's torch.load of a GPU checkpoint): the
    frames stop inside torch.load, which ranks its commonest failure, not as certain, and asks for the line."""
    stdin = (
        "Traceback (most recent call last):\n"
        '  File "bert.py", line 48, in load_model\n'
        "    model.load_state_dict(torch.load(output_model_file))\n"
        '  File "/env/lib/site-packages/torch/serialization.py", line 387, in load\n'
        "    return _load(f, map_location, pickle_module, **pickle_load_args)\n"
    )
    result = fixer("explain", "--color", "never", "--no-input", "-", stdin=stdin)
    assert result.returncode == OK
    assert b"The paste ends before the error message" in result.stdout and b"last line" in result.stdout
    document = json.loads(fixer("explain", "--json", "-", stdin=stdin).stdout)
    assert document["matches"][0]["id"] == "torch-load-without-map-location" and not document["confident"]


def test_a_paste_cut_before_its_message_in_frames_that_say_nothing_matches_nothing():
    stdin = (
        'Traceback (most recent call last):\n  File "report.py", line 12, in <module>\n    summary = summarise(rows)\n'
    )
    result = fixer("explain", "--color", "never", "-", stdin=stdin)
    assert result.returncode == NO_MATCH
    assert b"The paste ends before the error message" in result.stdout and b"match no KB entry" in result.stdout


def test_a_pytorch_message_the_kb_lacks_says_where_pytorch_raises_it():
    """A real check of torch/cuda/_utils.py (a CUDA API handed another kind of device), for which no entry exists."""
    stdin = "ValueError: Expected a cuda or cpu device, but got: mps\n"
    text = fixer("explain", "--color", "never", "-", stdin=stdin)
    assert text.returncode == NO_MATCH
    assert b"PyTorch's own message, not in the KB yet" in text.stdout and b"torch/cuda/_utils.py" in text.stdout
    document = json.loads(fixer("explain", "--json", "-", stdin=stdin).stdout)
    assert document["matches"] == [] and document["outside_kb"]["where"].startswith("torch/cuda/_utils.py")


def test_a_library_message_the_kb_lacks_says_which_library_raises_it():
    """diffusers' check that a list of generators agrees on one device, a cause no entry covers."""
    stdin = "ValueError: `generator` device placement is not consistent in the list.\n"
    text = fixer("explain", "--color", "never", "-", stdin=stdin)
    assert text.returncode == NO_MATCH and b"diffusers' own message, not in the KB yet" in text.stdout
    document = json.loads(fixer("explain", "--json", "-", stdin=stdin).stdout)
    assert document["matches"] == []
    assert document["outside_kb"]["library"] == "diffusers"
    assert document["outside_kb"]["where"].startswith("pipelines/marigold/")


def test_kb_stats_counts_pytorch_and_library_messages_per_entry(capsys):
    assert main(["kb", "stats", "--json"]) == OK
    out = json.loads(capsys.readouterr().out)
    per_entry = {e["id"]: e["pytorch_messages"] for e in out["entries"]}
    assert per_entry["inputs-not-moved"] > 50 and per_entry["default-device-generator"] >= 1
    assert out["totals"]["pytorch_messages"] > out["totals"]["pytorch_messages_outside"] > 0
    from_libraries = {e["id"]: e["library_messages"] for e in out["entries"]}
    assert from_libraries["malformed-device-argument"] >= 5 and from_libraries["accelerate-offloaded-model-moved"] >= 2
    assert {"transformers", "accelerate", "flash-attention", "mmcv"} <= set(out["totals"]["libraries"])
    assert out["totals"]["library_messages"] > out["totals"]["library_messages_outside"] > 0


@pytest.mark.parametrize(
    "args",
    [
        ("explain", "/definitely/not/here.log"),
        ("explain", "--top", "0", "-"),
        ("explain", "--example", "no-such-entry"),
        ("nonsense",),
        ("show",),
    ],
)
def test_bad_usage_gets_one_line_and_exit_2(args):
    result = fixer(*args)
    assert result.returncode == USAGE
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fixer: ")


def test_directory_and_binary_input_get_one_line_errors(tmp_path):
    binary = tmp_path / "model.pt"
    binary.write_bytes(b"PK\x03\x04\x00\x00" * 100)
    for target in (tmp_path, binary):
        result = fixer("explain", str(target))
        assert result.returncode == USAGE
        assert len(result.stderr.decode().strip().splitlines()) == 1


def test_a_100_mb_log_is_explained(tmp_path):
    log = tmp_path / "huge.log"
    line = b"step 123 loss 0.12345 lr 3e-4 grad_norm 1.0 throughput 1234.5 tokens/s\n"
    with log.open("wb") as handle:
        handle.write(line * (100 * 1024 * 1024 // len(line)))
        handle.write(VAR.encode())
    result = fixer("explain", "--json", str(log))
    assert result.returncode == OK
    assert json.loads(result.stdout)["matches"][0]["id"] == "optimizer-state-after-resume"


COMMANDS = [(), ("explain",), ("patch",), ("diagnose",), ("show",), ("list",), ("kb",)]
KB_COMMANDS = [("kb", "schema"), ("kb", "lint"), ("kb", "stats"), ("kb", "accuracy")]


@pytest.mark.parametrize("args", COMMANDS + KB_COMMANDS)
def test_every_command_has_help(args, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*args, "--help"])
    assert exit_info.value.code == 0
    assert "usage: fixer" in capsys.readouterr().out


def test_show_and_list(capsys):
    assert main(["list", "--json"]) == OK
    ids = [e["id"] for e in json.loads(capsys.readouterr().out)]
    assert "optimizer-state-after-resume" in ids
    assert main(["show", "optimizer-state-after-resume", "--json"]) == OK
    assert json.loads(capsys.readouterr().out)["id"] == "optimizer-state-after-resume"
    assert main(["show", "no-such-entry"]) == NO_MATCH


def test_kb_schema_describes_an_entry(tmp_path):
    target = tmp_path / "schema" / "entry.schema.json"
    assert main(["kb", "schema", "-o", str(target)]) == OK
    schema = json.loads(target.read_text())
    assert {"id", "signatures", "evidence", "fix", "examples", "quiz"} <= set(schema["properties"])


def test_explain_path_imports_no_heavy_libraries():
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "fixer", "explain", "--json", "-"],
        input=VAR.encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.decode().splitlines() if "|" in line}
    assert imported, "importtime printed nothing"
    assert not imported & {"torch", "libcst", "mkdocs"}


@pytest.mark.parametrize(("options", "not_imported"), [(["--json"], {"rich"}), ([], set())], ids=["json", "text"])
def test_explain_reads_the_kb_from_its_index_without_yaml_or_pydantic(options, not_imported):
    """The first run builds the index (and validates every entry); the runs after it only read it, and
    the terminal's card comes from the index too."""
    command = [sys.executable, "-X", "importtime", "-m", "fixer", "explain", *options, "-"]
    runs = [subprocess.run(command, input=VAR.encode(), capture_output=True, timeout=60, check=False) for _ in "12"]
    imported = [{line.rsplit("|", 1)[-1].strip() for line in run.stderr.decode().splitlines()} for run in runs]
    assert {"yaml", "pydantic"} <= imported[0]
    assert not imported[1] & {"yaml", "pydantic", *not_imported}
    assert runs[0].stdout == runs[1].stdout


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_paste_in_a_terminal_is_prompted_for_and_explained():
    import os
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # the child: fixer with a terminal on stdin
        os.execv(sys.executable, [sys.executable, "-m", "fixer", "explain", "--json"])
    output = b""
    while b"Paste the traceback" not in output:
        output += os.read(fd, 1024)
    os.write(fd, VAR.encode() + b"\x04")
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == OK
    assert b'"optimizer-state-after-resume"' in output


def test_kb_stats_counts_examples_and_repro_verification(capsys):
    assert main(["kb", "stats", "--json"]) == OK
    out = json.loads(capsys.readouterr().out)
    totals = out["totals"]
    assert totals["entries"] == len(out["entries"]) >= 30
    assert totals["entries_with_examples"] == totals["entries"]
    assert sum(totals["repro"].values()) == totals["entries"]
    assert {e["repro"] for e in out["entries"]} <= {"cpu", "cuda-only", "none"}


def test_kb_lint_reports_each_entry_and_passes(capsys):
    assert main(["kb", "lint"]) == OK
    out = capsys.readouterr().out
    assert "optimizer-state-after-resume: 3 example(s), repro verified on cpu" in out
    assert out.rstrip().endswith("0 problem(s)")


def test_kb_accuracy_scores_a_labelled_corpus(tmp_path, capsys):
    # two real lines: https://github.com/FoundationVision/VAR/issues/127 and a plain-text non-error
    corpus = tmp_path / "corpus.yaml"
    corpus.write_text(
        json.dumps(
            [
                {"id": "var", "traceback": VAR, "expect": "optimizer-state-after-resume"},
                {"id": "noise", "traceback": "epoch 1 done\n", "expect": ["inputs-not-moved"]},
            ]
        )
    )
    assert main(["kb", "accuracy", str(corpus), "--json"]) == OK
    overall = json.loads(capsys.readouterr().out)["overall"]
    assert overall == {"n": 2, "top1": 0.5, "top3": 0.5}
    assert main(["kb", "accuracy", str(tmp_path / "missing.yaml")]) == USAGE


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
@pytest.mark.parametrize("args", [("explain", "--example"), ("list", "--json"), ("show", "inputs-not-moved")])
def test_a_full_disk_is_one_line_and_exit_74(args):
    with open("/dev/full", "wb") as full:
        result = subprocess.run(
            [sys.executable, "-m", "fixer", *args], stdout=full, stderr=subprocess.PIPE, timeout=60, check=False
        )
    assert result.returncode == OUTPUT_ERROR
    assert result.stderr.decode().splitlines() == ["fixer: cannot write the output (No space left on device)"]


def test_a_bug_in_fixer_is_one_line_and_exit_70(monkeypatch, capsys):
    from fixer.cli import explain

    def broken(*args: object, **kwargs: object) -> int:
        raise ValueError("an invariant broke\nacross two lines")

    monkeypatch.setattr(explain, "explain_text", broken)
    assert main(["explain", "--example"]) == INTERNAL_ERROR
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "fixer: internal error (ValueError: an invariant broke across two lines); "
        "please report it, with the output of FIXER_DEBUG=1"
    ]
    monkeypatch.setenv("FIXER_DEBUG", "1")
    assert main(["explain", "--example"]) == INTERNAL_ERROR
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_random_bytes_are_binary_input_exit_2_on_one_line(tmp_path):
    import random

    noise = random.Random(0).randbytes(100_000).replace(b"\x00", b"")
    (tmp_path / "noise.bin").write_bytes(noise)
    for result in (
        fixer("explain", str(tmp_path / "noise.bin")),
        fixer("explain", "-", stdin=noise),
        fixer(stdin=noise),
    ):
        assert result.returncode == USAGE
        lines = result.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith("fixer: ") and "binary" in lines[0]


def test_a_powershell_utf16_log_with_stray_nul_bytes_is_explained(tmp_path):
    log = tmp_path / "log.txt"
    log.write_bytes(
        "\ufeffepoch 1\r\nepoch 2\x00\r\n".encode("utf-16-le") + VAR.replace("\n", "\r\n").encode("utf-16-le")
    )
    for result in (fixer("explain", "--json", str(log)), fixer("explain", "--json", "-", stdin=log.read_bytes())):
        assert result.returncode == OK, result.stderr
        assert json.loads(result.stdout)["matches"][0]["id"] == "optimizer-state-after-resume"


@pytest.mark.parametrize("stdin", ["", "\n \n"])
def test_explain_json_on_empty_input_prints_the_no_traceback_document(stdin):
    result = fixer("explain", "--json", "-", stdin=stdin)
    assert result.returncode == NO_TRACEBACK
    document = json.loads(result.stdout)
    assert document == json.loads(fixer("explain", "--json", "-", stdin="all good\n").stdout)
    assert document["traceback"] is None and document["matches"] == []


@pytest.mark.parametrize("args", [("explain", "-"), ("explain", "--json"), ()])
def test_closed_stdin_is_one_line_and_exit_2(args):
    import os

    result = subprocess.run(
        [sys.executable, "-m", "fixer", *args],
        capture_output=True,
        timeout=60,
        check=False,
        preexec_fn=lambda: os.close(0),
    )
    assert result.returncode == USAGE
    assert result.stderr.decode().splitlines() == ["fixer: standard input is closed; pipe a log or give a file"]
    assert result.stdout == b""


@pytest.mark.parametrize(
    "content",
    [
        (Path(__file__).resolve().parents[1] / "docs" / "assets" / "screenshot-entry.png").read_bytes(),
        bytes(range(256)) * 64,
        b"- just\n- strings\n",
        b"a plain string\n",
        b"- id: var\n  expect: optimizer-state-after-resume\n",
    ],
    ids=["png", "bytes", "list-of-strings", "string", "missing-traceback"],
)
def test_kb_accuracy_on_an_unusable_corpus_is_one_line_and_exit_2(tmp_path, capsys, content):
    corpus = tmp_path / "corpus.yaml"
    corpus.write_bytes(content)
    assert main(["kb", "accuracy", str(corpus)]) == USAGE
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"fixer: cannot read the corpus {corpus}: ")


def test_an_empty_knowledge_base_is_unusable_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FIXER_KB", str(tmp_path))
    assert main(["explain", "--example"]) == USAGE
    assert (
        capsys.readouterr().err == f"fixer: the knowledge base at {tmp_path} has no usable entry; run `fixer kb lint`\n"
    )


MACHINE_READABLE = [
    ("explain", "--json", "crash.log"),
    ("patch", "--json", "crash.log"),
    ("diagnose", "--json", "--traceback", "crash.log"),
    ("scan", "--json", "logs"),
    ("list", "--json"),
    ("show", "--json", "optimizer-state-after-resume"),
    ("train", "--json", "--count", "2"),
    ("kb", "lint", "--json"),
    ("kb", "stats", "--json"),
    ("export", "--format", "json", "-o", "-"),
]


@pytest.mark.parametrize("args", MACHINE_READABLE, ids=[" ".join(a[:2]) for a in MACHINE_READABLE])
def test_a_machine_readable_result_is_all_that_stdout_carries(tmp_path, args):
    """Warnings, progress and advice go to stderr, so `fixer ... | jq` always reads one document."""
    (tmp_path / "logs").mkdir()
    for where in (tmp_path / "crash.log", tmp_path / "logs" / "job.log"):
        where.write_text("epoch 3\n" + VAR)
    done = subprocess.run(
        [sys.executable, "-m", "fixer", *args], cwd=tmp_path, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode in (OK, NO_MATCH), done.stderr
    json.loads(done.stdout)
