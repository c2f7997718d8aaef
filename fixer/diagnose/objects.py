"""Probes over live objects: a model, its optimizer, a batch, a loss, a DataLoader. Called from
`fixer.audit(...)` and, on the objects found in the failing frames, from `fixer run`.

They read devices and attributes only: no forward pass, no data copied, nothing moved. Each probe
answers with findings (confirms / rules out / could not check); `audit` turns a probe that raises on
an unusual object into a could-not-check finding, so one odd object never hides the other answers.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
from torch import nn
from torch.fx import GraphModule
from torch.utils.data import RandomSampler, SubsetRandomSampler

from fixer.diagnose.findings import Finding


def _main_device(counts: Counter[str]) -> str | None:
    return counts.most_common(1)[0][0] if counts else None


def _model_device(model: nn.Module) -> str | None:
    """Where most of the model's elements are: the device its computation runs on."""
    counts: Counter[str] = Counter()
    for tensor in (*model.parameters(), *model.buffers()):
        counts[str(tensor.device)] += tensor.numel()
    return _main_device(counts)


def default_device() -> torch.device | None:
    """The device tensor factories use when given none.

    `torch.get_default_device()` resolves "cuda" to an ordinal and so raises where CUDA is missing;
    the setting itself is still worth reporting then, and torch keeps it in `torch.utils._device`.
    """
    try:
        return torch.get_default_device()
    except (AssertionError, RuntimeError):
        from torch.utils import _device

        return getattr(_device, "CURRENT_DEVICE", None)


