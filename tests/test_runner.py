"""`fixer run` on real scripts; `meta` tensors, or FakeTensorMode's "cuda:0", stand in for the GPU."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

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
        "module-plain-tensor-attributes: `<model>` keeps `scale` on cpu as a plain attribute, which .to() skips; "
        "the rest is on cuda:0",
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


DEVICE_ERROR = (
    'raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices,'
    ' cuda:0 and cpu!")\n'
)
PRINTING_HOOK = "import sys\nsys.excepthook = lambda t, v, tb: print('HOOK', t.__name__, file=sys.stderr)\n"

# Scripts whose stdout, stderr and exit status under `fixer run` must be those of `python script.py`.
AS_PYTHON_DOES = {
    "exit-message": "import sys\nprint('out')\nsys.exit('bad config: lr must be positive')\n",
    "exit-none": "import sys\nsys.exit(None)\n",
    "exit-int": "import sys\nsys.exit(3)\n",
    "exit-true": "import sys\nsys.exit(True)\n",
    "exit-negative": "import sys\nsys.exit(-1)\n",
    "exit-overflow": "import sys\nsys.exit(2**70)\n",
    "exit-object": "class Reason:\n    def __str__(self):\n        return 'disk full'\n\nraise SystemExit(Reason())\n",
    "exit-two-args": "raise SystemExit(1, 2)\n",
    "exit-unprintable": "class Bad:\n    def __str__(self):\n        raise ValueError\n\nraise SystemExit(Bad())\n",
    "error": "print('out')\nraise ValueError('boom')\n",
    "keyboard-interrupt": "import atexit\natexit.register(print, 'saved')\nraise KeyboardInterrupt\n",
    "hook": PRINTING_HOOK + "raise ValueError('x')\n",
    "hook-fails": "import sys\ndef hook(*a):\n    raise TypeError('bad')\nsys.excepthook = hook\nraise ValueError(1)\n",
    "hook-none": "import sys\nsys.excepthook = None\nraise ValueError(1)\n",
    "hook-exits": "import sys\nsys.excepthook = lambda *a: sys.exit(5)\nraise ValueError(1)\n",
    "hook-then-device-error": PRINTING_HOOK + DEVICE_ERROR,
}


def _both(script: Path) -> tuple[subprocess.Popen, subprocess.Popen]:
    """The script under `python` and under `fixer run`, started at once, with SIGINT's default
    disposition: a shell's background job inherits it ignored, and python then never sees Ctrl-C."""
    return tuple(  # type: ignore[return-value]
        subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        for command in ([sys.executable, str(script)], [sys.executable, "-m", "fixer", "run", str(script)])
    )


@pytest.fixture(scope="module")
def as_python(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[tuple[int, str, str], tuple[int, str, str]]]:
    """Each script's (exit status, stdout, stderr) under python and under fixer run."""
    started = {}
    for name, source in AS_PYTHON_DOES.items():
        script = tmp_path_factory.mktemp(name) / "train.py"
        script.write_text(source)
        started[name] = _both(script)
    return {name: tuple(_ended(p) for p in processes) for name, processes in started.items()}  # type: ignore[misc]


def _ended(process: subprocess.Popen) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


@pytest.mark.parametrize("case", [c for c in AS_PYTHON_DOES if c != "hook-then-device-error"])
def test_exit_status_and_messages_are_those_of_python(as_python, case: str) -> None:
    python, fixer = as_python[case]
    assert fixer == python


def test_a_custom_excepthook_runs_and_the_explanation_follows(as_python) -> None:
    (python_code, python_out, python_err), (code, out, err) = as_python["hook-then-device-error"]
    assert (code, out) == (python_code, python_out) == (1, "")
    assert err.startswith(python_err) and python_err == "HOOK RuntimeError\n"
    assert "Traceback" not in err and "Most likely cause" in err


def test_ctrl_c_ends_the_run_as_it_ends_python(tmp_path: Path) -> None:
    """SIGINT kills python after its traceback; a shell loop stops only for a child that died of it."""
    script = tmp_path / "train.py"
    script.write_text("import time\nprint('ready', flush=True)\ntime.sleep(60)\n")
    results = []
    for process in _both(script):
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
        results.append((process.returncode, err))
    (python_code, python_err), (code, err) = results
    assert code == python_code == -signal.SIGINT
    for said in (python_err, err):  # the line SIGINT lands on may differ: the frames are the script's alone
        assert said.startswith("Traceback (most recent call last):\n") and said.endswith("\nKeyboardInterrupt\n")
        assert said.count('  File "') == 1 and f'File "{script}"' in said


HUGE_MESSAGE = 'raise RuntimeError("Expected all tensors to be on the same device" + "x" * 10_000_000)\n'

