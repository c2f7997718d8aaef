"""Probes over a failure whose frames are still alive: `fixer run` calls them after the script raised.

A traceback keeps every frame of the failure, locals included, until it is dropped. So the tensors the
failing line used, the model, optimizer, loss and DataLoader the script built, and the device settings
of the process can still be read, and read as they were, not as a log describes them. Like the object
probes these only read: nothing is called on the user's objects, not even a property.
"""

from __future__ import annotations

import ast
import linecache
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
from types import FrameType, ModuleType, TracebackType
from typing import Any

import torch
from torch import nn
from torch.fx import GraphModule
from torch.utils.data import DataLoader

import fixer
from fixer.diagnose.findings import Finding
from fixer.diagnose.objects import audit, default_device, guarded
from fixer.explain.libraries import library_of, normalise_path

_FIXER_DIR = normalise_path(os.path.dirname(os.path.abspath(fixer.__file__)))
# ops, in place (trailing _) or not, that index their first tensor (the receiver, in method form) with the others
_INDEX_OP = re.compile(
    r"(?:gather|index_(?:select|add|copy|fill|put|reduce)|scatter(?:_add|_reduce)?|masked_select"
    r"|take(?:_along_dim)?|put)_?"
)
_TRACING = re.compile(
    r"torch/(?:_dynamo|_inductor|export|_export|_functorch/_?aot_autograd|fx/experimental/proxy_tensor)"
)
_GENERATOR_CLASH = re.compile(r"Expected a '(\w+)(?::\d+)?' (?:device type for generator|generator device)")
_NUMPY_MESSAGE = re.compile(r"can't convert \S+ device type tensor to numpy|can't convert CUDA tensor to numpy")


@dataclass(frozen=True)
class _Step:
    """One frame of the traceback, and where in it the failing instruction was."""

    frame: FrameType
    line: int
    instruction: int

    @property
    def path(self) -> str:
        return normalise_path(self.frame.f_code.co_filename)


def _steps(tb: TracebackType | None) -> list[_Step]:
    steps = []
    while tb is not None:
        steps.append(_Step(tb.tb_frame, tb.tb_lineno, tb.tb_lasti))
        tb = tb.tb_next
    return steps


def _is_user(path: str) -> bool:
    """Your own code: not a library, not the standard library (runpy), not fixer running it."""
    return not path.startswith("<frozen") and library_of(path) is None and not path.startswith(_FIXER_DIR + "/")


def _user_steps(exc: BaseException) -> list[_Step]:
    return [step for step in _steps(exc.__traceback__) if _is_user(step.path)]


# --- reading the failing expression -------------------------------------------------------------


@dataclass(frozen=True)
class _Failing:
    """The expression the failing instruction belongs to, and the statement around it."""

    node: ast.AST
    statement: ast.stmt | None


def _span(node: ast.AST) -> tuple[Any, ...]:
    return tuple(getattr(node, key, None) for key in ("lineno", "end_lineno", "col_offset", "end_col_offset"))