def _own_tensors(module: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    for name, param in module.named_parameters(recurse=False):
        yield name, param
    for name, buffer in module.named_buffers(recurse=False):
        yield name, buffer


def model_devices(model: nn.Module) -> list[Finding]:
    """Parameters and buffers per submodule and device: who is the odd one out."""
    counts: Counter[str] = Counter()
    placement: dict[str, Counter[str]] = {}
    for path, module in model.named_modules():
        for _name, tensor in _own_tensors(module):
            device = str(tensor.device)
            counts[device] += tensor.numel()
            placement.setdefault(path or "<root>", Counter())[device] += 1
    main = _main_device(counts)
    if main is None:
        return [Finding("module-devices", "could-not-check", "the model has no parameters or buffers")]
    odd = {path: sorted(devices) for path, devices in placement.items() if set(devices) != {main}}
    facts = {"main_device": main, "devices": dict(counts), "odd_submodules": odd}
    if not odd:
        return [
            Finding("module-devices", "info", f"every parameter and buffer is on {main}", facts=facts),
            Finding(
                "module-devices",
                "rules-out",
                f"no submodule is left behind: all on {main}",
                entries=("submodule-replaced-after-to",),
            ),
        ]
    shown = "; ".join(f"{path} on {', '.join(devices)}" for path, devices in list(odd.items())[:5])
    return [
        Finding(
            "module-devices",
            "confirms",
            f"the model is on {main} but {shown}",
            entries=("submodule-replaced-after-to",),
            facts=facts,
        ),
        Finding("module-devices", "rules-out", f"most of the model is on {main}", entries=("model-not-moved",)),
    ]


def unregistered_state(model: nn.Module) -> list[Finding]:
    """Tensors kept as plain attributes and layers kept in plain lists or dicts: `.to()` skips both."""
    plain: dict[str, str] = {}
    hidden: list[str] = []
    for path, module in model.named_modules():
        for name, value in vars(module).items():
            if name.startswith("_"):
                continue
            where = f"{path}.{name}" if path else name
            if isinstance(value, torch.Tensor) and not isinstance(value, nn.Parameter):
                plain[where] = str(value.device)
            elif isinstance(value, list | tuple | dict):
                items = value.values() if isinstance(value, dict) else value
                if any(isinstance(item, nn.Module) for item in items):
                    hidden.append(where)
    findings = []
    if plain:
        listed = ", ".join(f"{k} on {v}" for k, v in list(plain.items())[:5])
        findings.append(
            Finding(
                "module-plain-tensor-attributes",
                "confirms",
                f"tensors stored as plain attributes, which .to() and DataParallel skip: {listed}",
                entries=("plain-tensor-attribute",),
                facts={"attributes": plain},
            )
        )
    else:
        findings.append(
            Finding(
                "module-plain-tensor-attributes",
                "rules-out",
                "no tensor is kept as a plain attribute",
                entries=("plain-tensor-attribute",),
            )
        )
    if hidden:
        findings.append(
            Finding(
                "module-unregistered-submodules",
                "confirms",
                f"layers kept in plain Python containers, which .to() never sees: {', '.join(hidden[:5])}",
                entries=("submodules-in-plain-container",),
                facts={"containers": hidden},
            )
        )
    else:
        findings.append(
            Finding(
                "module-unregistered-submodules",
                "rules-out",
                "no layer is kept in a plain list or dict",
                entries=("submodules-in-plain-container",),
            )
        )
    return findings


def optimizer_state(optimizer: torch.optim.Optimizer) -> list[Finding]:
    """State tensors on another device than their parameter (`step` only matters for fused/capturable)."""
    strays: dict[str, str] = {}
    checked = 0
    for group in optimizer.param_groups:
        keeps_step = bool(group.get("fused") or group.get("capturable"))
        for index, param in enumerate(group["params"]):
            for key, value in optimizer.state.get(param, {}).items():
                if not isinstance(value, torch.Tensor) or (key == "step" and not keeps_step):
                    continue
                checked += 1
                if value.device != param.device:
                    strays[f"param {index}: {key}"] = f"{value.device} (param on {param.device})"
    entries = ("optimizer-state-after-resume",)
    if not checked:
        return [Finding("optimizer-state-devices", "could-not-check", "the optimizer has no state yet", entries)]
    if strays:
        listed = "; ".join(f"{k} on {v}" for k, v in list(strays.items())[:5])
        return [
            Finding(
                "optimizer-state-devices",
                "confirms",
                f"optimizer state apart from its parameters: {listed}",
                entries,
                facts={"strays": strays},
            )
        ]
    return [Finding("optimizer-state-devices", "rules-out", "all optimizer state sits with its parameters", entries)]


def batch_devices(batch: Any, model: nn.Module | None) -> list[Finding]:
    """Where the batch's tensors are, against the model's main device."""
    found = Counter(str(t.device) for t in _tensors(batch))
    if not found:
        return [Finding("batch-devices", "could-not-check", "the batch holds no tensors")]
    facts: dict[str, Any] = {"batch": dict(found)}
    if model is None:
        return [Finding("batch-devices", "info", f"the batch is on {', '.join(found)}", facts=facts)]
    main = _model_device(model)
    facts["model"] = main
    if main is None or set(found) == {main}:
        return [
            Finding(
                "batch-devices",
                "rules-out",
                f"the batch is on the model's device ({main})",
                ("inputs-not-moved", "model-not-moved"),
                facts,
            )
        ]
    if main == "cpu":
        return [
            Finding(
                "batch-devices",
                "confirms",
                f"the model is on the CPU, the batch on {', '.join(found)}",
                ("model-not-moved",),
                facts,
            )
        ]
    return [
        Finding(
            "batch-devices",
            "confirms",
            f"the model is on {main}, the batch on {', '.join(found)}",
            ("inputs-not-moved",),
            facts,
        )
    ]


def library_state(model: nn.Module) -> list[Finding]:
    """accelerate hooks, a transformers device map, bitsandbytes quantization: who else places tensors."""
    findings = _hook_devices(model)
    device_map = getattr(model, "hf_device_map", None)
    if isinstance(device_map, dict) and len(set(map(str, device_map.values()))) > 1:
        findings.append(
            Finding(
                "hf-device-map",
                "confirms",
                "the model is split over several devices by device_map",
                ("device-map-auto-split",),
                {"device_map": {k: str(v) for k, v in device_map.items()}},
            )
        )
    if getattr(model, "is_loaded_in_4bit", False) or getattr(model, "is_loaded_in_8bit", False):
        findings.append(
            Finding(
                "model-quantization",
                "confirms",
                "the model is a bitsandbytes 4/8-bit model",
                ("bnb-quantized-model-to",),
            )
        )
    return findings


def loss_devices(loss: nn.Module, model: nn.Module | None) -> list[Finding]:
    """Class weights live in the loss object, usually built beside the model where `model.to()` never
    reaches them."""
    kind = type(loss).__name__
    held = {name: str(t.device) for name, t in (*loss.named_parameters(), *loss.named_buffers())}
    held |= {
        name: str(value.device)
        for name, value in vars(loss).items()
        if isinstance(value, torch.Tensor) and not isinstance(value, nn.Parameter)
    }
    entries = ("loss-weight-on-cpu",)
    if not held:
        return [Finding("loss-module-devices", "rules-out", f"the loss ({kind}) holds no tensor of its own", entries)]
    listed = ", ".join(f"{name} on {device}" for name, device in held.items())
    main = _model_device(model) if model is not None else None
    facts: dict[str, Any] = {"loss": kind, "tensors": held, "model": main}
    if main is None:
        return [Finding("loss-module-devices", "info", f"the loss ({kind}) keeps {listed}", facts=facts)]
    odd = {name: device for name, device in held.items() if device != main}
    if odd:
        shown = ", ".join(f"{name} on {device}" for name, device in odd.items())
        return [
            Finding(
                "loss-module-devices",
                "confirms",
                f"the model is on {main} but the loss ({kind}) keeps its {shown}",
                entries,
                facts,
            )
        ]
    return [
        Finding("loss-module-devices", "rules-out", f"the loss ({kind}) keeps {listed}, with the model", entries, facts)
    ]


def loader_generator(loader: Any) -> list[Finding]:
    """A random draw runs on the default device with the generator it is given; a generator from
    another device is refused. RandomSampler makes a CPU one when given none."""
    default = default_device()
    entries = ("default-device-generator",)
    if default is None:
        return [Finding("dataloader-generator", "could-not-check", "the default device could not be read", entries)]
    draws: dict[str, str] = {}  # each random draw the loader makes -> its generator's device
    if isinstance(getattr(loader, "generator", None), torch.Generator):
        draws["the loader's seed"] = str(loader.generator.device)
    candidates = (getattr(loader, "sampler", loader), getattr(getattr(loader, "batch_sampler", None), "sampler", None))
    for sampler in {id(s): s for s in candidates}.values():
        generator = getattr(sampler, "generator", None)
        if isinstance(sampler, RandomSampler) and generator is None:
            draws["the RandomSampler's shuffle, with the CPU torch.Generator() it makes"] = "cpu"
        elif isinstance(sampler, RandomSampler | SubsetRandomSampler) and isinstance(generator, torch.Generator):
            draws[f"the {type(sampler).__name__}'s shuffle"] = str(generator.device)
    facts: dict[str, Any] = {"default_device": str(default), "generators": draws}
    clashes = {what: device for what, device in draws.items() if torch.device(device).type != default.type}
    if clashes:
        listed = "; ".join(f"{what} uses a generator on {device}" for what, device in clashes.items())
        return [
            Finding(
                "dataloader-generator",
                "confirms",
                f"random draws run on the default device, {default}, but {listed}",
                entries,
                facts,
            )
        ]
    why = (
        f"the loader's random draws use generators on {default}, the default device"
        if draws
        else "the loader makes no random draw with a generator of its own"
    )
    return [Finding("dataloader-generator", "rules-out", why, entries, facts)]


def fsdp_offload(model: nn.Module) -> list[Finding]:
    """With parameter offload, FSDP keeps parameters on the CPU between uses: `model.device` says cpu."""
    fsdp = sys.modules.get("torch.distributed.fsdp")  # never imported means nothing here is FSDP
    if fsdp is None:
        return []
    composable = getattr(fsdp, "FSDPModule", None)  # fully_shard's class, exported from torch 2.6
    wrapped: dict[str, bool] = {}  # module path -> whether its parameters are offloaded
    for path, module in model.named_modules():
        if isinstance(module, fsdp.FullyShardedDataParallel):
            wrapped[path or "<root>"] = bool(module.cpu_offload.offload_params)
        elif composable is not None and isinstance(module, composable):
            group = module._get_fsdp_state()._fsdp_param_group
            if group is not None:
                wrapped[path or "<root>"] = isinstance(group.offload_policy, fsdp.CPUOffloadPolicy)
    if not wrapped:
        return []
    entries = ("fsdp-cpu-offload-device",)
    offloaded = [path for path, on in wrapped.items() if on]
    facts = {"offloaded": offloaded, "fsdp_modules": list(wrapped)}
    if offloaded:
        why = (
            f"FSDP offloads parameters to the CPU ({', '.join(offloaded[:5])}): between forward and backward they "
            "are on cpu, and so is every device read from them"
        )
        return [Finding("fsdp-offload-config", "confirms", why, entries, facts)]
    return [Finding("fsdp-offload-config", "rules-out", "FSDP does not offload parameters here", entries, facts)]


def keras_replicas(model: nn.Module) -> list[Finding]:
    """DataParallel replicates a module by copying its registered parameters; a Keras 3 model on the
    torch backend keeps its weights in Keras variables, so the replicas on other GPUs still read
    cuda:0's."""
    wrappers = (nn.DataParallel, nn.parallel.DistributedDataParallel)
    wrapped = [(path or "<root>", m.module) for path, m in model.named_modules() if isinstance(m, wrappers)]
    if not wrapped:
        return []
    keras = [(path, type(inner)) for path, inner in wrapped if _is_keras(type(inner))]
    entries = ("keras-torch-dataparallel",)
    if keras:
        shown = ", ".join(f"{path} wraps {cls.__module__}.{cls.__qualname__}" for path, cls in keras)
        return [Finding("keras-dataparallel", "confirms", f"a Keras model inside a torch wrapper: {shown}", entries)]
    return [Finding("keras-dataparallel", "rules-out", "the DataParallel/DDP wrapper holds no Keras model", entries)]


def _is_keras(cls: type) -> bool:
    return any(base.__module__.split(".")[0] == "keras" for base in cls.__mro__)


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _tensors(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _tensors(item)


def _hook_devices(model: nn.Module) -> list[Finding]:
    """Each accelerate hook's execution device against its own module's weights: hooks are how
    accelerate works, so their presence decides nothing; a hooked module whose weights something else
    moved off the hook's device (an offloading hook's wait on meta) is the conflict."""
    hooks: dict[str, str] = {}
    apart: dict[str, str] = {}
    for path, module in model.named_modules():
        hooked = hook_device(module)
        if hooked is None:
            continue
        runs_on, offloads = hooked
        hooks[path or "<model>"] = runs_on
        own = {str(t.device) for t in (*module.parameters(recurse=False), *module.buffers(recurse=False))}
        own -= {"meta"} if offloads else set()
        if own and not all(_same_device(d, runs_on) for d in own):
            apart[path or "<model>"] = f"runs on {runs_on}, weights on {', '.join(sorted(own))}"
    if not hooks:
        return []
    facts = {"hooks": hooks, "apart": apart}
    if apart:
        shown = "; ".join(f"`{path}` {where}" for path, where in list(apart.items())[:3])
        why = f"accelerate's hooks and the weights disagree: {shown}"
        return [Finding("accelerate-hooks", "confirms", why, ("accelerate-hooks-conflict",), facts)]
    why = f"{len(hooks)} module(s) carry accelerate hooks, and each one's weights are on its hook's device"
    return [Finding("accelerate-hooks", "rules-out", why, ("accelerate-hooks-conflict",), facts)]


def hook_device(module: nn.Module) -> tuple[str, bool] | None:
    """The execution device of accelerate's hook on the module (`_hf_hook`, or one of a SequentialHook's),
    and whether it offloads the weights (they then wait on meta until each call loads them)."""
    hook = getattr(module, "_hf_hook", None)
    for candidate in (hook, *getattr(hook, "hooks", ())):
        device = getattr(candidate, "execution_device", None)
        if device is not None:
            runs_on = str(torch.device(device) if isinstance(device, int | str) else device)
            return runs_on, bool(getattr(candidate, "offload", False))
    return None


def _same_device(a: str, b: str) -> bool:
    """`cuda` and `cuda:0` name one device where the current one is 0; a bare type matches any of its ordinals."""
    kind_a, _, index_a = a.partition(":")
    kind_b, _, index_b = b.partition(":")
    return kind_a == kind_b and (not index_a or not index_b or index_a == index_b)


def graph_devices(model: nn.Module) -> list[Finding]:
    """The devices a traced or exported module's graph passes as arguments (`arange(..., device=cpu)`),
    against those of its weights: `.to()` moves the weights and leaves the graph's arguments as traced."""
    graphs = [(path or "<model>", m) for path, m in model.named_modules() if isinstance(m, GraphModule)]
    baked: dict[str, list[str]] = {}
    for _path, graph in graphs:
        for node in graph.graph.nodes:
            for device in _devices_in((node.args, node.kwargs)):
                baked.setdefault(device, []).append(f"{node.name}")
    weights = {str(t.device) for t in (*model.parameters(), *model.buffers())}
    if not baked or not weights:
        return []
    stray = {d: nodes for d, nodes in baked.items() if not any(_same_device(d, w) for w in weights)}
    facts = {"graph": baked, "weights": sorted(weights)}
    entry = ("exported-program-hardcoded-device",)
    where = ", ".join(sorted(weights))
    if stray:
        shown = "; ".join(f"{d} at {', '.join(nodes[:4])}{', ...' * (len(nodes) > 4)}" for d, nodes in stray.items())
        why = f"the graph of `{graphs[0][0]}` passes {shown} as device arguments while its weights are on {where}"
        return [Finding("graph-module-devices", "confirms", why, entry, facts)]
    why = f"the graph's device arguments ({', '.join(baked)}) are where its weights are ({where})"
    return [Finding("graph-module-devices", "rules-out", why, entry, facts)]


def _devices_in(value: Any) -> Iterator[str]:
    if isinstance(value, torch.device):
        yield str(value)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _devices_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _devices_in(item)


def guarded(probe: str, run: Callable[[], list[Finding]]) -> list[Finding]:
    """A probe meets whatever objects a user has; one that breaks on them says so instead of raising."""
    try:
        return run()
    except Exception as error:
        return [Finding(probe, "could-not-check", f"the probe failed: {type(error).__name__}: {error}")]


def audit(
    model: nn.Module | None = None,
    optimizer: torch.optim.Optimizer | None = None,
    batch: Any = None,
    loss: nn.Module | None = None,
    loader: Any = None,
) -> list[Finding]:
    findings: list[Finding] = []
    if model is not None:
        findings += guarded("module-devices", lambda: model_devices(model))
        findings += guarded("module-plain-tensor-attributes", lambda: unregistered_state(model))
        findings += guarded("accelerate-hooks", lambda: library_state(model))
        findings += guarded("graph-module-devices", lambda: graph_devices(model))
        findings += guarded("fsdp-offload-config", lambda: fsdp_offload(model))
        findings += guarded("keras-dataparallel", lambda: keras_replicas(model))
    if optimizer is not None:
        findings += guarded("optimizer-state-devices", lambda: optimizer_state(optimizer))
    if batch is not None:
        findings += guarded("batch-devices", lambda: batch_devices(batch, model))
    if loss is not None:
        findings += guarded("loss-module-devices", lambda: loss_devices(loss, model))
    if loader is not None:
        findings += guarded("dataloader-generator", lambda: loader_generator(loader))
    return findings
