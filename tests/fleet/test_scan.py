"""`fixer scan`: every traceback in many logs, found in bounded memory, ranked on the text alone and
grouped by cause and fingerprint; the same on one process, on several, and on a Dask cluster."""

from __future__ import annotations

import csv
import io
import json
import os
import random
import sys
from pathlib import Path

import pytest
from conftest import kb_examples

from fixer import textio
from fixer.cli import NO_TRACEBACK, OK, USAGE, main
from fixer.explain.match import Matcher
from fixer.explain.parse import parse
from fixer.fleet.scan import expand, fingerprint, scan, scan_file

NOISE = "".join(f"epoch 3 step {i} loss 0.{i:04d} lr 1e-4 it/s 12.3\n" for i in range(500))
HEADED = [(entry, text) for entry, _, text in kb_examples() if "Traceback (most recent call last)" in text]


@pytest.fixture(scope="module")
def log_matcher(catalog) -> Matcher:
    """fixer explain on a log from another machine: the code it shows is read, the files it names are not."""
    return Matcher(catalog, read_files=False)


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[str, str, str]]]:
    """Twelve job logs, each three real tracebacks from the KB's examples between training noise."""
    root = tmp_path_factory.mktemp("logs")
    rng = random.Random(7)
    placed = []
    for job in range(12):
        parts = []
        for _ in range(3):
            entry, text = HEADED[rng.randrange(len(HEADED))]
            parts += [NOISE, text.rstrip("\n") + "\n"]
            placed.append((f"job{job:02d}.log", entry, text))
        (root / "jobs" / f"job{job:02d}.log").parent.mkdir(exist_ok=True)
        (root / "jobs" / f"job{job:02d}.log").write_text("".join(parts) + NOISE)
    (root / "jobs" / ".hidden.log").write_text(HEADED[0][1])
    return root, placed


def test_every_traceback_in_the_logs_is_found_where_it_is(logs):
    root, placed = logs
    files = expand([str(root)])
    assert [Path(f).name for f in files] == [f"job{n:02d}.log" for n in range(12)]  # hidden files left out
    found, skipped = scan(files)
    assert skipped == []
    assert len(found) == len(placed)
    for item, (name, _, text) in zip(found, placed, strict=True):
        assert Path(item.file).name == name
        line = Path(item.file).read_text().split("\n")[item.line - 1]
        assert line.strip() and line in text.split("\n")  # its header, or its message when it has none


def test_each_traceback_gets_the_cause_fixer_explain_gives_its_text(logs, log_matcher):
    root, placed = logs
    for item, (_, _, text) in zip(scan(expand([str(root)]))[0], placed, strict=True):
        expected = log_matcher.explain(text).matches
        assert item.cause == (expected[0].id if expected else None)


def test_several_processes_find_what_one_finds(logs):
    files = expand([str(logs[0])])
    assert scan(files, workers=3) == scan(files, workers=1)


def test_the_same_failure_in_two_jobs_shares_a_fingerprint_and_another_does_not():
    frame = '  File "/home/{user}/proj/train.py", line {n}, in {fn}\n    out = model(x)\n'
    message = (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, {d} and cpu!\n"
    )

    def printed(user: str, n: int, fn: str, device: str) -> str:
        return (
            "Traceback (most recent call last):\n"
            + frame.format(user=user, n=n, fn=fn)
            + message.format(d=device)
            + "\n"
        )

    first = parse(printed("alice", 12, "train", "cuda:0"))
    same = parse(printed("bob", 40, "train", "cuda:3"))
    other = parse(printed("alice", 12, "evaluate", "cuda:0"))
    assert first and same and other
    assert fingerprint(first) == fingerprint(same) != fingerprint(other)


def test_blocks_keep_chains_together_and_ranks_apart():
    chained = (
        'Traceback (most recent call last):\n  File "a.py", line 1, in f\nKeyError: 1\n\n'
        "The above exception was the direct cause of the following exception:\n\n"
        'Traceback (most recent call last):\n  File "a.py", line 2, in g\nRuntimeError: boom\n'
    )
    ranks = (
        "".join(f"[rank{r}]: Traceback (most recent call last):\n" for r in (0, 1))
        + "[rank0]: RuntimeError: one\n[rank1]: RuntimeError: two\n"
    )
    blocks = textio.TracebackBlocks()
    blocks.feed("noise\n" + chained + ranks)
    found = blocks.finish()
    assert [b.line for b in found] == [2, 11, 12]
    assert "KeyError: 1" in found[0].text and "RuntimeError: boom" in found[0].text
    assert "one" in found[1].text and "two" not in found[1].text


