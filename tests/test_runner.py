"""`fixer run` on real scripts; `meta` tensors, or FakeTensorMode's "cuda:0", stand in for the GPU."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from fixer.diagnose.probes import PROBES
from fixer.runner import run

HEAD_REPLACED = """\
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 4)
        self.out_head = torch.nn.Linear(4, 10)

    def forward(self, x):
        return self.out_head(self.body(x))

model = Net().to("meta")
model.out_head = torch.nn.Linear(4, 2)
model(torch.randn(3, 4, device="meta"))
"""


PLAIN_ATTRIBUTE = """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 4)
        self.scale = torch.ones(4)  # a plain attribute, not a buffer

    def forward(self, x):
        return self.body(x) * self.scale


model = Scaled()
with FakeTensorMode(allow_non_fake_inputs=True), torch.no_grad():  # "cuda:0" stands in for the GPU
    model.to("cuda:0")
    model(torch.randn(3, 4, device="cuda:0"))
"""

LAYERS_IN_A_LIST = """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode


class Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(4, 4)
        self.blocks = [torch.nn.Linear(4, 4) for _ in range(3)]  # a plain list, not nn.ModuleList

    def forward(self, x):
        x = self.first(x)
        for block in self.blocks:
            x = block(x)
        return x


model = Stack()
with FakeTensorMode(allow_non_fake_inputs=True), torch.no_grad():  # "cuda:0" stands in for the GPU
    model.to("cuda:0")
    model(torch.randn(3, 4, device="cuda:0"))
"""

LOSS_WEIGHTS = """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

model = torch.nn.Linear(4, 3)
criterion = torch.nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 0.5]))  # class weights on the CPU
with FakeTensorMode(allow_non_fake_inputs=True), torch.no_grad():  # "cuda:0" stands in for the GPU
    model.to("cuda:0")
    inputs, labels = torch.randn(8, 4, device="cuda:0"), torch.zeros(8, dtype=torch.long, device="cuda:0")
    loss = criterion(model(inputs), labels)
"""

OPTIMIZER_RESUMED = """\
import torch

torch.__future__.set_swap_module_params_on_conversion(True)  # .to() keeps the Parameter objects, as CUDA's does

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.AdamW(model.parameters())
model(torch.randn(3, 4)).sum().backward()
optimizer.step()
checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.AdamW(model.parameters())
model.load_state_dict(checkpoint["model"])
optimizer.load_state_dict(checkpoint["optimizer"])  # the state lands with the parameters, on the CPU
model.to("meta")  # the parameters move; the optimizer state stays behind
model(torch.randn(3, 4, device="meta")).sum().backward()
optimizer.step()
"""

# script, the cause that must come first, the probe's confirming line
CASES = {
    "head-replaced": (
        HEAD_REPLACED,
        "submodule-replaced-after-to",
        "module-devices: `out_head` holds tensors on cpu while the model is on meta",
    ),
    "plain-attribute": (
        PLAIN_ATTRIBUTE,
        "plain-tensor-attribute",
        "module-plain-tensor-attributes: tensors stored as plain attributes, which .to() and DataParallel skip: "
        "scale on cpu",
    ),
    "layers-in-a-list": (
        LAYERS_IN_A_LIST,
        "submodules-in-plain-container",
        "module-unregistered-submodules: `blocks[0]` runs in the model's forward without being registered in it, "
        "and holds tensors on cpu while the model is on cuda:0",
    ),
    "optimizer-resumed": (
        OPTIMIZER_RESUMED,
        "optimizer-state-after-resume",
        "optimizer-state-devices: optimizer state apart from its parameters: param 0: exp_avg on cpu (param on meta)",
    ),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess]:
    """Every case's `fixer run`, started at once: each spends seconds importing torch."""
    started = {}
    for name, (source, _, _) in CASES.items():
        script = tmp_path_factory.mktemp(name) / "train.py"
        script.write_text(source)
        command = [sys.executable, "-m", "fixer", "run", str(script)]
        started[name] = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    done = {}
    for name, process in started.items():
        stdout, stderr = process.communicate(timeout=120)
        done[name] = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    return done


@pytest.mark.parametrize("case", CASES)
def test_the_probes_put_the_right_cause_first_and_say_why(runs: dict[str, subprocess.CompletedProcess], case: str):
    _, cause, line = CASES[case]
    done = runs[case]
    output = " ".join(done.stderr.split())
    assert done.returncode == 1, done.stderr
    first = re.search(r"Most likely cause.*?(\S+) · score", output)
    assert first and first.group(1) == cause, output
    assert line in output


@pytest.mark.parametrize(
    ("source", "confirmed", "ruled_out"),
    [
        (PLAIN_ATTRIBUTE, "plain-tensor-attribute", "submodule-replaced-after-to"),
        (LAYERS_IN_A_LIST, "submodules-in-plain-container", "plain-tensor-attribute"),
        (LOSS_WEIGHTS, "loss-weight-on-cpu", "submodules-in-plain-container"),
    ],
    ids=["plain-attribute", "layers-in-a-list", "loss-weights"],
)
def test_the_findings_confirm_one_cause_and_rule_out_another(
    tmp_path: Path, source: str, confirmed: str, ruled_out: str
) -> None:
    """In this process, where the Outcome itself can be read; the output shows only the best cause's reasons."""
    script = tmp_path / "train.py"
    script.write_text(source)
    outcome = run(str(script), [])
    assert all(f.probe in PROBES for f in outcome.findings)
    found = {(f.verdict, e) for f in outcome.findings for e in f.entries}
    assert ("confirms", confirmed) in found and ("rules-out", ruled_out) in found
    assert ("confirms", ruled_out) not in found and ("rules-out", confirmed) not in found


def _run(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess:
    script = tmp_path / "train.py"
    script.write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "fixer", "run", str(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_failing_module_and_its_devices_are_named(runs: dict[str, subprocess.CompletedProcess]):
    done = runs["head-replaced"]
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr and "runpy" not in done.stderr
    assert (
        "`out_head` (Linear): weight on cpu; bias on cpu; input 0 on meta; the rest of the model on meta"
        in " ".join(done.stderr.split())
    )
    assert "submodule-replaced-after-to" in done.stderr


def test_the_script_runs_unchanged_with_its_arguments_and_exit_code(tmp_path):
    source = "import sys\nprint('args', sys.argv[1:])\nsys.exit(int(sys.argv[2]))\n"
    done = _run(tmp_path, source, "--epochs", "3")
    assert done.stdout == "args ['--epochs', '3']\n"
    assert done.returncode == 3
    assert _run(tmp_path, "print('ok')\n").returncode == 0


def test_a_missing_script_is_a_one_line_error(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "fixer", "run", str(tmp_path / "missing.py")], capture_output=True, text=True
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1


GPU_CHECKPOINT_ON_A_CPU_MACHINE = """\
from pathlib import Path

import torch

path = Path(__file__).with_name("last.pt")
real = torch.serialization.location_tag
torch.serialization.location_tag = lambda storage: "cuda:0"  # saved as a GPU run saves it
torch.save({"weight": torch.zeros(4)}, path)
torch.serialization.location_tag = real
state = torch.load(path)
"""


def test_the_machine_probes_run_in_the_failing_process(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("the probe's verdict here is about a machine without CUDA")
    done = _run(tmp_path, GPU_CHECKPOINT_ON_A_CPU_MACHINE)
    said = " ".join(done.stderr.split())
    assert "torch.cuda.is_available() is False" in said
    assert "torch-load-without-map-location · score 100/100" in said
    assert "env-cuda: CUDA is not usable here" in said
