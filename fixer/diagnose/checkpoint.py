"""Where a checkpoint's tensors were when it was saved, read from the file without loading a tensor.

A `torch.save` zip archive records, for every storage, the device it lived on (`cuda:1`, `cpu`) in the
pickle that describes the object. This probe walks that pickle with an unpickler that imports
nothing and runs nothing: tensors become `Saved(location)` records, any other class a placeholder.
So a checkpoint can be inspected on a machine without a GPU, without the classes that wrote it, and
without trusting it.
"""

from __future__ import annotations

import io
import pickle
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from fixer.diagnose.findings import Finding, Verdict


class CheckpointError(Exception):
    """The file is not a checkpoint this probe can read; the message says why."""


@dataclass(frozen=True)
class Saved:
    """A tensor as the checkpoint recorded it: the device its storage was saved from."""

    location: str


class _Opaque:
    """Stands in for any class named in the pickle: it is never imported, its state is just kept."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        self.args = args

    def __setstate__(self, state: object) -> None:
        self.state = state


class _StateDict(dict[Any, Any]):
    """The OrderedDict `state_dict()` returns carries a `_metadata` attribute, which pickle restores
    after the items: a plain dict has nowhere to put it."""

    def __setstate__(self, state: object) -> None:
        self.state = state


def _rebuild_tensor(storage: object, *args: object, **kwargs: object) -> object:
    return storage


def _rebuild_parameter(data: object, *args: object, **kwargs: object) -> object:
    return data


_REBUILDERS = {
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("collections", "OrderedDict"): _StateDict,
}


class _LocationUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        return _REBUILDERS.get((module, name), _Opaque)

    def persistent_load(self, pid: Any) -> object:
        # ('storage', storage type, key, location, numel), as torch.save writes it
        if isinstance(pid, tuple) and len(pid) >= 4 and pid[0] == "storage":
            return Saved(str(pid[3]))
        raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")


Role = Literal["weights", "optimizer", "other"]


@dataclass(frozen=True)
class Group:
    """Tensors that belong together: a state dict of weights, an optimizer's state, or the rest of a key."""

    name: str  # the key path, as `model`, `trainer.var_wo_ddp`, `trainer.optim.state`, `trainer.optim.state.step`
    role: Role


def read_groups(path: Path) -> dict[Group, Counter[str]]:
    """Saved tensors per group, counted by device, however deep the trainer nests its state dicts."""
    groups: dict[Group, Counter[str]] = {}
    for group, saved in _grouped(_load(path, str(path)), "", None):
        groups.setdefault(group, Counter())[saved.location] += 1
    return groups


def read_locations(path: Path) -> dict[str, Counter[str]]:
    """Saved tensors per group name ('model', 'optimizer.state', ...), counted by device."""
    return {group.name: counts for group, counts in read_groups(path).items()}


def saved_tensors(source: Path | IO[bytes], label: str) -> list[tuple[str, str]]:
    """Every saved tensor as (key path, device): callers that match tensors by name, such as a state dict
    nested in another archive, need the keys that `read_locations` folds into groups."""
    return [(key, saved.location) for key, saved in _walk(_load(source, label), "")]