def test_a_message_logged_without_its_traceback_is_found(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(NOISE + "ERROR trainer: Torch not compiled with CUDA enabled\n" + NOISE)
    [item] = scan_file(str(log)).found
    assert item.cause == "torch-not-compiled-with-cuda" and item.line == 501


@pytest.mark.parametrize("form", ["--json", "--csv"])
def test_machine_output_lists_every_traceback(form, logs, capsys):
    root, placed = logs
    assert main(["scan", form, "--workers", "2", str(root)]) == OK
    out = capsys.readouterr().out
    if form == "--json":
        document = json.loads(out)
        assert document["tracebacks"] == len(placed) == len(document["found"])
        assert sum(group["tracebacks"] for group in document["groups"]) == len(placed)
        assert sum(cause["tracebacks"] for cause in document["causes"]) == len(placed)
    else:
        rows = list(csv.DictReader(io.StringIO(out)))
        assert len(rows) == len(placed) and {"file", "line", "cause", "fingerprint"} <= set(rows[0])


def test_the_table_says_how_many_and_groups_them(logs, capsys):
    root, placed = logs
    assert main(["scan", "--color", "never", str(root)]) == OK
    out = capsys.readouterr().out
    assert out.startswith(f"{len(placed)} traceback(s) in 12 file(s)\n")
    assert "By cause" in out and "By fingerprint" in out
    assert not [line for line in out.splitlines() if line != line.rstrip()]


def test_logs_without_a_traceback_exit_3_and_a_missing_path_exits_2(tmp_path, capsys):
    (tmp_path / "ok.log").write_text(NOISE)
    assert main(["scan", str(tmp_path)]) == NO_TRACEBACK
    assert main(["scan", str(tmp_path / "gone")]) == USAGE
    assert capsys.readouterr().err.endswith(f"fixer: {tmp_path / 'gone'}: no such file\n")


def test_a_dask_cluster_finds_what_this_machine_finds(logs, capsys):
    distributed = pytest.importorskip("distributed")
    root = str(logs[0])
    assert main(["scan", "--json", "--workers", "1", root]) == OK
    here = json.loads(capsys.readouterr().out)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        assert main(["scan", "--json", "--dask", cluster.scheduler_address, root]) == OK
    there = json.loads(capsys.readouterr().out)
    assert there == here


@pytest.mark.parametrize(("entry", "number"), [("accelerate-offloaded-model-moved", 2), ("default-cuda-vs-cuda-n", 4)])
def test_a_message_printed_just_above_its_traceback_makes_one_finding(entry, number, catalog, tmp_path):
    """accelerate warns in its own words right before raising; a logger may print the message first."""
    text = catalog.get(entry).examples[number - 1].traceback
    log = tmp_path / "job.log"
    log.write_text(NOISE + text.rstrip("\n") + "\n" + NOISE)
    [item] = scan_file(str(log)).found
    assert item.cause == entry


@pytest.mark.parametrize("compress", ["gzip", "bz2", "lzma"])
def test_rotated_compressed_logs_are_read_like_plain_ones(compress, logs):
    import importlib

    root, _ = logs
    plain = root / "jobs" / "job03.log"
    packed = root / f"rotated.{compress}" / "job03.log.1.z"
    packed.parent.mkdir(exist_ok=True)
    packed.write_bytes(importlib.import_module(compress).compress(plain.read_bytes()))
    found, skipped = scan([str(packed)])
    assert skipped == [] and len(found) == 3
    assert [(f.line, f.cause, f.fingerprint) for f in found] == [
        (f.line, f.cause, f.fingerprint) for f in scan_file(str(plain)).found
    ]


def test_a_damaged_compressed_log_is_skipped_with_the_reason(tmp_path, capsys):
    (tmp_path / "bad.log.gz").write_bytes(b"\x1f\x8b" + b"not really gzip" * 20)
    (tmp_path / "good.log").write_text(HEADED[0][1])
    assert main(["scan", "--csv", str(tmp_path)]) == OK
    captured = capsys.readouterr()
    assert captured.err.startswith(f"fixer: skipped {tmp_path / 'bad.log.gz'}: the gzip data is damaged")
    assert captured.err.count("\n") == 1
    assert len(list(csv.DictReader(io.StringIO(captured.out)))) == 1


def test_scan_on_dask_without_the_fleet_extra_names_the_install(monkeypatch, tmp_path, capsys):
    (tmp_path / "job.log").write_text(HEADED[0][1])
    for module in ("dask", "dask.bag", "distributed"):
        monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    monkeypatch.delitem(sys.modules, "fixer.fleet.dask", raising=False)  # imported afresh, as in a new process
    assert main(["scan", "--dask", "tcp://127.0.0.1:8786", str(tmp_path)]) == USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'dask[distributed]>=2024.1'" in err and "internal error" not in err


def test_a_log_directory_with_pipes_devices_sockets_binaries_and_loops_is_scanned_without_hanging(tmp_path):
    """Container log layouts link logs to devices and leave FIFOs and sockets beside them: each is
    skipped with its own line, the real log is scanned, and nothing blocks."""
    import socket
    import subprocess
    import sys

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "job.log").write_text(NOISE + HEADED[0][1])
    os.mkfifo(logs / "stdout.fifo")
    (logs / "x.log").symlink_to("/dev/zero")
    (logs / "loop.log").symlink_to(logs / "loop.log")
    (logs / "core.bin").write_bytes(bytes(range(256)) * 64)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(logs / "agent.sock"))
    done = subprocess.run(
        [sys.executable, "-m", "fixer", "scan", "--json", str(logs)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == OK, done.stderr
    assert json.loads(done.stdout)["tracebacks"] == 1
    skipped = sorted(line for line in done.stderr.splitlines() if line.startswith("fixer: skipped "))
    assert len(skipped) == 5 == len(done.stderr.splitlines()), done.stderr
    for name, reason in [
        ("agent.sock", "is a socket"),
        ("core.bin", "looks binary"),
        ("loop.log", "a loop of symbolic links"),
        ("stdout.fifo", "is a named pipe"),
        ("x.log", "is a device"),
    ]:
        assert any(name in line and reason in line for line in skipped), (name, skipped)
