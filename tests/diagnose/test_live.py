"""Run-time probes on real raised errors, read while their frames are alive. `meta` tensors and
FakeTensorMode's "cuda:0" stand in for a GPU; each probe confirms the right cause and rules out a
wrong one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils.data import DataLoader, TensorDataset

from fixer.diagnose import live
from fixer.diagnose.findings import Finding
from fixer.diagnose.probes import PROBES

META = torch.device("meta")


def verdicts(findings: list[Finding]) -> set[tuple[str, str]]:
    assert all(f.probe in PROBES for f in findings), [f.probe for f in findings]
    return {(f.verdict, e) for f in findings for e in f.entries}


def raised(run: Callable[[], object]) -> Exception:
    try:
        run()
    except Exception as error:
        return error
    raise AssertionError("the script-like function was expected to raise")


# --- frame-tensor-devices --------------------------------------------------------------------------


def pick_rows(scores: torch.Tensor, picks: torch.Tensor) -> torch.Tensor:
    return scores.gather(1, picks)


def test_an_index_on_another_device_than_the_indexed_tensor():
    with FakeTensorMode():
        scores = torch.randn(4, 3, device="cuda:0")
        picks = torch.zeros(4, 1, dtype=torch.long)  # built on the CPU, as torch.zeros(...) without device= is
        error = raised(lambda: pick_rows(scores, picks))
    assert "cuda:0" in str(error) and "cpu" in str(error)  # the words differ between torch releases
    found = live.probe_frame_tensors(error)
    assert verdicts(found) == {("confirms", "index-on-other-device")}
    assert found[0].summary == "`scores.gather(1, picks)` indexes a tensor on cuda:0 with picks on cpu"


def test_an_index_on_the_same_device_rules_the_cause_out():
    scores, picks = torch.randn(4, 3), torch.zeros(4, 1)
    error = raised(lambda: pick_rows(scores, picks))  # a float index: wrong dtype, right device
    assert verdicts(live.probe_frame_tensors(error)) == {("rules-out", "index-on-other-device")}

    def take(rows: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        return rows[keep.long()]

    error = raised(lambda: take(torch.randn(3), torch.tensor([5])))  # out of range, on one device
    assert isinstance(error, IndexError)
    found = live.probe_frame_tensors(error)
    assert verdicts(found) == {("rules-out", "index-on-other-device")}
    assert "keep.long() on cpu" in found[0].summary


def to_array(probabilities: torch.Tensor) -> np.ndarray:
    return probabilities.numpy()


def test_numpy_on_a_tensor_off_the_host():
    error = raised(lambda: to_array(torch.rand(3, device=META)))
    assert "can't convert meta device type tensor to numpy" in str(error)
    found = live.probe_frame_tensors(error)
    assert verdicts(found) == {("confirms", "numpy-on-cuda-tensor")}
    assert found[0].summary == "`probabilities.numpy()` hands NumPy probabilities on meta"

    def as_array(scores: torch.Tensor) -> np.ndarray:
        return np.asarray(scores)

    error = raised(lambda: as_array(torch.rand(3, requires_grad=True)))  # on the host, but still part of the graph
    assert "requires grad" in str(error)
    assert verdicts(live.probe_frame_tensors(error)) == {("rules-out", "numpy-on-cuda-tensor")}


def test_other_failing_lines_list_their_tensors_by_name():
    class Shifted(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.shift = torch.ones(3)  # a plain attribute

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            doubled = x * 2
            return doubled + self.shift

    with FakeTensorMode(allow_non_fake_inputs=True):
        model = Shifted()
        error = raised(lambda: model(torch.randn(3, device="cuda:0")))
    found = live.probe_frame_tensors(error)
    assert [(f.verdict, f.entries) for f in found] == [("info", ())]
    assert found[0].summary.endswith(": x on cuda:0, doubled on cuda:0, self.shift on cpu")


# --- default-device ---------------------------------------------------------------------------------


def test_a_default_device_seen_in_a_traced_call_after_its_block_closed():
    def trace() -> None:
        with torch.device(META):  # exits before fixer sees the error
            make_fx(lambda x: x + torch.ones(3, device="cpu"), tracing_mode="fake")(torch.randn(3))

    error = raised(trace)
    assert torch.get_default_device().type == "cpu"
    found = live.probe_default_device(error)
    assert verdicts(found) == {("confirms", "compile-fake-tensor-device")}
    assert found[0].facts == {"default_device": "meta", "how": "active in the failing call"}


def test_a_global_default_device_and_a_generator_error(default_meta: None):
    def shuffle() -> None:  # CUDA's words for the clash; meta draws with any generator, so it cannot raise them
        raise RuntimeError("Expected a 'cuda' device type for generator but found 'cpu'")

    assert verdicts(live.probe_default_device(raised(shuffle))) == {("confirms", "default-device-generator")}
    found = live.probe_default_device(raised(lambda: torch.ones(2) @ torch.ones(3)))
    assert [(f.verdict, f.facts["default_device"]) for f in found] == [("info", "meta")]


def test_no_default_device_rules_the_generator_cause_out():
    found = live.probe_default_device(raised(lambda: torch.ones(2) @ torch.ones(3)))
    assert verdicts(found) == {("rules-out", "default-device-generator")}


# --- current-device ---------------------------------------------------------------------------------


def test_the_current_gpu_against_the_two_the_error_names():
    two = "Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cuda:0!"
    assert verdicts(live.current_device_verdict(0, two)) == {("confirms", "default-cuda-vs-cuda-n")}
    other = two.replace("cuda:0", "cuda:2")
    assert verdicts(live.current_device_verdict(0, other)) == {("rules-out", "default-cuda-vs-cuda-n")}


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the answer without CUDA")
def test_without_cuda_there_is_no_current_gpu():
    found = live.probe_current_device(raised(lambda: torch.ones(2) @ torch.ones(3)))
    assert [f.verdict for f in found] == ["could-not-check"]


# --- collective-tensor-devices ----------------------------------------------------------------------


def test_a_gloo_group_takes_cpu_tensors(gloo: None):
    def gather() -> None:
        dist.all_gather([torch.zeros(2), torch.zeros(2)], torch.zeros(2))  # one output too many for one rank

    found = live.probe_collective(raised(gather))
    assert verdicts(found) == {("rules-out", "nccl-cpu-tensors")}
    tensors = found[0].facts["tensors"]
    assert {"tensor_list[0]", "tensor_list[1]", "tensor"} <= set(tensors) and set(tensors.values()) == {"cpu"}


def test_nccl_has_no_backend_for_a_cpu_tensor():
    # CPU builds cannot start NCCL, so this checks the rule on the backends a NCCL group reports
    tensors = {"tensor": "cpu"}
    assert verdicts(live.collective_verdict({"cuda": "nccl"}, tensors)) == {("confirms", "nccl-cpu-tensors")}
    both = {"cpu": "gloo", "cuda": "nccl"}
    assert verdicts(live.collective_verdict(both, tensors)) == {("rules-out", "nccl-cpu-tensors")}
    on_gpu = live.collective_verdict({"cpu": "gloo", "cuda": "gloo"}, {"tensor": "cuda:0"})
    assert [f.verdict for f in on_gpu] == ["rules-out", "info"]


def test_no_process_group_no_collective_finding():
    assert live.probe_collective(raised(lambda: torch.ones(2) @ torch.ones(3))) == []


# --- the objects in the failing frames ---------------------------------------------------------------


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x) + torch.ones(3)  # the wrong width: raises inside the block


def train_step() -> None:
    model = nn.Sequential(nn.Linear(4, 4), Block())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = nn.CrossEntropyLoss()
    loader = DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=4, shuffle=True)
    for (batch,) in loader:
        optimizer.zero_grad()
        criterion(model(batch), torch.zeros(4, dtype=torch.long)).backward()


def test_the_model_is_the_root_not_the_failing_block():
    error = raised(train_step)
    found = live.live_objects(error)
    assert isinstance(found["model"], nn.Sequential)  # not `self`, the Block whose forward raised
    assert isinstance(found["optimizer"], torch.optim.SGD)
    assert isinstance(found["loss"], nn.CrossEntropyLoss)
    assert isinstance(found["loader"], DataLoader)
    probes = verdicts(live.probe_failure(error))
    assert ("rules-out", "loss-weight-on-cpu") in probes  # CrossEntropyLoss() holds no weights
    assert ("rules-out", "default-device-generator") in probes
    assert ("rules-out", "submodule-replaced-after-to") in probes


def test_a_loss_weight_counts_only_when_the_loss_is_in_the_failing_call():
    model = nn.Linear(4, 3).to(META)
    criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 0.5]))  # left on the CPU
    labels = torch.zeros(2, dtype=torch.long, device=META)

    def step(inputs: torch.Tensor) -> torch.Tensor:
        return criterion(model(inputs), labels)

    in_loss = [
        f
        for f in live.probe_failure(raised(lambda: step(torch.randn(2, 4, device=META))))
        if f.probe == "loss-module-devices"
    ]
    assert [f.verdict for f in in_loss] == ["confirms"]
    in_model = [
        f for f in live.probe_failure(raised(lambda: step(torch.randn(2, 4)))) if f.probe == "loss-module-devices"
    ]
    assert [f.verdict for f in in_model] == ["info"]  # the inputs were never moved; the loss has not run yet
    assert in_model[0].summary.endswith("(not in the failing call)")


def test_a_probe_that_breaks_becomes_could_not_check(monkeypatch: pytest.MonkeyPatch):
    def broken(exc: BaseException) -> list[Finding]:
        raise KeyError("odd object")

    monkeypatch.setattr(live, "_PROBES", (("default-device", broken), ("current-device", live.probe_current_device)))
    found = live.probe_failure(raised(lambda: torch.ones(2) @ torch.ones(3)))
    assert found[0] == Finding("default-device", "could-not-check", "the probe failed: KeyError: 'odd object'")
    assert [f.probe for f in found[1:]] == ["current-device"]


# --- on a real GPU --------------------------------------------------------------------------------------


@pytest.mark.cuda
def test_on_cuda_a_gpu_mask_on_a_cpu_tensor_and_numpy_on_a_gpu_tensor():
    def keep(rows: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return rows[mask]

    error = raised(lambda: keep(torch.randn(4), torch.ones(4, dtype=torch.bool, device="cuda")))
    assert "indices should be either on cpu or on the same device" in str(error)
    assert verdicts(live.probe_frame_tensors(error)) == {("confirms", "index-on-other-device")}
    error = raised(lambda: keep(torch.randn(4, device="cuda"), torch.ones(5, dtype=torch.bool)))  # CPU mask: accepted
    assert verdicts(live.probe_frame_tensors(error)) == {("rules-out", "index-on-other-device")}
    error = raised(lambda: to_array(torch.rand(3, device="cuda")))
    assert verdicts(live.probe_frame_tensors(error)) == {("confirms", "numpy-on-cuda-tensor")}
    found = live.probe_current_device(error)
    assert [(f.verdict, f.facts["current_device"]) for f in found] == [("info", torch.cuda.current_device())]


@pytest.mark.cuda
def test_on_cuda_a_global_default_device_and_a_shuffling_loader():
    torch.set_default_device("cuda")
    try:
        loader = DataLoader(TensorDataset(torch.arange(8.0)), shuffle=True)
        error = raised(lambda: next(iter(loader)))
    finally:
        torch.set_default_device(None)
    assert "generator" in str(error)
    assert verdicts(live.probe_default_device(error)) == {("confirms", "default-device-generator")}
    assert ("confirms", "default-device-generator") in verdicts(live.probe_failure(error))


@pytest.mark.cuda
def test_on_cuda_nccl_refuses_a_cpu_tensor(tmp_path: Path):
    dist.init_process_group("nccl", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        counts = torch.tensor([3.0, 4.0])  # built without device=
        error = raised(lambda: dist.all_reduce(counts))
        found = live.probe_collective(error)
    finally:
        dist.destroy_process_group()
    assert verdicts(found) == {("confirms", "nccl-cpu-tensors")}
