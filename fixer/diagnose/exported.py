"""Which devices a `torch.export` program (.pt2) has written into its graph, read without loading it.

`torch.export.load` is not used: it unpickles pickled weights with `torch.load(weights_only=False)` and
opaque constants with `pickle.loads`, so a crafted .pt2 runs code on load. Everything this probe needs
is plain data instead. A .pt2 is a zip whose graph is JSON (`models/<name>.json`): a device argument of
a node is `{"as_device": {"type": "cpu", "index": null}}`, and the graph signature says which inputs are
parameters, buffers and tensor constants. The weights' and constants' devices are JSON too
(`data/weights/<name>_weights_config.json`, `data/constants/<name>_constants_config.json`), so no
tensor bytes are read. Files from older torch keep the state dict as a nested torch.save archive
(`serialized_state_dict.pt` at the top of the zip, or `data/weights/<name>.pt`); those go through the
checkpoint probe's unpickler, which imports and runs nothing.

Tensor constants count with the graph, not the weights: `ep.module().to(...)` moves parameters and
buffers but leaves a lifted constant where it was saved, just like a `device=` argument.
"""

from __future__ import annotations

import json
import re
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fixer.diagnose.checkpoint import CheckpointError, saved_tensors
from fixer.diagnose.findings import Finding, Verdict

PROBE = "exported-program-devices"
ENTRY = "exported-program-hardcoded-device"
MAX_JSON_BYTES = 256 * 2**20  # large models' graphs run to tens of MB; past this, not worth the memory
_CUDA = re.compile(r"cuda(?::(\d+))?")
_LISTED = 6  # node names shown in a summary; the facts hold all of them


class ExportedProgramError(Exception):
    """The file is not an exported program this probe can read; the message says why."""


@dataclass
class Program:
    """Devices as the file records them: what the graph pins, and where the weights will be loaded."""

    graph: dict[str, list[str]] = field(default_factory=dict)  # node name -> devices in its arguments
    constants: dict[str, str] = field(default_factory=dict)  # tensor constant FQN -> device
    weights: dict[str, str] = field(default_factory=dict)  # parameter or buffer FQN -> device
    inputs: dict[str, str] = field(default_factory=dict)  # user input -> device at export time

    def pinned(self) -> set[str]:
        """Devices that stay put when the program's module is moved with .to()."""
        return {d for devices in self.graph.values() for d in devices} | set(self.constants.values())


def read_program(path: Path) -> Program:
    """The devices recorded in a torch.export.save file, from its JSON and storage locations only."""
    try:
        with zipfile.ZipFile(path) as archive:
            return _read_archive(archive, str(path))
    except OSError as exc:
        raise ExportedProgramError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except CheckpointError as exc:
        raise ExportedProgramError(str(exc)) from None
    except (KeyError, TypeError, AttributeError, ValueError, RecursionError) as exc:
        raise ExportedProgramError(f"{path}: unexpected program layout ({type(exc).__name__}: {exc})") from None
    except (zipfile.BadZipFile, EOFError, zlib.error, RuntimeError) as exc:  # RuntimeError: encrypted, unsupported zip
        raise ExportedProgramError(f"{path}: not a zip archive, or a damaged one ({exc})") from None


def _read_archive(archive: zipfile.ZipFile, label: str) -> Program:
    # A .pt2 puts everything under one root folder named after the file; the older zip format does not.
    members = {info.filename.split("/", 1)[-1]: info for info in archive.infolist()}
    if "serialized_exported_program.json" in members:
        graphs = {"model": "serialized_exported_program.json"}
    else:
        graphs = {
            n[len("models/") : -len(".json")]: n for n in members if n.startswith("models/") and n.endswith(".json")
        }
    if not graphs:
        raise ExportedProgramError(f"{label}: {_not_a_program(members)}")
    program = Program()
    for model, graph_name in sorted(graphs.items()):
        graph = _json(archive, members[graph_name], label)["graph_module"]
        buffers = _scan(graph, program, f"{model}/" if len(graphs) > 1 else "")
        weights = (f"data/weights/{model}_weights_config.json", f"data/weights/{model}.pt", "serialized_state_dict.pt")
        for fqn, device in _state(archive, members, weights, label):
            program.weights[fqn] = device
        constants = (
            f"data/constants/{model}_constants_config.json",
            f"data/constants/{model}.pt",
            "serialized_constants.pt",
        )
        for fqn, device in _state(archive, members, constants, label):
            (program.weights if fqn in buffers else program.constants)[fqn] = device
    return program


