"""The checkpoint probe on real torch.save files written as a GPU machine writes them."""

from __future__ import annotations

import contextlib
import os
import pickle
import zipfile
from pathlib import Path

import pytest
import torch

from fixer.diagnose.checkpoint import CheckpointError, checkpoint_findings, read_locations

NO_GPU = {"torch": "2.13.0", "cuda_available": False, "device_count": 0}
ONE_GPU = {"torch": "2.13.0", "cuda_available": True, "device_count": 1}


@contextlib.contextmanager
def saved_on(devices: dict[int, str]):
    """torch.save records each storage's device via location_tag: report GPU devices by tensor size."""
    real = torch.serialization.location_tag

    def tag(storage):
        return devices.get(storage.nbytes(), real(storage))

    torch.serialization.location_tag = tag
    try:
        yield
    finally:
        torch.serialization.location_tag = real


def _resume_checkpoint(path: Path, model_device: str, state_device: str) -> Path:
    model = {"encoder.weight": torch.zeros(4, 4), "head.bias": torch.zeros(4)}  # 64 and 16 bytes
    state = {0: {"exp_avg": torch.zeros(3), "exp_avg_sq": torch.zeros(3)}}  # 12 bytes each
    with saved_on({64: model_device, 16: model_device, 12: state_device}):
        torch.save({"model": model, "optimizer": {"state": state, "param_groups": []}, "epoch": 7}, path)
    return path


def _verdicts(findings):
    return {(f.verdict, e) for f in findings for e in f.entries}


def test_saved_devices_are_read_per_group_without_loading(tmp_path):
    path = _resume_checkpoint(tmp_path / "last.pt", "cuda:0", "cpu")
    assert read_locations(path) == {"model": {"cuda:0": 2}, "optimizer.state": {"cpu": 2}}


def test_a_real_state_dict_checkpoint_is_read(tmp_path):
    """state_dict() is an OrderedDict with a `_metadata` attribute: the reader must take it as it is."""
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.randn(4, 3)).sum().backward()
    optimizer.step()
    path = tmp_path / "last.pt"
    with saved_on({36: "cuda:0", 12: "cuda:0", 8: "cuda:0"}):  # all but the 4-byte step counters, as on a GPU
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
    groups = read_locations(path)
    assert groups["model"] == {"cuda:0": 7}  # 4 parameters, 2 running statistics, num_batches_tracked
    assert groups["optimizer.state"] == {"cuda:0": 4 * 2}  # exp_avg and exp_avg_sq of each parameter
    assert groups["optimizer.state.step"] == {"cpu": 4}  # AdamW keeps its step counters on the CPU
    healthy = checkpoint_findings(path, ONE_GPU)
    assert ("confirms", "optimizer-state-after-resume") not in _verdicts(healthy)


def test_a_gpu_checkpoint_on_a_machine_without_cuda_confirms_missing_map_location(tmp_path):
    findings = checkpoint_findings(_resume_checkpoint(tmp_path / "a.pt", "cuda:0", "cuda:0"), NO_GPU)
    assert ("confirms", "torch-load-without-map-location") in _verdicts(findings)


def test_an_ordinal_this_machine_lacks_confirms_missing_ordinal(tmp_path):
    findings = checkpoint_findings(_resume_checkpoint(tmp_path / "b.pt", "cuda:1", "cuda:1"), ONE_GPU)
    assert ("confirms", "torch-load-missing-ordinal") in _verdicts(findings)
    assert ("confirms", "torch-load-without-map-location") not in _verdicts(findings)


def test_optimizer_state_saved_apart_from_the_model_confirms_the_resume_cause(tmp_path):
    findings = checkpoint_findings(_resume_checkpoint(tmp_path / "c.pt", "cuda:0", "cpu"), ONE_GPU)
    assert ("confirms", "optimizer-state-after-resume") in _verdicts(findings)


def test_a_cpu_checkpoint_rules_out_map_location(tmp_path):
    path = tmp_path / "cpu.pt"
    torch.save({"model": {"w": torch.zeros(2)}}, path)
    assert ("rules-out", "torch-load-without-map-location") in _verdicts(checkpoint_findings(path, NO_GPU))


class _Payload:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


def test_reading_never_runs_code_from_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "evil.pt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("evil/data.pkl", pickle.dumps({"model": _Payload()}))
    assert read_locations(path) == {}
    assert not (tmp_path / "pwned").exists()


def test_files_that_are_not_checkpoints_could_not_be_checked(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(CheckpointError, match="not a zip archive"):
        read_locations(text)
    (finding,) = checkpoint_findings(text, NO_GPU)
    assert finding.verdict == "could-not-check"


def test_state_dicts_nested_in_a_trainer_are_found_by_their_shape(tmp_path):
    """The layout of VAR-style trainers: weights and optimizer state two levels down, beside config."""
    weights = {"blocks.0.attn.weight": torch.zeros(4, 4), "head.bias": torch.zeros(4)}  # 64 and 16 bytes
    vae = {"decoder.weight": torch.zeros(2, 2)}  # 16 bytes
    state = {0: {"exp_avg": torch.zeros(3), "exp_avg_sq": torch.zeros(3), "step": torch.tensor(5.0)}}
    trainer = {
        "var_wo_ddp": weights,
        "vae_local": vae,
        "var_opt": {"optim": {"state": state, "param_groups": [{"lr": 1e-4, "fused": True}]}, "scale": 1.0},
    }
    path = tmp_path / "ar-ckpt-last.pth"
    with saved_on({64: "cuda:0", 16: "cuda:0", 12: "cpu", 4: "cpu"}):
        torch.save({"epoch": 3, "trainer": trainer, "args": {"tblr": 1e-4}}, path)
    assert read_locations(path) == {
        "trainer.var_wo_ddp": {"cuda:0": 2},
        "trainer.vae_local": {"cuda:0": 1},
        "trainer.var_opt.optim.state": {"cpu": 2},
        "trainer.var_opt.optim.state.step": {"cpu": 1},
    }
    findings = checkpoint_findings(path, ONE_GPU)
    assert ("confirms", "optimizer-state-after-resume") in _verdicts(findings)