def _load(source: Path | IO[bytes], label: str) -> object:
    try:
        with zipfile.ZipFile(source) as archive:
            names = [n for n in archive.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
            if not names:
                raise CheckpointError(f"{label}: no data.pkl inside; not a torch.save archive")
            payload = archive.read(names[0])
    except zipfile.BadZipFile:
        raise CheckpointError(f"{label}: not a zip archive (legacy torch.save format is not read)") from None
    except NotImplementedError as exc:  # zipfile's word for an encrypted member or a newer zip version
        raise CheckpointError(f"{label}: an archive this reader cannot open ({exc})") from None
    except OSError as exc:
        raise CheckpointError(f"{label}: cannot read ({exc.strerror or exc})") from None
    try:
        return _LocationUnpickler(io.BytesIO(payload)).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as exc:
        raise CheckpointError(f"{label}: cannot read its contents ({exc})") from None


def _walk(node: object, key: str) -> Iterator[tuple[str, Saved]]:
    if isinstance(node, Saved):
        yield key, node
    elif isinstance(node, dict):
        for name, child in node.items():
            yield from _walk(child, f"{key}.{name}" if key else str(name))
    elif isinstance(node, list | tuple):
        for index, child in enumerate(node):
            yield from _walk(child, f"{key}.{index}" if key else str(index))
    elif isinstance(node, _Opaque):
        yield from _walk(getattr(node, "state", None), key)


def _grouped(node: object, key: str, group: Group | None) -> Iterator[tuple[Group, Saved]]:
    """Tensors with their group, recognised by shape rather than by key: a dict with `state` and
    `param_groups` is an optimizer's state dict, a dict holding only tensors is a module's.

    Step counters get a group of their own: Adam-style optimizers keep them on the CPU by design
    (unless fused or capturable, and load_state_dict moves those), so a CPU `step` beside GPU weights
    is how every healthy checkpoint looks, not a sign of state left apart."""
    if isinstance(node, _Opaque):
        yield from _grouped(getattr(node, "state", None), key, group)
    elif isinstance(node, Saved):
        yield group or Group(key.split(".")[0] if "." in key else "<top level>", "other"), node
    elif isinstance(node, dict) and group is None and {"state", "param_groups"} <= node.keys():
        state = f"{key}.state" if key else "state"
        for slot, child in _walk(node["state"], ""):
            yield Group(f"{state}.step" if slot.split(".")[-1] == "step" else state, "optimizer"), child
    elif isinstance(node, dict) and group is None and node and all(isinstance(v, Saved) for v in node.values()):
        yield from ((Group(key or "<top level>", "weights"), child) for _, child in _walk(node, key))
    elif isinstance(node, dict):
        for name, child in node.items():
            yield from _grouped(child, f"{key}.{name}" if key else str(name), group)
    elif isinstance(node, list | tuple):
        for index, child in enumerate(node):
            yield from _grouped(child, f"{key}.{index}" if key else str(index), group)


def checkpoint_findings(path: Path, env: dict[str, Any] | None) -> list[Finding]:
    """What the saved devices say, given this machine's devices (from the env probe, when it ran)."""
    try:
        grouped = read_groups(path)
    except CheckpointError as exc:
        return [Finding("checkpoint-devices", "could-not-check", str(exc))]
    if not grouped:
        return [Finding("checkpoint-devices", "info", f"{path.name} holds no tensors")]
    groups = {group.name: counts for group, counts in grouped.items()}
    facts = {group: dict(counts) for group, counts in groups.items()}
    seen = ", ".join(
        f"{group}: " + ", ".join(f"{n} on {d}" for d, n in counts.items()) for group, counts in facts.items()
    )
    findings = [Finding("checkpoint-devices", "info", f"{path.name} was saved with {seen}", facts=facts)]
    cuda = {
        int(d.split(":")[1]) if ":" in d else 0 for counts in groups.values() for d in counts if d.startswith("cuda")
    }
    if env is not None and env.get("torch"):
        available, count = bool(env.get("cuda_available")), int(env.get("device_count") or 0)
        if cuda and not available:
            findings.append(
                _verdict(
                    "confirms",
                    "torch-load-without-map-location",
                    "holds CUDA tensors and this machine has no usable CUDA",
                )
            )
        elif cuda and max(cuda) >= count:
            findings.append(
                _verdict(
                    "confirms",
                    "torch-load-missing-ordinal",
                    f"names cuda:{max(cuda)} and this machine has {count} GPU(s)",
                )
            )
        elif not cuda:
            findings.append(_verdict("rules-out", "torch-load-without-map-location", "holds no CUDA tensors"))
    weights = {d for group, counts in grouped.items() if group.role == "weights" for d in counts}
    state = {
        d
        for group, counts in grouped.items()
        if group.role == "optimizer" and not group.name.endswith(".step")
        for d in counts
    }
    if weights and state - weights:
        findings.append(
            _verdict(
                "confirms",
                "optimizer-state-after-resume",
                f"has its optimizer state saved on {', '.join(sorted(state))} "
                f"but its weights on {', '.join(sorted(weights))}",
            )
        )
    return findings


def _verdict(verdict: Verdict, entry: str, why: str) -> Finding:
    return Finding("checkpoint-devices", verdict, f"the checkpoint {why}", entries=(entry,))
