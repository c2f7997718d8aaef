"""`fixer run script.py [args]`: run the user's script unchanged, watching which module is running.

Two global module hooks keep a stack of the modules whose forward is in progress (a push and a pop
per call, nothing else, so training speed is barely touched). When a device error escapes, the
stack still holds the modules that were running when it was raised: the innermost is the one that
failed, and its own parameters, buffers and inputs say which device is the odd one out. Then, while
the traceback still keeps the script's frames alive, the run-time probes read the failing line's
tensors, the process's device settings and the model, optimizer, loss and DataLoader those frames
hold (`fixer.diagnose.live`); all of that happens only after a failure, so the hooks stay the only cost
of a run that succeeds.

The script ends as under `python script.py`: an uncaught exception goes to `sys.excepthook` (the
script's own, if it set one), SystemExit's code becomes the exit status or a message, and Ctrl-C is
reported as interrupted. The user sees the whole traceback; the explainer reads it through the bounds
fixer puts on any log, since a message of megabytes is recognised by its start.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from collections import Counter
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import torch
from torch import nn
from torch.fx import GraphModule

from fixer import textio
from fixer.diagnose.findings import Finding
from fixer.diagnose.live import probe_failure
from fixer.diagnose.objects import guarded, hook_device

INTERRUPTED = 130  # what a shell reports for a process that SIGINT ended


@dataclass(frozen=True)
class Culprit:
    """The module whose forward raised, and where its tensors and inputs were."""

    path: str
    kind: str
    own: dict[str, str]
    inputs: dict[str, str]
    model_device: str | None
    registered: bool = True  # False for a layer the model calls but keeps in a plain list or dict
    loss: bool = False
    hook_device: str | None = None  # where an accelerate hook on the module runs it, when one does
    hook_offloads: bool = False  # the hook keeps the weights on meta between calls
    plain: dict[str, str] = field(default_factory=dict)  # tensors kept as plain attributes: .to() skips them
    graph: bool = False  # a traced or exported module: its graph's own device arguments are probed apart

    def describe(self) -> str:
        held = {**self.own, **{f"plain attribute {name}": device for name, device in self.plain.items()}}
        own = "; ".join(f"{name} on {device}" for name, device in held.items()) or "no own tensors"
        inputs = "; ".join(f"{name} on {device}" for name, device in self.inputs.items()) or "no tensor inputs"
        rest = f"; the rest of the model on {self.model_device}" if self.model_device else ""
        return f"`{self.path}` ({self.kind}): {own}; {inputs}{rest}"


class _Watch:
    def __init__(self) -> None:
        self.stack: list[tuple[nn.Module, tuple[Any, ...]]] = []

    def before(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        self.stack.append((module, args))

    def after(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        while self.stack:  # also drops frames an exception caught by user code left behind
            if self.stack.pop()[0] is module:
                break

    def culprit(self) -> Culprit | None:
        if not self.stack:
            return None
        root, (module, args) = self.stack[0][0], self.stack[-1]
        path, registered = _path_in(root, module)
        own = {name: str(t.device) for name, t in (*module.named_parameters(recurse=False),
                                                   *module.named_buffers(recurse=False))}  # fmt: skip
        inputs = {f"input {i}": str(a.device) for i, a in enumerate(args) if isinstance(a, torch.Tensor)}
        counts = Counter(str(p.device) for p in root.parameters())
        main = counts.most_common(1)[0][0] if counts and module is not root else None
        loss = isinstance(module, nn.modules.loss._Loss)
        plain = {name: str(value.device) for name, value in vars(module).items() if isinstance(value, torch.Tensor)}
        hook, offloads = hook_device(module) or (None, False)
        return Culprit(
            path, type(module).__name__, own, inputs, main, registered, loss, hook, offloads, plain,
            graph=isinstance(module, GraphModule),
        )  # fmt: skip


def _path_in(root: nn.Module, module: nn.Module) -> tuple[str, bool]:
    """The module's name under the root, and whether the root registers it. A layer kept in a plain
    list or dict runs inside the model's forward without being a submodule: its container names it."""
    for name, candidate in root.named_modules():
        if candidate is module:
            return name or ("<loss>" if isinstance(module, nn.modules.loss._Loss) else "<model>"), True
    for name, owner in root.named_modules():
        for attr, value in vars(owner).items():
            items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
            for key, item in items:
                if item is module:
                    return f"{name}.{attr}[{key!r}]" if name else f"{attr}[{key!r}]", False
    return "<unregistered module>", False


