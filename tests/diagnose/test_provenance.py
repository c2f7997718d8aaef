"""Whose machine: this machine's state confirms or rules out a cause only for a traceback shown to be
produced here, and a probe confirms only a cause whose own mechanism it saw."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fixer.diagnose.provenance import provenance
from fixer.explain.parse import parse

ROOT = Path(__file__).resolve().parents[2]
TORCH_DIR = os.path.dirname(torch.__file__)
# https://github.com/FoundationVision/VAR/issues/127, as the reporter pasted it (from their GPU machine)
VAR_PASTE = (
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
    "(when checking argument for argument state_steps in method wrapper_CUDA___fused_adamw_)\n"
)
# https://github.com/microsoft/Cream/issues/2: the files and the torch are on the reporter's machine
CREAM_PASTE = """\
Traceback (most recent call last):
  File "tools/train.py", line 243, in <module>
    main()
  File "/opt/tiger/cream/tools/../lib/core/train.py", line 68, in train_epoch
    optimizer.step()
  File "/usr/local/lib/python3.8/site-packages/torch/optim/sgd.py", line 106, in step
    buf.mul_(momentum).add_(d_p, alpha=1 - dampening)
RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:2 and cpu!
"""


@pytest.fixture(scope="module")
def produced_here(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A real failure of a script on this machine (meta standing in for the GPU), and its folder."""
    folder = tmp_path_factory.mktemp("here")
    shutil.copy(ROOT / "tests" / "live_bugs" / "inputs_not_moved.py", folder / "train.py")
    ran = subprocess.run(
        [sys.executable, str(folder / "train.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DEVICE": "meta"},
        check=False,
    )
    assert "RuntimeError" in ran.stderr
    return folder, ran.stderr


def test_a_traceback_from_these_files_and_this_torch_was_produced_here(produced_here):
    _folder, text = produced_here
    origin = provenance(parse(text), TORCH_DIR)
    assert origin.here, origin.why


def test_a_bare_message_names_nothing_that_shows_where_it_ran():
    origin = provenance(parse(VAR_PASTE), TORCH_DIR)
    assert not origin.here and "names no file of yours" in origin.why


def test_files_that_are_not_here_are_another_machines():
    origin = provenance(parse(CREAM_PASTE), TORCH_DIR)
    assert (origin.here, origin.why) == (False, "none of the traceback's files is on this machine")


def test_another_version_of_the_file_here_is_not_the_file_that_ran(produced_here, tmp_path):
    folder, text = produced_here
    edited = tmp_path / "train.py"
    edited.write_text((folder / "train.py").read_text().replace("out = model(x)", "out = model(x.to(device))"))
    origin = provenance(parse(text.replace(str(folder / "train.py"), str(edited))), TORCH_DIR)
    assert not origin.here and "is here, but it is not the file that ran" in origin.why


def test_a_file_whose_lines_moved_since_the_run_is_not_the_file_as_it_ran(produced_here, tmp_path):
    folder, text = produced_here
    edited = tmp_path / "train.py"
    edited.write_text("# a comment added after the run\n" + (folder / "train.py").read_text())
    origin = provenance(parse(text.replace(str(folder / "train.py"), str(edited))), TORCH_DIR)
    assert not origin.here and "is here, but not as it ran (the traceback's line" in origin.why


def test_the_same_files_run_by_another_pythons_torch_are_not_this_one(produced_here):
    _folder, text = produced_here
    other = text.replace(TORCH_DIR, "/opt/conda/lib/python3.10/site-packages/torch")
    origin = provenance(parse(other), TORCH_DIR)
    assert not origin.here and "/opt/conda/lib/python3.10/site-packages/torch" in origin.why


def _diagnose(cwd: Path, *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "fixer", "diagnose", "--json", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _var_checkpoint(path: Path) -> None:
    """VAR's trainer layout, saved as on a GPU with the optimizer state left on the CPU after a resume."""
    from tests.diagnose.test_checkpoint import saved_on

    weights = {"blocks.0.attn.weight": torch.zeros(4, 4), "head.bias": torch.zeros(4)}
    state = {0: {"exp_avg": torch.zeros(3), "exp_avg_sq": torch.zeros(3), "step": torch.tensor(5.0)}}
    trainer = {"var_wo_ddp": weights, "var_opt": {"optim": {"state": state, "param_groups": [{"fused": True}]}}}
    with saved_on({64: "cuda:0", 16: "cuda:0", 12: "cpu", 4: "cpu"}):
        torch.save({"epoch": 3, "trainer": trainer}, path)


@pytest.mark.parametrize("paste", [VAR_PASTE, CREAM_PASTE], ids=["var-bare-message", "cream-files-elsewhere"])
def test_a_paste_from_another_machine_gets_no_verdict_from_this_ones_state(tmp_path, paste):
    (tmp_path / "crash.log").write_text(paste)
    checkpoint = tmp_path / "ar-ckpt-last.pth"
    _var_checkpoint(checkpoint)
    out = _diagnose(tmp_path, "--traceback", "crash.log", "--checkpoint", str(checkpoint))
    decided = [f for f in out["findings"] if f["verdict"] in ("confirms", "rules-out")]
    # what the checkpoint file shows on its own still decides; nothing that leans on this machine does
    assert [(f["probe"], f["verdict"], f["entries"]) for f in decided] == [
        ("checkpoint-devices", "confirms", ["optimizer-state-after-resume"])
    ]
    origin = out["findings"][0]
    assert (origin["probe"], origin["facts"]) == ("traceback-origin", {"produced_here": False})
    assert origin["summary"].startswith("not shown to be produced here (")
    machine = [f for f in out["findings"] if f["probe"].startswith("env-") and f["verdict"] == "info"]
    assert machine and all(f["summary"].startswith("on this machine: ") for f in machine)
    assert all("decides nothing" in f["summary"] for f in machine)


def test_a_meta_and_cpu_error_produced_here_confirms_nothing_about_cuda(produced_here):
    folder, text = produced_here
    (folder / "crash.log").write_text(text)
    out = _diagnose(folder, "--traceback", "crash.log")
    verdicts = {(e, f["verdict"]) for f in out["findings"] for e in f["entries"]}
    assert ("torch-not-compiled-with-cuda", "confirms") not in verdicts
    assert ("torch-load-without-map-location", "confirms") not in verdicts
    assert not any(f["summary"].startswith("on this machine: ") for f in out["findings"])
    assert out["findings"][0]["summary"].startswith("produced here: the traceback's files are here")