def _failing(step: _Step) -> _Failing | None:
    """Found by the exact span Python 3.11+ records for each instruction; on 3.10, the statement on
    the failing line stands in for it."""
    try:
        tree = ast.parse("".join(linecache.getlines(step.frame.f_code.co_filename, step.frame.f_globals)))
    except (SyntaxError, ValueError):
        return None
    statements = [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and n.lineno <= step.line <= (n.end_lineno or 0)]
    statement = min(statements, key=lambda n: (n.end_lineno or 0) - n.lineno, default=None)
    positions = getattr(step.frame.f_code, "co_positions", None)
    span = list(positions())[step.instruction // 2] if positions and step.instruction >= 0 else None
    node = next((n for n in ast.walk(tree) if isinstance(n, ast.expr) and _span(n) == span), None)
    if node is None and isinstance(statement, ast.Expr | ast.Return | ast.Assign):
        node = statement.value
    return _Failing(node, statement) if node is not None else None


_MISSING = object()
_LEAVES_DEVICE = frozenset({"to", "cuda", "cpu", "type", "type_as", "mps", "xpu", "numpy", "tolist", "item"})


def _attribute(owner: Any, name: str) -> Any:
    """An attribute as stored, without running properties or __getattr__ hooks."""
    if isinstance(owner, nn.Module):
        for store in ("_parameters", "_buffers", "_modules"):
            if name in vars(owner).get(store, {}):
                return vars(owner)[store][name]
    try:
        return vars(owner).get(name, _MISSING)
    except TypeError:  # no __dict__
        return _MISSING


def _resolve(node: ast.AST, frame: FrameType) -> Any:
    """What an expression held, or a tensor on the same device, where reading it runs no user code:
    names, attributes, constant keys into plain containers, a tensor's subscript, and tensor methods
    that keep the device (`idx.long()` is where `idx` is)."""
    if isinstance(node, ast.Name):
        scope = next((s for s in (frame.f_locals, frame.f_globals) if node.id in s), {})
        return scope.get(node.id, _MISSING)
    if isinstance(node, ast.Attribute):
        owner = _resolve(node.value, frame)
        return _MISSING if owner is _MISSING else _attribute(owner, node.attr)
    if isinstance(node, ast.Subscript):
        owner = _resolve(node.value, frame)
        if isinstance(owner, torch.Tensor):
            return owner
        if type(owner) in (dict, list, tuple) and isinstance(node.slice, ast.Constant):
            try:
                return owner[node.slice.value]
            except (KeyError, IndexError, TypeError):
                return _MISSING
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr not in _LEAVES_DEVICE:
        owner = _resolve(node.func.value, frame)
        return owner if isinstance(owner, torch.Tensor) else _MISSING
    return _MISSING


def _tensor_devices(nodes: Sequence[ast.expr], frame: FrameType) -> dict[str, str]:
    """Each expression that holds a tensor, by its source text, with the tensor's device."""
    found = {}
    for node in nodes:
        value = _resolve(node, frame)
        if isinstance(value, torch.Tensor):
            found[ast.unparse(node)] = str(value.device)
    return found


@dataclass(frozen=True)
class _Indexing:
    text: str
    target: str  # the indexed tensor's device
    indices: dict[str, str]
    values: dict[str, str]
    cpu_indices_ok: bool  # `x[idx]` takes CPU indices into any tensor; gather & co. do not

    def odd(self) -> dict[str, str]:
        wrong = {k: v for k, v in self.indices.items() if v != self.target and not (self.cpu_indices_ok and v == "cpu")}
        return wrong | {k: v for k, v in self.values.items() if v != self.target}


def _indexing(failing: _Failing, frame: FrameType) -> _Indexing | None:
    """An expression that indexes a tensor with tensors: a subscript (read or assigned) or an index op."""
    node = failing.node
    if isinstance(node, ast.Subscript):
        target = _resolve(node.value, frame)
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        indices, values = _tensor_devices(parts, frame), {}
        statement = failing.statement
        if isinstance(node.ctx, ast.Store) and isinstance(statement, ast.Assign | ast.AugAssign):
            values = _tensor_devices([statement.value], frame)
        cpu_ok = True
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _INDEX_OP.fullmatch(node.func.attr):
        target = _resolve(node.func.value, frame)
        rest = [*node.args, *(keyword.value for keyword in node.keywords)]
        if target is torch and node.args:  # torch.gather(x, ...) rather than x.gather(...)
            target, rest = _resolve(node.args[0], frame), rest[1:]
        indices, values, cpu_ok = _tensor_devices(rest, frame), {}, False
    else:
        return None
    if not isinstance(target, torch.Tensor) or not (indices or values):
        return None
    return _Indexing(ast.unparse(node), str(target.device), indices, values, cpu_ok)


def _numpy_conversion(node: ast.AST, frame: FrameType) -> tuple[str, dict[str, str]] | None:
    """For `t.numpy()` or `np.f(t, ...)`: the text, and the tensors handed to NumPy with their devices."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    if node.func.attr == "numpy" and not node.args:
        tensors = _tensor_devices([node.func.value], frame)
    else:
        owner = _resolve(node.func.value, frame)
        if not (isinstance(owner, ModuleType) and owner.__name__.split(".")[0] == "numpy"):
            return None
        tensors = _tensor_devices([*node.args, *(keyword.value for keyword in node.keywords)], frame)
    return (ast.unparse(node), tensors) if tensors else None


def _frame_tensors(step: _Step, failing: _Failing | None) -> dict[str, str]:
    """The frame's tensor locals and the tensors the failing expression names (`self.weight` too)."""
    found = {name: str(v.device) for name, v in step.frame.f_locals.items() if isinstance(v, torch.Tensor)}
    if failing is not None:
        named = [n for n in ast.walk(failing.node) if isinstance(n, ast.Name | ast.Attribute)]
        found |= _tensor_devices(named, step.frame)
    return found


# --- the probes -----------------------------------------------------------------------------------


def probe_frame_tensors(exc: BaseException) -> list[Finding]:
    """Which tensors the innermost line of your own code handed to the failing operation."""
    steps = _user_steps(exc)
    if not steps:
        return [Finding("frame-tensor-devices", "could-not-check", "no frame of your own code is in the traceback")]
    step = steps[-1]
    failing = _failing(step)
    tensors = _frame_tensors(step, failing)
    where = f"{os.path.basename(step.path)}:{step.line}"
    facts: dict[str, Any] = {"frame": where, "tensors": tensors}
    indexing = _indexing(failing, step.frame) if failing is not None else None
    if indexing is not None:
        entries = ("index-on-other-device",)
        odd = indexing.odd()
        if odd:
            listed = ", ".join(f"{k} on {v}" for k, v in odd.items())
            why = f"`{indexing.text}` indexes a tensor on {indexing.target} with {listed}"
            return [Finding("frame-tensor-devices", "confirms", why, entries, facts)]
        accepted = ", ".join(f"{k} on {v}" for k, v in (indexing.indices | indexing.values).items())
        why = f"`{indexing.text}` indexes a tensor on {indexing.target} with tensors it accepts: {accepted}"
        return [Finding("frame-tensor-devices", "rules-out", why, entries, facts)]
    conversion = _numpy_conversion(failing.node, step.frame) if failing is not None else None
    if conversion is not None:
        text, handed = conversion
        entries = ("numpy-on-cuda-tensor",)
        off_host = {k: v for k, v in handed.items() if torch.device(v).type != "cpu"}
        if off_host:
            listed = ", ".join(f"{k} on {v}" for k, v in off_host.items())
            return [Finding("frame-tensor-devices", "confirms", f"`{text}` hands NumPy {listed}", entries, facts)]
        why = f"`{text}` hands NumPy only CPU tensors, which it can read"
        return [Finding("frame-tensor-devices", "rules-out", why, entries, facts)]
    placed = _called_module(failing, step.frame) if failing is not None else None
    if placed is not None:
        text, callee, weights, given = placed
        listed = ", ".join(f"{k} on {v}" for k, v in given.items())
        why = f"`{text}` has its weights on {', '.join(sorted(weights))} and is given {listed}"
        owner = step.frame.f_locals.get("self")
        if isinstance(owner, nn.Module) and all(callee is not part for part in owner.modules()):
            why += f", and {type(owner).__name__} runs it without registering it (.to() never reached it)"
            entry = "submodules-in-plain-container"
        else:
            entry = "model-not-moved" if weights == {"cpu"} else "inputs-not-moved"
        return [Finding("frame-tensor-devices", "confirms", why, (entry,), facts)]
    made = _made_in_forward(step, tensors)
    if made is not None:
        module, device, stray = made
        listed = ", ".join(f"`{k}` on {v}" for k, v in stray.items())
        why = f"{module}'s forward made {listed} while its weights and inputs are on {device}"
        if isinstance(step.frame.f_locals.get("self"), GraphModule):  # generated code: the device was traced in
            why += ", where its graph was traced to make them"
            return [Finding("frame-tensor-devices", "confirms", why, ("exported-program-hardcoded-device",), facts)]
        return [Finding("frame-tensor-devices", "confirms", why, ("tensor-created-without-device",), facts)]
    if not tensors:
        return [Finding("frame-tensor-devices", "info", f"no tensors in your failing frame ({where})", facts=facts)]
    listed = ", ".join(f"{k} on {v}" for k, v in list(tensors.items())[:8])
    more = f" and {len(tensors) - 8} more" if len(tensors) > 8 else ""
    return [Finding("frame-tensor-devices", "info", f"at {where}: {listed}{more}", facts=facts)]


def _weights(module: nn.Module) -> set[str]:
    return {str(t.device) for t in (*module.parameters(), *module.buffers())}


def _called_module(failing: _Failing, frame: FrameType) -> tuple[str, nn.Module, set[str], dict[str, str]] | None:
    """A module the failing expression calls with a tensor on a device none of its weights is on: the
    model left behind, or the batch."""
    for node in ast.walk(failing.node):
        if not isinstance(node, ast.Call):
            continue
        callee = _resolve(node.func, frame)
        if not isinstance(callee, nn.Module):
            continue
        weights = _weights(callee)
        given = _tensor_devices([*node.args, *(keyword.value for keyword in node.keywords)], frame)
        if weights and given and set(given.values()) - weights:
            return ast.unparse(node.func), callee, weights, given
    return None


def _made_in_forward(step: _Step, tensors: dict[str, str]) -> tuple[str, str, dict[str, str]] | None:
    """In a module's method whose weights and tensor arguments share one device, the locals on another
    device were made while it ran (`torch.arange(n)` without device=)."""
    owner = step.frame.f_locals.get("self")
    if not isinstance(owner, nn.Module):
        return None
    weights = _weights(owner)
    code = step.frame.f_code
    arguments = set(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
    given = {tensors[name] for name in arguments if name in tensors}
    if len(weights) != 1 or not given <= weights:
        return None
    device = next(iter(weights))
    stray = {
        name: where
        for name, where in tensors.items()
        if name.isidentifier() and name in step.frame.f_locals and name not in arguments and where != device
    }
    return (type(owner).__name__, device, stray) if stray else None


def _device_at_failure(exc: BaseException) -> tuple[torch.device | None, str]:
    """The default device when the error was raised. A `with torch.device(...)` block has exited by
    the time fixer sees the error, but its mode is a frame of the traceback whenever a torch call
    failed inside it, and that frame still holds the device."""
    from torch.utils._device import DeviceContext

    for step in reversed(_steps(exc.__traceback__)):
        mode = step.frame.f_locals.get("self")
        if step.path.endswith("torch/utils/_device.py") and isinstance(mode, DeviceContext):
            return mode.device, "active in the failing call"
    return default_device(), "set for the process"


def probe_default_device(exc: BaseException) -> list[Finding]:
    """A global default device moves every factory call without device=, PyTorch's own included."""
    device, how = _device_at_failure(exc)
    if device is None:
        return [Finding("default-device", "could-not-check", "the default device could not be read")]
    message, paths = str(exc), [step.path for step in _steps(exc.__traceback__)]
    facts = {"default_device": str(device), "how": how}
    clash = _GENERATOR_CLASH.search(message)
    in_sampler = any(re.search(r"torch/utils/data/(?:sampler|dataloader|dataset)\.py", p) for p in paths)
    if device.type != "cpu":
        if clash or (in_sampler and _NUMPY_MESSAGE.search(message)):
            why = (
                f"the default device is {device} ({how}), so PyTorch's samplers draw their shuffle order there, "
                "while the generator they draw from is a CPU one"
            )
            return [Finding("default-device", "confirms", why, ("default-device-generator",), facts)]
        if any(_TRACING.search(p) for p in paths):
            why = (
                f"the default device is {device} ({how}) and the error was raised while torch.compile or export "
                "traced the model, where factory calls inside the traced code may not follow it"
            )
            return [Finding("default-device", "confirms", why, ("compile-fake-tensor-device",), facts)]
        why = f"the default device is {device} ({how}): tensors created without device= are made there"
        return [Finding("default-device", "info", why, facts=facts)]
    if clash and clash.group(1) == "cpu":  # a CUDA generator handed to a CPU draw: the loader's settings say more
        return [Finding("default-device", "info", "no default device is set: new tensors go to the CPU", facts=facts)]
    why = "no default device is set, so PyTorch's samplers draw on the CPU, with the CPU generators they make"
    return [Finding("default-device", "rules-out", why, ("default-device-generator",), facts)]


def current_device_verdict(current: int, message: str) -> list[Finding]:
    """Bare "cuda" means the current GPU: if it is one of two GPUs the error names, that explains the split."""
    named = sorted({int(n) for n in re.findall(r"cuda:(\d+)", message)})
    facts: dict[str, Any] = {"current_device": current, "named": named}
    entries = ("default-cuda-vs-cuda-n",)
    if len(named) < 2:
        return [Finding("current-device", "info", f"the current CUDA device is cuda:{current}", facts=facts)]
    listed = " and ".join(f"cuda:{n}" for n in named)
    if current in named:
        why = (
            f"the current device is cuda:{current}, where bare 'cuda' and .cuda() put tensors, and one of the "
            f"GPUs in the error ({listed})"
        )
        return [Finding("current-device", "confirms", why, entries, facts)]
    why = f"neither GPU in the error ({listed}) is the current device, cuda:{current}, where bare 'cuda' puts tensors"
    return [Finding("current-device", "rules-out", why, entries, facts)]


def probe_current_device(exc: BaseException) -> list[Finding]:
    if not torch.cuda.is_available():
        why = "CUDA is not available in this process, so it has no current GPU"
        return [Finding("current-device", "could-not-check", why, ("default-cuda-vs-cuda-n",))]
    return current_device_verdict(torch.cuda.current_device(), str(exc))


def _backends(config: str) -> dict[str, str]:
    """Device type -> backend, from `get_backend_config()` ("cpu:gloo,cuda:nccl") or a bare name."""
    if ":" in config:
        pairs = (pair.split(":", 1) for pair in config.split(","))
        return {device: backend for device, backend in pairs}
    return {"cuda": config} if config == "nccl" else {"cpu": config, "cuda": config}


def collective_verdict(backends: dict[str, str], tensors: dict[str, str]) -> list[Finding]:
    """NCCL takes CUDA tensors only; a group whose only backend is NCCL has nothing for a CPU tensor."""
    types = {torch.device(device).type for device in tensors.values()}
    facts: dict[str, Any] = {"backends": backends, "tensors": tensors}
    entries = ("nccl-cpu-tensors",)
    listed = ", ".join(f"{k} on {v}" for k, v in list(tensors.items())[:5])
    findings = []
    if "cpu" in types and backends.get("cpu", "nccl") == "nccl" and "nccl" in backends.values():
        why = f"the process group's backend is nccl, which takes CUDA tensors only, and the collective got {listed}"
        findings.append(Finding("collective-tensor-devices", "confirms", why, entries, facts))
    elif "cpu" in types:
        why = f"the process group handles CPU tensors with {backends['cpu']}"
        findings.append(Finding("collective-tensor-devices", "rules-out", why, entries, facts))
    elif types == {"cuda"}:
        why = f"every tensor in the collective is on a GPU ({listed})"
        findings.append(Finding("collective-tensor-devices", "rules-out", why, entries, facts))
    if "cuda" in types and backends.get("cuda") == "gloo":
        why = "the group sends CUDA tensors through gloo, which copies them to the host and lacks some collectives"
        findings.append(Finding("collective-tensor-devices", "info", why, facts=facts))
    unserved = sorted(types - set(backends) - {"cpu"})
    if unserved:
        why = f"no backend of the process group takes {', '.join(unserved)} tensors ({listed})"
        findings.append(Finding("collective-tensor-devices", "info", why, facts=facts))
    return findings


def _collective_tensors(exc: BaseException) -> dict[str, str]:
    """The tensors the collective got (its own frame's arguments), else those of your failing frame."""
    steps = _steps(exc.__traceback__)
    inside = [s for s in steps if s.path.endswith("torch/distributed/distributed_c10d.py")]
    chosen = inside[-1:] or _user_steps(exc)[-1:]
    found: dict[str, str] = {}
    for step in chosen:
        for name, value in step.frame.f_locals.items():
            items = value if isinstance(value, list | tuple) else [value]
            for index, item in enumerate(items):
                if isinstance(item, torch.Tensor):
                    found[name if item is value else f"{name}[{index}]"] = str(item.device)
    return found


def probe_collective(exc: BaseException) -> list[Finding]:
    distributed = torch.distributed
    in_collective = any("torch/distributed/" in step.path for step in _steps(exc.__traceback__))
    if not (distributed.is_available() and distributed.is_initialized()):
        if in_collective:
            why = "the process group was already destroyed when the error reached fixer"
            return [Finding("collective-tensor-devices", "could-not-check", why, ("nccl-cpu-tensors",))]
        return []
    config = getattr(distributed, "get_backend_config", distributed.get_backend)()
    tensors = _collective_tensors(exc)
    if not tensors:
        why = f"no tensors in the failing frames to compare with the {config} backend"
        return [Finding("collective-tensor-devices", "could-not-check", why, ("nccl-cpu-tensors",))]
    return collective_verdict(_backends(str(config)), tensors)


# --- the objects the failing frames hold ----------------------------------------------------------


def _values(exc: BaseException) -> Iterator[Any]:
    """Locals of your failing frames, outermost first (where scripts build their model), and the
    attributes of a method's non-module `self` (a Trainer keeps its model and optimizer there)."""
    for step in _user_steps(exc):
        for name, value in step.frame.f_locals.items():
            yield value
            if name == "self" and not isinstance(value, nn.Module) and hasattr(value, "__dict__"):
                yield from vars(value).values()


def _parts(model: nn.Module) -> set[int]:
    """Every module the model reaches, registered or kept in a plain list or dict, by id."""
    seen: set[int] = set()
    pending = [model]
    while pending:
        for module in pending.pop().modules():
            if id(module) in seen:
                continue
            seen.add(id(module))
            for value in vars(module).values():
                items = value.values() if isinstance(value, dict) else value if isinstance(value, list | tuple) else ()
                pending += [item for item in items if isinstance(item, nn.Module) and id(item) not in seen]
    return seen


def live_objects(exc: BaseException) -> dict[str, Any]:
    """The model, optimizer, loss and DataLoader the failing frames hold. The model is the largest
    module by parameter count once modules inside another found module are dropped: `self` in a
    block's forward, or a layer the model keeps in a plain list, is part of the model, not the model."""
    found: dict[str, Any] = {}
    modules: dict[int, nn.Module] = {}
    for value in _values(exc):
        if isinstance(value, torch.nn.modules.loss._Loss):
            found.setdefault("loss", value)
        elif isinstance(value, nn.Module):
            modules.setdefault(id(value), value)
        elif isinstance(value, torch.optim.Optimizer):
            found.setdefault("optimizer", value)
        elif isinstance(value, DataLoader):
            found.setdefault("loader", value)
    inner = {part for key, module in modules.items() for part in _parts(module) if part != key}
    roots = [module for key, module in modules.items() if key not in inner]
    if roots:
        found["model"] = max(roots, key=lambda m: sum(p.numel() for p in m.parameters()))
    return found


def _audit_live(exc: BaseException) -> list[Finding]:
    """The object probes on what the failing frames hold. A loss or a DataLoader that the failing call
    never reached is a mistake still waiting its turn, not this error's cause: what it confirms is
    kept, as info."""
    objects = live_objects(exc)
    steps = _steps(exc.__traceback__)
    reached = {
        "loss-module-devices": any(step.frame.f_locals.get("self") is objects.get("loss") for step in steps),
        "dataloader-generator": any("torch/utils/data/" in step.path for step in steps),
    }
    return [
        replace(finding, verdict="info", summary=f"{finding.summary} (not in the failing call)")
        if finding.verdict == "confirms" and not reached.get(finding.probe, True)
        else finding
        for finding in audit(**objects)
    ]


_PROBES: tuple[tuple[str, Callable[[BaseException], list[Finding]]], ...] = (
    ("frame-tensor-devices", probe_frame_tensors),
    ("default-device", probe_default_device),
    ("current-device", probe_current_device),
    ("collective-tensor-devices", probe_collective),
    ("module-devices", _audit_live),  # each object probe is guarded inside
)


def probe_failure(exc: BaseException) -> list[Finding]:
    """Every run-time probe and an audit of the objects in the failing frames; none raises."""
    findings: list[Finding] = []
    for probe, run in _PROBES:
        findings += guarded(probe, partial(run, exc))
    return findings
