"""Probes over live objects: a model, its optimizer, a batch. Called from `fixer.audit(...)`.

They read devices and attributes only: no forward pass, no data copied, nothing moved. Each probe
answers with findings (confirms / rules out / could not check); none raises.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

import torch
from torch import nn

from fixer.diagnose.findings import Finding


def _main_device(counts: Counter[str]) -> str | None:
    return counts.most_common(1)[0][0] if counts else None


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
    counts = Counter({str(t.device): t.numel() for t in model.parameters()})
    main = _main_device(counts)
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
    findings = []
    hooked = {
        path: str(getattr(m._hf_hook, "execution_device", "?"))
        for path, m in model.named_modules()
        if hasattr(m, "_hf_hook")
    }
    if hooked:
        findings.append(
            Finding(
                "accelerate-hooks",
                "confirms",
                f"{len(hooked)} module(s) carry accelerate hooks that move tensors on each call",
                ("accelerate-hooks-conflict",),
                {"hooks": hooked},
            )
        )
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


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _tensors(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _tensors(item)


def audit(
    model: nn.Module | None = None, optimizer: torch.optim.Optimizer | None = None, batch: Any = None
) -> list[Finding]:
    findings: list[Finding] = []
    if model is not None:
        findings += model_devices(model) + unregistered_state(model) + library_state(model)
    if optimizer is not None:
        findings += optimizer_state(optimizer)
    if batch is not None:
        findings += batch_devices(batch, model)
    return findings