def _not_a_program(members: dict[str, zipfile.ZipInfo]) -> str:
    if "data.pkl" in members:
        return "a torch.save checkpoint, not an exported program (read it with --checkpoint)"
    if any(n.startswith("data/aotinductor/") for n in members):
        return "an AOTInductor package: compiled code with no graph to read"
    return "no exported program inside (no models/*.json); not written by torch.export.save"


def _json(archive: zipfile.ZipFile, info: zipfile.ZipInfo, label: str) -> Any:
    with archive.open(info) as stream:
        data = stream.read(MAX_JSON_BYTES + 1)
    if len(data) > MAX_JSON_BYTES:
        raise ExportedProgramError(f"{label}: {info.filename} is over {MAX_JSON_BYTES >> 20} MiB; not read")
    try:
        return json.loads(data)
    except ValueError as exc:
        raise ExportedProgramError(f"{label}: {info.filename} is not valid JSON ({exc})") from None


def _scan(graph_module: dict[str, Any], program: Program, prefix: str) -> set[str]:
    """Record the graph's device arguments and input devices; return the buffer FQNs, which .to() moves
    although the archive files non-persistent ones with the constants."""
    graph = graph_module["graph"]
    _scan_nodes(graph["nodes"], program, prefix)
    values = graph.get("tensor_values", {})
    buffers = set()
    for spec in graph_module.get("signature", {}).get("input_specs", []):
        if "buffer" in spec:
            buffers.add(spec["buffer"]["buffer_name"])
        elif "user_input" in spec:
            name = str((spec["user_input"]["arg"].get("as_tensor") or {}).get("name"))
            if name in values:
                program.inputs[prefix + name] = _device(values[name]["device"])
    return buffers


def _scan_nodes(nodes: list[dict[str, Any]], program: Program, prefix: str) -> None:
    for node in nodes:
        name = prefix + _node_name(node)
        devices, subgraphs = _arguments(node["inputs"])
        if devices:
            program.graph.setdefault(name, []).extend(devices)
        for subgraph in subgraphs:  # cond/map/while_loop bodies carry their own nodes
            _scan_nodes(subgraph["nodes"], program, f"{name}/")


def _node_name(node: dict[str, Any]) -> str:
    """Older graphs have no node names; the first output's name is the one the node had."""
    if node.get("name"):
        return str(node["name"])
    outputs = [o["as_tensor"]["name"] for o in node.get("outputs", []) if isinstance(o.get("as_tensor"), dict)]
    return outputs[0] if outputs else str(node["target"])


def _arguments(value: object) -> tuple[list[str], list[dict[str, Any]]]:
    """Devices and nested graphs anywhere in a node's arguments (lists, dicts of arguments)."""
    devices: list[str] = []
    subgraphs: list[dict[str, Any]] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            if isinstance(item.get("as_device"), dict):
                devices.append(_device(item["as_device"]))
            elif isinstance(item.get("as_graph"), dict):
                subgraphs.append(item["as_graph"]["graph"])
            else:
                stack.extend(item.values())
    return devices, subgraphs


def _state(
    archive: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo], names: tuple[str, ...], label: str
) -> list[tuple[str, str]]:
    """(FQN, device) of the stored state, from the first of `names` present: a payload config's tensor
    metadata (entries without it are custom objects, which have no device), or the storage locations of a
    nested torch.save archive, read in place so the weights' bytes are never loaded."""
    name = next((n for n in names if n in members), None)
    if name is None:
        return []
    if name.endswith(".json"):
        config = _json(archive, members[name], label)["config"]
        return [
            (fqn, _device(meta["tensor_meta"]["device"])) for fqn, meta in config.items() if meta.get("tensor_meta")
        ]
    with archive.open(members[name]) as stream:
        return saved_tensors(stream, f"{label}: {name}")


def _device(device: dict[str, Any]) -> str:
    index = device.get("index")
    return str(device["type"]) if index is None else f"{device['type']}:{index}"