def culprit_findings(culprit: Culprit) -> list[Finding]:
    """What the failing module's devices say: a loss's own weights, a layer the model never registered,
    a late-added layer, or inputs that were never moved."""
    own, inputs, model = set(culprit.own.values()), set(culprit.inputs.values()), culprit.model_device
    if culprit.hook_device is not None:
        return _hook_findings(culprit, own - {"meta"} if culprit.hook_offloads else own, inputs)
    if culprit.loss and own and inputs and own != inputs:
        kept, given = ", ".join(sorted(own)), ", ".join(sorted(inputs))
        why = f"the loss ({culprit.kind}) keeps tensors on {kept}, its inputs are on {given}"
        return [Finding("loss-module-devices", "confirms", why, ("loss-weight-on-cpu",))]
    if not culprit.registered and model and own and own != {model}:
        why = (
            f"`{culprit.path}` runs in the model's forward without being registered in it, and holds tensors on "
            f"{', '.join(sorted(own))} while the model is on {model}"
        )
        return [Finding("module-unregistered-submodules", "confirms", why, ("submodules-in-plain-container",))]
    if model and own and own != {model}:
        why = f"`{culprit.path}` holds tensors on {', '.join(sorted(own))} while the model is on {model}"
        return [Finding("module-devices", "confirms", why, ("submodule-replaced-after-to",))]
    if own and inputs and inputs != own:
        why = f"`{culprit.path}` is on {', '.join(sorted(own))} but its input on {', '.join(sorted(inputs))}"
        entry = "model-not-moved" if own == {"cpu"} else "inputs-not-moved"
        return [Finding("module-devices", "confirms", why, (entry,))]
    where = own | inputs | ({model} if model else set())
    stray = {name: device for name, device in culprit.plain.items() if device not in where}
    if stray and where:
        kept = ", ".join(f"`{name}` on {device}" for name, device in stray.items())
        kind = "a plain attribute" if len(stray) == 1 else "plain attributes"
        why = f"`{culprit.path}` keeps {kept} as {kind}, which .to() skips; the rest is on {', '.join(sorted(where))}"
        return [Finding("module-plain-tensor-attributes", "confirms", why, ("plain-tensor-attribute",))]
    if len(where) == 1 and inputs and not culprit.graph:  # a graph's tensors come from its device arguments
        why = (
            f"everything `{culprit.path}` holds or is given is on {next(iter(where))}, yet its forward met another "
            "device: a tensor it made while running"
        )
        return [Finding("module-devices", "confirms", why, ("tensor-created-without-device",))]
    return []


def _hook_findings(culprit: Culprit, own: set[str], inputs: set[str]) -> list[Finding]:
    """An accelerate hook moves the module's inputs (and offloaded weights) to its execution device
    before each call: weights or inputs found elsewhere there mean something else placed them after it."""
    hook, where = culprit.hook_device, f"accelerate's hook runs `{culprit.path}` on {culprit.hook_device}"
    if own and own != {hook}:
        why = f"{where}, but its weights are on {', '.join(sorted(own))}: something moved them behind the hook"
    elif inputs and inputs != {hook}:
        why = (
            f"{where}, yet its inputs reached it on {', '.join(sorted(inputs))}: the hook did not run or was overruled"
        )
    else:
        return []
    return [Finding("accelerate-hooks", "confirms", why, ("accelerate-hooks-conflict",))]


def _from_script(tb: TracebackType | None, script: str) -> TracebackType | None:
    """The traceback from the script's first frame on: runpy's and fixer's frames are not the user's."""
    target = os.path.abspath(script)
    current = tb
    while current is not None and os.path.abspath(current.tb_frame.f_code.co_filename) != target:
        current = current.tb_next
    return current or tb


def _distinct(findings: list[Finding]) -> tuple[Finding, ...]:
    """One finding per probe, verdict and entries: the culprit and the audit of the same model may
    both confirm a cause, and the ranking should count that evidence once (the first, the culprit's,
    names the failing module)."""
    seen: dict[tuple[str, str, tuple[str, ...]], Finding] = {}
    for finding in findings:
        seen.setdefault((finding.probe, finding.verdict, finding.entries), finding)
    return tuple(seen.values())


