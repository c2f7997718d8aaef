"""`fixer run script.py [args]`: run the user's script unchanged, watching which module is running.

Two global module hooks keep a stack of the modules whose forward is in progress (a push and a pop
per call, nothing else, so training speed is barely touched). When a device error escapes, the
stack still holds the modules that were running when it was raised: the innermost is the one that
failed, and its own parameters, buffers and inputs say which device is the odd one out. Then, while
the traceback still keeps the script's frames alive, the run-time probes read the failing line's
tensors, the process's device settings and the model, optimizer, loss and DataLoader those frames
hold (`fixer.diagnose.live`); all of that happens only after a failure, so the hooks stay the only cost
of a run that succeeds.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import torch
from torch import nn

from fixer.diagnose.findings import Finding
from fixer.diagnose.live import probe_failure


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

    def describe(self) -> str:
        own = "; ".join(f"{name} on {device}" for name, device in self.own.items()) or "no own tensors"
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
        return Culprit(path, type(module).__name__, own, inputs, main, registered, loss)


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
    return []


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
    text: str | None = None
    culprit: Culprit | None = None
    findings: tuple[Finding, ...] = ()


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
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        return Outcome(code)
    except BaseException as exc:  # the user's error: report it, never fixer's own traceback
        text = "".join(traceback.format_exception(type(exc), exc, _from_script(exc.__traceback__, script)))
        culprit = watch.culprit()
        found = culprit_findings(culprit) if culprit else []
        if isinstance(exc, Exception):  # not on Ctrl-C: whoever pressed it wants the run to end
            found += probe_failure(exc)
        return Outcome(1, text, culprit, _distinct(found))
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        for handle in handles:
            handle.remove()
    return Outcome(0)
