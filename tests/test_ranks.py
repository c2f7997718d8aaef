"""`fixer run` under torchrun: the combined report, and real 2-process gloo jobs on CPU (`meta` stands in
for the GPU). Each job has a hard timeout: a gather that hangs fails the test instead of the suite."""

from __future__ import annotations

import io
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from subprocess import PIPE

import pytest
from rich.console import Console, RenderableType
from rich.text import Text

from fixer.diagnose.findings import Finding
from fixer.ranks import RankReport, combine, launched, local_report, prefixed, timeout
from fixer.runner import Culprit, Outcome

CULPRIT = "`out_head` (Linear): weight on cpu; bias on cpu; input 0 on meta; the rest of the model on meta"


def _failed(rank: int, cause: str | None = "submodule-replaced-after-to", device: str = "meta") -> RankReport:
    culprit = CULPRIT.replace("meta", device)
    return RankReport(rank, rank, 4, device, device, 1, "out_head", culprit, cause, f"Traceback {rank}")


def _ok(rank: int) -> RankReport:
    return RankReport(rank, rank, 4, "meta", None, 0)


def _shown(reports: list[RankReport]) -> tuple[str, list[int]]:
    explained: list[int] = []

    def explain(report: RankReport) -> RenderableType:
        explained.append(report.rank)
        return Text(f"EXPLANATION of {report.cause}")

    shown = io.StringIO()
    Console(file=shown, width=120, color_system=None).print(combine(reports, explain))
    return shown.getvalue(), explained


def test_ranks_that_agree_get_one_row_each_and_one_explanation():
    text, explained = _shown([_failed(2), _failed(0), _failed(1), _failed(3)])
    assert text.startswith("fixer: 4 of 4 ranks failed\n")
    rows = re.findall(r"^(\d)\s+\d\s+meta\s+meta\s+failed\s+out_head\s+submodule-replaced-after-to\s*$", text, re.M)
    assert rows == ["0", "1", "2", "3"]
    assert explained == [0] and text.count("EXPLANATION") == 1
    assert "ranks 0–3: submodule-replaced-after-to" in text
    assert text.count("the failing module on ranks 0–3 was `out_head`") == 1


def test_each_distinct_cause_is_explained_once_and_each_rank_keeps_its_own_devices():
    reports = [_failed(0, device="cuda:0"), _failed(1, device="cuda:1"), _failed(2, "model-not-moved"), _ok(3)]
    text, explained = _shown(reports)
    assert text.startswith("fixer: 3 of 4 ranks failed\n")
    assert explained == [0, 2]
    assert "ranks 0, 1: submodule-replaced-after-to" in text and "rank 2: model-not-moved" in text
    assert "the failing module on rank 0 was `out_head` (Linear): weight on cpu; bias on cpu; input 0 on cuda:0" in text
    assert "the failing module on rank 1 was" in text
    assert re.search(r"^3\s+3\s+meta\s+\?\s+ok\s*$", text, re.M)


def test_a_failure_no_entry_matches_is_listed_but_not_explained_by_a_wrong_entry():
    text, explained = _shown([_failed(0, cause=None), _ok(1), _ok(2), _ok(3)])
    assert "rank 0: no KB entry matches" in text and "no KB match" in text
    assert explained == [0]


def test_one_ranks_own_report_says_which_rank_of_how_many():
    text, _ = _shown([_failed(1)])
    assert text.startswith("fixer: rank 1 of 4\n")
    assert prefixed("a\n\nb\n", 1) == "[rank 1] a\n[rank 1] \n[rank 1] b\n"


def test_the_local_report_reads_the_rank_and_the_models_device_and_drops_unpicklable_facts():
    root = Culprit("<model>", "Linear", {"weight": "meta", "bias": "meta"}, {"input 0": "cpu"}, None)
    finding = Finding("module-devices", "confirms", "why", ("inputs-not-moved",), {"module": object()})
    outcome = Outcome(1, "Traceback", root, (finding,))
    report = local_report(outcome, "inputs-not-moved", {"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4"})
    assert (report.rank, report.local_rank, report.world_size) == (3, 1, 4)
    assert report.model_device == "meta" and report.device == "meta"  # no CUDA here: the model's device
    assert report.module == "<model>" and report.culprit == root.describe() and report.status == "failed"
    assert report.findings == (Finding("module-devices", "confirms", "why", ("inputs-not-moved",)),)
    assert local_report(Outcome(0), None, {}).status == "ok"