# Runs a command and prints its seconds and peak RSS (KiB): the wrapper's only child is the command.
_MEASURED = """\
import resource, subprocess, sys, time
start = time.monotonic()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=open(sys.argv[-1] + ".err", "w"), check=False)
print(time.monotonic() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def test_a_huge_message_is_shown_whole_and_explained_in_bounded_time_and_memory(tmp_path: Path) -> None:
    """Against the same run with a short message, started at once: torch's import dominates both."""
    started = []
    for name, source in (("huge.py", HUGE_MESSAGE), ("short.py", DEVICE_ERROR)):
        script = tmp_path / name
        script.write_text(source)
        command = [sys.executable, "-c", _MEASURED, sys.executable, "-m", "fixer", "run", str(script)]
        started.append(subprocess.Popen(command, stdout=subprocess.PIPE, text=True))
    (huge_s, huge_kib), (short_s, short_kib) = (map(float, p.communicate(timeout=300)[0].split()) for p in started)
    assert huge_s < short_s + 10
    assert huge_kib - short_kib < 150 * 1024  # the message is 10 MB; before the bound, 360 MB more
    shown = (tmp_path / "huge.py.err").read_text()
    assert shown.count("x" * 10_000_000) == 1 and "Most likely cause" in shown


def test_the_explainer_gets_the_start_of_each_line_and_a_bounded_number_of_lines(tmp_path: Path) -> None:
    from fixer import textio

    script = tmp_path / "train.py"
    script.write_text(
        'raise RuntimeError("Expected all tensors to be on the same device" + "x" * 1_000_000 + "\\nline" * 100_000)\n'
    )
    text = run(str(script), []).text
    assert text is not None and "RuntimeError: Expected all tensors to be on the same device" in text
    lines = text.splitlines()
    assert max(map(len, lines)) <= textio.MAX_LINE_CHARS and len(lines) <= 2 * textio.TAIL_LINES


# What accelerate's AlignDevicesHook exposes and the check reads: its execution device. The stand-in
# has no accelerate behind it, so it moves nothing, as a hook that something else overrules.
HOOKED_WEIGHTS_MOVED = """\
import torch

class AlignDevicesHook:
    execution_device = torch.device("meta")

layer = torch.nn.Linear(4, 4)  # a trainer put the weights back on the CPU behind the hook
layer._hf_hook = AlignDevicesHook()
layer(torch.randn(3, 4, device="meta"))
"""


def test_an_accelerate_hook_is_compared_with_its_modules_weights(tmp_path: Path) -> None:
    script = tmp_path / "serve.py"
    script.write_text(HOOKED_WEIGHTS_MOVED)
    outcome = run(str(script), [])
    assert outcome.culprit is not None and outcome.culprit.hook_device == "meta"
    (finding,) = [f for f in outcome.findings if f.probe == "accelerate-hooks" and f.verdict == "confirms"]
    assert finding.entries == ("accelerate-hooks-conflict",)
    assert "runs `<model>` on meta, but its weights are on cpu" in finding.summary


# A model dispatched as accelerate dispatches it, a hook per layer running it on the CPU with its weights
# there (no offload), then moved whole by the script, to meta standing in for another device; the
# input is where the first hook would have moved it.
DISPATCHED_THEN_MOVED = """\
import torch

class AlignDevicesHook:
    execution_device = torch.device("cpu")
    offload = False

model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
for layer in model:
    layer._hf_hook = AlignDevicesHook()
model.to("meta")  # moved after dispatch
model(torch.randn(3, 4))
"""
# An exported program traced on the CPU (its arange keeps device=cpu), moved to the stand-in with .to().
EXPORTED_THEN_MOVED = (
    Path(__file__).parent / "patching" / "fixtures" / "exported-program-move-to-device-pass"
    / "loaded_program_moved_with_to.in.py"
).read_text()  # fmt: skip


@pytest.mark.parametrize(
    ("source", "cause", "compared"),
    [
        (DISPATCHED_THEN_MOVED, "accelerate-hooks-conflict", "runs `0` on cpu, but its weights are on meta"),
        (EXPORTED_THEN_MOVED, "exported-program-hardcoded-device", "passes cpu at arange as device arguments"),
    ],
    ids=["accelerate-moved-after-dispatch", "exported-program-moved"],
)
def test_fixer_run_ranks_by_the_devices_it_compared(tmp_path: Path, source: str, cause: str, compared: str) -> None:
    from conftest import first_causes

    script = tmp_path / "serve.py"
    script.write_text(source)
    done = subprocess.run(
        [sys.executable, "-m", "fixer", "run", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "300", "NO_COLOR": "1"},
        check=False,
    )
    assert first_causes(done.stderr)[:1] == [cause], done.stderr[-3000:]
    why = done.stderr[done.stderr.index("Why fixer thinks so") :].split("\n\n", 1)[0]
    assert any(compared in line and line.endswith("(+70)") for line in why.splitlines()), why
    others = done.stderr[done.stderr.index("Other candidates") :].splitlines()[2:3]
    assert others and int(others[0].split()[0]) < 70, others  # no tie with a cause nothing compared


def test_hooks_whose_weights_sit_on_their_devices_rule_the_conflict_out() -> None:
    from fixer.diagnose.objects import library_state

    class AlignDevicesHook:
        execution_device = torch.device("cpu")

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
    for layer in model:
        layer._hf_hook = AlignDevicesHook()
    (finding,) = library_state(model)
    assert (finding.verdict, finding.entries) == ("rules-out", ("accelerate-hooks-conflict",))
    model[1].to("meta")
    (moved,) = library_state(model)
    assert moved.verdict == "confirms" and "`1` runs on cpu, weights on meta" in moved.summary
    model[1]._hf_hook = type("AlignDevicesHook", (), {"execution_device": torch.device("cpu"), "offload": True})()
    offloaded = library_state(model)  # an offloading hook's weights wait on meta: not a conflict
    assert [f.verdict for f in offloaded] == ["rules-out"]
