"""Object probes on real situations, with `meta` standing in for the GPU: each probe confirms the
right cause and rules out a wrong one."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import fixer
from fixer.diagnose.probes import PROBES

META = torch.device("meta")  # the "accelerator"


def verdicts(findings):
    assert all(f.probe in PROBES for f in findings), [f.probe for f in findings]
    return {(f.verdict, e) for f in findings for e in f.entries}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.out_head = nn.Linear(4, 10)


def test_a_head_replaced_after_to_is_the_odd_one_out():
    model = Net().to(META)
    model.out_head = nn.Linear(4, 2)
    found = verdicts(fixer.audit(model=model))
    assert ("confirms", "submodule-replaced-after-to") in found
    assert ("rules-out", "model-not-moved") in found


def test_a_tensor_kept_as_a_plain_attribute_stays_behind():
    class Scaled(Net):
        def __init__(self):
            super().__init__()
            self.scale = torch.ones(1)

    found = verdicts(fixer.audit(model=Scaled().to(META)))
    assert ("confirms", "plain-tensor-attribute") in found
    assert ("rules-out", "plain-tensor-attribute") in verdicts(fixer.audit(model=Net().to(META)))


def test_layers_in_a_plain_list_are_reported():
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.first = nn.Linear(4, 4)
            self.blocks = [nn.Linear(4, 4) for _ in range(3)]

    found = verdicts(fixer.audit(model=Stack().to(META)))
    assert ("confirms", "submodules-in-plain-container") in found
    assert ("rules-out", "submodule-replaced-after-to") in found  # registered layers all moved


def test_optimizer_state_left_on_the_cpu_after_a_resume():
    model = Net().to(META)
    optimizer = torch.optim.AdamW(model.parameters())
    for param in model.parameters():  # what a checkpoint read with map_location="cpu" restores
        optimizer.state[param] = {"step": torch.tensor(3.0), "exp_avg": torch.zeros(param.shape)}
    assert ("confirms", "optimizer-state-after-resume") in verdicts(fixer.audit(optimizer=optimizer))
    for state in optimizer.state.values():
        state["exp_avg"] = state["exp_avg"].to(META)
    assert ("rules-out", "optimizer-state-after-resume") in verdicts(fixer.audit(optimizer=optimizer))


def test_batch_against_model_tells_inputs_from_model():
    batch = {"input_ids": torch.zeros(2, 3), "labels": torch.zeros(2)}
    assert ("confirms", "inputs-not-moved") in verdicts(fixer.audit(model=Net().to(META), batch=batch))
    meta_batch = {k: v.to(META) for k, v in batch.items()}
    assert ("confirms", "model-not-moved") in verdicts(fixer.audit(model=Net(), batch=meta_batch))
    assert ("rules-out", "inputs-not-moved") in verdicts(fixer.audit(model=Net(), batch=batch))


def test_loss_weights_built_on_the_cpu_beside_a_moved_model():
    model = Net().to(META)
    weighted = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 3.0] * 5))  # class weights from label counts
    found = fixer.audit(model=model, loss=weighted)
    assert ("confirms", "loss-weight-on-cpu") in verdicts(found)
    assert "the model is on meta but the loss (CrossEntropyLoss) keeps its weight on cpu" in [f.summary for f in found]
    positive = nn.BCEWithLogitsLoss(pos_weight=torch.ones(10))
    assert ("confirms", "loss-weight-on-cpu") in verdicts(fixer.audit(model=model, loss=positive))
    assert ("rules-out", "loss-weight-on-cpu") in verdicts(fixer.audit(model=model, loss=weighted.to(META)))
    assert ("rules-out", "loss-weight-on-cpu") in verdicts(fixer.audit(model=model, loss=nn.CrossEntropyLoss()))


DATA = TensorDataset(torch.arange(10.0))


def test_a_shuffling_loader_under_a_global_default_device(default_meta: None):
    found = fixer.audit(loader=DataLoader(DATA, shuffle=True))
    assert verdicts(found) == {("confirms", "default-device-generator")}
    assert found[0].facts["generators"] == {
        "the RandomSampler's shuffle, with the CPU torch.Generator() it makes": "cpu"
    }
    seeded = DataLoader(DATA, generator=torch.Generator())  # no shuffle, but the seed is drawn with this generator
    assert verdicts(fixer.audit(loader=seeded)) == {("confirms", "default-device-generator")}
    assert verdicts(fixer.audit(loader=DataLoader(DATA))) == {("rules-out", "default-device-generator")}


def test_a_shuffling_loader_without_a_default_device():
    assert verdicts(fixer.audit(loader=DataLoader(DATA, shuffle=True))) == {("rules-out", "default-device-generator")}


@pytest.mark.filterwarnings("ignore:FSDP is switching to use `NO_SHARD`")
def test_fsdp_parameter_offload_on_a_one_rank_cpu_group(gloo: None):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import CPUOffload, CPUOffloadPolicy, fully_shard
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    cpu = torch.device("cpu")
    offloaded = FSDP(Net(), cpu_offload=CPUOffload(offload_params=True), device_id=cpu)
    assert ("confirms", "fsdp-cpu-offload-device") in verdicts(fixer.audit(model=offloaded))
    assert ("rules-out", "fsdp-cpu-offload-device") in verdicts(fixer.audit(model=FSDP(Net(), device_id=cpu)))
    mesh = init_device_mesh("cpu", (1,))
    sharded = fully_shard(Net(), mesh=mesh, offload_policy=CPUOffloadPolicy(pin_memory=False))  # no GPU to pin for
    assert ("confirms", "fsdp-cpu-offload-device") in verdicts(fixer.audit(model=sharded))
    assert ("rules-out", "fsdp-cpu-offload-device") in verdicts(fixer.audit(model=fully_shard(Net(), mesh=mesh)))
    assert "fsdp-cpu-offload-device" not in {e for _, e in verdicts(fixer.audit(model=Net()))}


def test_install_explains_a_device_error_after_the_usual_traceback(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import fixer\n"
        "fixer.install()\n"
        "raise RuntimeError('Expected all tensors to be on the same device, but found at least two devices, "
        "cuda:0 and cpu! (when checking argument for argument state_steps in method wrapper_CUDA___fused_adamw_)')\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1
    assert done.stderr.index("Traceback (most recent call last)") < done.stderr.index("Most likely cause")
    assert "optimizer-state-after-resume" in done.stderr


KERAS_IN_DATAPARALLEL = """\
import json, os
os.environ["KERAS_BACKEND"] = "torch"
import keras
import torch
import fixer

wrapped = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
plain = torch.nn.Sequential(torch.nn.Linear(4, 2))
for model in (wrapped, plain):
    found = [f for f in fixer.audit(model=torch.nn.DataParallel(model)) if f.probe == "keras-dataparallel"]
    print(json.dumps([[f.verdict, f.summary] for f in found]))
"""


def test_a_keras_model_in_dataparallel_is_found():
    if importlib.util.find_spec("keras") is None:  # importing it here would pick a backend for the process
        pytest.skip("keras is not installed")
    done = subprocess.run(  # Keras picks its backend once per process, at import
        [sys.executable, "-c", KERAS_IN_DATAPARALLEL], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    keras_model, torch_model = (json.loads(line) for line in done.stdout.splitlines())
    assert keras_model[0][0] == "confirms" and "keras.src.models.sequential.Sequential" in keras_model[0][1]
    assert torch_model[0][0] == "rules-out"