def test_the_rank_path_is_taken_under_a_launcher_only():
    assert launched({"RANK": "0", "WORLD_SIZE": "1"}) and launched({"WORLD_SIZE": "2"})
    assert not launched({}) and not launched({"WORLD_SIZE": "1"})
    assert timeout({}).total_seconds() == 15 and timeout({"FIXER_RANK_TIMEOUT": "2.5"}).total_seconds() == 2.5
    with pytest.raises(ValueError):
        timeout({"FIXER_RANK_TIMEOUT": "0"})


# --- real jobs: torchrun, 2 processes, gloo, loopback only ---------------------------------------

HEAD_REPLACED_ON = """\
import torch
import torch.distributed as dist

{before}
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 4)
        self.out_head = torch.nn.Linear(4, 10)

    def forward(self, x):
        return self.out_head(self.body(x))

model = Net().to("meta")
if {ranks}:
    model.out_head = torch.nn.Linear(4, 2)
model(torch.randn(3, 4, device="meta"))
{after}
"""
INIT = 'dist.init_process_group("gloo")'


def _torchrun(tmp_path: Path, source: str, *launcher: str, wait: str = "20") -> subprocess.CompletedProcess:
    script = tmp_path / "train.py"
    script.write_text(source)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--rdzv-backend", "c10d",
               "--rdzv-endpoint", f"127.0.0.1:{port}", "--local-addr", "127.0.0.1", *launcher,
               "-m", "fixer", "run", str(script)]  # fmt: skip
    env = {**os.environ, "FIXER_RANK_TIMEOUT": wait, "OMP_NUM_THREADS": "1", "COLUMNS": "120"}
    with subprocess.Popen(command, stdout=PIPE, stderr=PIPE, text=True, env=env, start_new_session=True) as job:
        try:
            stdout, stderr = job.communicate(timeout=90)
        except subprocess.TimeoutExpired:  # kill the workers too, not only torchrun: a hung rank must not outlive us
            os.killpg(job.pid, signal.SIGKILL)
            raise
    return subprocess.CompletedProcess(command, job.returncode, stdout, stderr)


def _rows(output: str) -> list[str]:
    return re.findall(r"^(\d)\s+\d\s+meta\s+meta\s+failed\s+out_head\s+", output, re.M)


def test_when_every_rank_fails_rank_0_prints_one_table_and_one_explanation(tmp_path):
    source = HEAD_REPLACED_ON.format(before=INIT, ranks="True", after="")
    done = _torchrun(tmp_path, source, "--local-ranks-filter", "0")  # rank 0's output only
    assert done.returncode != 0
    report = done.stderr[done.stderr.index("fixer: 2 of 2 ranks failed") :]
    assert _rows(report) == ["0", "1"]
    assert "ranks 0, 1: submodule-replaced-after-to" in report
    assert report.count("Most likely cause") == 1 and report.count("More: fixer show") == 1
    assert "[rank" not in report


def test_when_one_rank_fails_and_the_other_finishes_rank_0_still_reports_both(tmp_path):
    source = HEAD_REPLACED_ON.format(before=INIT, ranks="dist.get_rank() == 1", after="")
    done = _torchrun(tmp_path, source, "--local-ranks-filter", "0")
    assert done.returncode != 0
    report = done.stderr[done.stderr.index("fixer: 1 of 2 ranks failed") :]
    assert re.search(r"^0\s+0\s+cpu\s+\?\s+ok\s*$", report, re.M)  # no failure, no culprit: the default device
    assert _rows(report) == ["1"]
    assert "rank 1: submodule-replaced-after-to" in report and report.count("Most likely cause") == 1


def test_a_rank_whose_peer_is_stuck_in_a_collective_reports_alone_after_the_timeout(tmp_path):
    after = "dist.all_reduce(torch.ones(1))  # rank 0 waits here for rank 1, which never comes"
    source = HEAD_REPLACED_ON.format(before=INIT, ranks="dist.get_rank() == 1", after=after)
    done = _torchrun(tmp_path, source, wait="2")
    assert done.returncode != 0
    assert "[rank 1] fixer: no answer from the other ranks within 2 s" in done.stderr
    assert "[rank 1] rank 1: submodule-replaced-after-to" in done.stderr
    assert "ranks failed" not in done.stderr


def test_a_script_that_fails_before_init_process_group_gets_per_rank_reports(tmp_path):
    source = HEAD_REPLACED_ON.format(before="", ranks="True", after=INIT)
    done = _torchrun(tmp_path, source)
    assert done.returncode != 0
    # torchrun stops the job when the first rank exits, so the other rank may be cut off before it reports
    rank = re.search(r"^\[rank (\d)\] fixer: no process group when the script ended", done.stderr, re.M)
    assert rank is not None
    assert f"[rank {rank[1]}] rank {rank[1]}: submodule-replaced-after-to" in done.stderr
    assert "ranks failed" not in done.stderr