def _same(a: str, b: str) -> bool:
    """`cuda` without an index is whichever GPU is current, so it is taken to agree with any `cuda:N`."""
    return a == b or (a.split(":")[0] == b.split(":")[0] and (":" not in a or ":" not in b))


def exported_findings(path: Path, env: dict[str, Any] | None, named: tuple[str, ...] = ()) -> list[Finding]:
    """Whether the program's graph pins devices, and whether they disagree with the two devices the
    error names (`named`), its weights or this machine."""
    try:
        program = read_program(path)
    except ExportedProgramError as exc:
        return [Finding(PROBE, "could-not-check", str(exc))]
    pinned = program.pinned()
    weights = Counter(program.weights.values())
    findings = [Finding(PROBE, "info", _seen(path.name, program, weights), facts=_facts(program, weights))]
    if not pinned:
        return [
            *findings,
            _verdict("rules-out", "names no device and holds no tensor constants, so moving its weights moves all"),
        ]
    stray = sorted(d for d in pinned if not any(_same(d, w) for w in weights))
    clash = _clash(pinned, named)
    if clash:
        findings.append(_verdict("confirms", clash))
    elif weights and stray:
        findings.append(
            _verdict("confirms", f"pins {', '.join(stray)} in its graph while its weights are on {', '.join(weights)}")
        )
    elif env is not None and env.get("torch"):
        why = _elsewhere(pinned, bool(env.get("cuda_available")), int(env.get("device_count") or 0))
        if why:
            findings.append(_verdict("confirms", why))
    return findings


def _clash(pinned: set[str], named: tuple[str, ...]) -> str | None:
    """The error names the pinned device and another one: the program ran elsewhere, its constants did not."""
    if len(named) < 2:
        return None
    held = [d for d in named if d in pinned]
    others = [d for d in named if d not in held]
    if not held or not others:
        return None
    return (
        f"pins {_list(set(held))} in its graph, one of the devices the error names ({' and '.join(named)}): "
        f"run on {', '.join(others)}, its baked-in tensors stayed on {', '.join(held)}"
    )


def _elsewhere(pinned: set[str], available: bool, count: int) -> str | None:
    """Why this machine cannot run the program where its graph says, if it cannot."""
    cuda = {int(m[1] or 0) for m in map(_CUDA.fullmatch, pinned) if m}
    if cuda and not available:
        return f"pins {_list(pinned)} in its graph and this machine has no usable CUDA"
    if cuda and max(cuda) >= count:
        return f"pins cuda:{max(cuda)} in its graph and this machine has {count} GPU(s)"
    if not cuda and available:
        return f"pins {_list(pinned)} in its graph; moved to this machine's GPU with .to(), those stay behind"
    return None


def _seen(name: str, program: Program, weights: Counter[str]) -> str:
    by_device: dict[str, list[str]] = {}
    for node, devices in program.graph.items():
        for device in dict.fromkeys(devices):
            by_device.setdefault(device, []).append(node)
    graph = "; ".join(
        f"{device} at {len(nodes)} node(s) ({', '.join(nodes[:_LISTED])}{', ...' if len(nodes) > _LISTED else ''})"
        for device, nodes in by_device.items()
    )
    parts = [f"the graph names {graph}" if graph else "the graph names no device"]
    if program.constants:
        parts.append("tensor constants: " + _counted(Counter(program.constants.values())))
    parts.append("weights: " + (_counted(weights) if weights else "none"))
    if program.inputs:
        parts.append("exported with inputs on " + _list(set(program.inputs.values())))
    return f"{name}: " + "; ".join(parts)


def _facts(program: Program, weights: Counter[str]) -> dict[str, Any]:
    return {
        "graph": {node: ", ".join(dict.fromkeys(devices)) for node, devices in program.graph.items()},
        "constants": dict(program.constants),
        "weights": dict(weights),
        "inputs": dict(program.inputs),
    }


def _counted(counts: Counter[str]) -> str:
    return ", ".join(f"{n} on {device}" for device, n in counts.items())


def _list(devices: set[str]) -> str:
    return ", ".join(sorted(devices))


def _verdict(verdict: Verdict, why: str) -> Finding:
    return Finding(PROBE, verdict, f"the exported program {why}", entries=(ENTRY,))