@dataclass(frozen=True)
class Outcome:
    """How the script ended; when it failed, what was seen while its frames were still alive."""

    code: int
    text: str | None = None  # the traceback as the explainer reads it: bounded as a log is
    culprit: Culprit | None = None
    findings: tuple[Finding, ...] = ()
    interrupted: bool = False  # Ctrl-C: python ends such a run by SIGINT, after its exit handlers


def run(script: str, args: Sequence[str]) -> Outcome:
    """Run the script as __main__, as `python script.py args` would."""
    watch = _Watch()
    handles = (
        nn.modules.module.register_module_forward_pre_hook(watch.before),
        nn.modules.module.register_module_forward_hook(watch.after),
    )
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))  # as `python script.py` does
    try:
        raised = _raised(script)
        if raised is None:
            return Outcome(0)
        if isinstance(raised, SystemExit):
            return Outcome(_exit_status(raised.code))
        return _failed(raised.with_traceback(_from_script(raised.__traceback__, script)), watch)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        for handle in handles:
            handle.remove()


def _raised(script: str) -> BaseException | None:
    """What the script raised, to be reported outside any handler, as python's top level does: the
    excepthook then runs with no exception being handled, and an error of its own has no context."""
    try:
        runpy.run_path(script, run_name="__main__")
    except BaseException as exc:  # the user's, whatever it is: reported as python reports it, never as fixer's
        return exc
    return None


def _exit_status(code: object) -> int:
    """The interpreter's reading of SystemExit's code: an int is the status as is (the OS keeps its low
    byte), None is 0, and anything else is printed, its str() failing silently, for status 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return int(code)
    with suppress(Exception):  # python too ends the line and exits 1 when the message cannot be written
        sys.stderr.write(str(code))
    sys.stderr.write("\n")
    return 1


def _failed(exc: BaseException, watch: _Watch) -> Outcome:
    """The exception reported as python reports it, then what fixer can see while the frames live."""
    tb = exc.__traceback__
    status = _reported(exc, tb)
    interrupted = status is None and isinstance(exc, KeyboardInterrupt)
    code = status if status is not None else INTERRUPTED if interrupted else 1
    text = _explainer_text(exc, tb)
    if not isinstance(exc, Exception):  # Ctrl-C, or a BaseException ending the run on purpose: nothing to explain
        return Outcome(code, text, interrupted=interrupted)
    culprit, found = _culprit_and_findings(watch)
    return Outcome(code, text, culprit, _distinct(found + probe_failure(exc)))


def _reported(exc: BaseException, tb: TracebackType | None) -> int | None:
    """`sys.excepthook`, with python's fallbacks when it fails; the exit status when the hook exits."""
    sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, tb  # what pdb.pm() in a hook reads
    try:
        sys.excepthook(type(exc), exc, tb)
    except SystemExit as leaving:
        return _exit_status(leaving.code)
    except BaseException as error:
        own = error.__traceback__  # starts in this frame, which python's report of the hook's error lacks
        sys.stderr.write("Error in sys.excepthook:\n")
        sys.__excepthook__(type(error), error, error.with_traceback(own.tb_next if own else None).__traceback__)
        sys.stderr.write("\nOriginal exception was:\n")
        sys.__excepthook__(type(exc), exc, tb)
    return None


def _explainer_text(exc: BaseException, tb: TracebackType | None) -> str:
    """The traceback fed to textio's log bounds a slice at a time, so that no copy of a huge message is
    made beyond the one formatted line, and what is kept is what `python script.py 2>&1 | fixer` keeps."""
    bounded = textio.BoundedText()
    for part in traceback.TracebackException(type(exc), exc, tb).format():
        for start in range(0, len(part), textio.MAX_LINE_CHARS):
            bounded.feed(part[start : start + textio.MAX_LINE_CHARS])
    return bounded.text()


def _culprit_and_findings(watch: _Watch) -> tuple[Culprit | None, list[Finding]]:
    """A module that breaks when inspected (a property that raises, an override) makes the culprit a
    could-not-check finding, as any probe does, rather than fixer's error."""
    culprit = None

    def inspect() -> list[Finding]:
        nonlocal culprit
        culprit = watch.culprit()
        return culprit_findings(culprit) if culprit else []

    found = guarded("module-devices", inspect)
    return culprit, found
