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
from typing import IO, Any

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


def read_locations(path: Path) -> dict[str, Counter[str]]:
    """Saved tensors per top-level key ('model', 'optimizer.state', ...), counted by device."""
    groups: dict[str, Counter[str]] = {}
    for key, location in saved_tensors(path, str(path)):
        groups.setdefault(_group(key), Counter())[location] += 1
    return groups


def saved_tensors(source: Path | IO[bytes], label: str) -> list[tuple[str, str]]:
    """Every saved tensor as (key path, device): callers that match tensors by name, such as a state dict
    nested in another archive, need the keys that `read_locations` folds into groups."""
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
        root = _LocationUnpickler(io.BytesIO(payload)).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as exc:
        raise CheckpointError(f"{label}: cannot read its contents ({exc})") from None
    return [(key, saved.location) for key, saved in _walk(root, "")]


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


def _group(key: str) -> str:
    """`optimizer.state.3.exp_avg` -> `optimizer.state`; `model.encoder.weight` -> `model`.

    Step counters get a group of their own: Adam-style optimizers keep them on the CPU by design
    (unless fused or capturable, and load_state_dict moves those), so a CPU `step` beside GPU weights
    is how every healthy checkpoint looks, not a sign of state left apart."""
    parts = key.split(".")
    if len(parts) > 1 and parts[1] == "state":
        return ".".join(parts[:2]) + (".step" if parts[-1] == "step" else "")
    return parts[0] if len(parts) > 1 else "<top level>"


def checkpoint_findings(path: Path, env: dict[str, Any] | None) -> list[Finding]:
    """What the saved devices say, given this machine's devices (from the env probe, when it ran)."""
    try:
        groups = read_locations(path)
    except CheckpointError as exc:
        return [Finding("checkpoint-devices", "could-not-check", str(exc))]
    if not groups:
        return [Finding("checkpoint-devices", "info", f"{path.name} holds no tensors")]
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
    model, state = groups.get("model"), groups.get("optimizer.state")
    if model and state and set(state) - set(model):
        findings.append(
            _verdict(
                "confirms",
                "optimizer-state-after-resume",
                f"has its optimizer state saved on {', '.join(state)} but its model on {', '.join(model)}",
            )
        )
    return findings


def _verdict(verdict: Verdict, entry: str, why: str) -> Finding:
    return Finding("checkpoint-devices", verdict, f"the checkpoint {why}", entries=(entry,))
