"""The machine probes: torch build, devices, ranks and the libraries that place tensors.

`diagnose` reads the facts in a child interpreter with a time limit, because importing torch or
initialising CUDA can hang on a broken driver; a probe must answer "could not check", never hang or
raise. Turning facts into verdicts is a pure function, so it can be checked against any machine.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from fixer.diagnose.findings import Finding, Verdict
from fixer.diagnose.provenance import Provenance
from fixer.explain.evidence import Evidence

TIMEOUT_S = 60
# "cuda:2", "CUDA device 2" (torch.load), "device_ids[0]" is not an ordinal of the machine
_ORDINAL = re.compile(r"\bcuda:(\d+)|\bCUDA device (\d+)\b")
_ORDINAL_ENTRIES = ("hardcoded-device-ordinal", "torch-load-missing-ordinal", "more-ranks-than-gpus")
_MULTI_GPU_ENTRIES = ("dataparallel-params-not-on-device0", "keras-torch-dataparallel")
_DESERIALIZED_ON_CUDA = re.compile(r"deserialize object on (?:a )?CUDA device", re.I)
_KERAS_WRAPPER = re.compile(r"Exception encountered when calling \w+\.call\(\)")
_ACCELERATE_ENTRIES = ("accelerate-hooks-conflict", "accelerate-offloaded-model-moved", "device-map-auto-split")


def read_machine(timeout: float = TIMEOUT_S) -> dict[str, Any] | str:
    """The machine's facts, read in a child interpreter, or why they could not be read."""
    package_root = str(Path(__file__).resolve().parents[2])  # fixer importable even from a source tree
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (package_root, os.environ.get("PYTHONPATH"))))}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "fixer.diagnose.machine"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=env,
        )
        facts: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return f"importing torch took longer than {timeout:.0f} s"
    except (IndexError, json.JSONDecodeError):
        last = done.stderr.strip().splitlines()[-1:] or ["no output"]
        return f"the environment probe failed: {last[0]}"
    return facts


def environment_findings(
    facts: dict[str, Any] | str,
    evidence: Evidence | None = None,
    *,
    origin: Provenance | None = None,
    this_process: bool = False,
) -> list[Finding]:
    """Verdicts from the machine's facts (or why they could not be read), sharpened by what the
    traceback names when there is one. `origin`: whether that traceback was shown to be produced here
    (None: there is none). A traceback raised in `this_process` (`fixer run`, the hooks) was; one that
    puts a tensor on a device this machine lacks was not, unless raised in this process, where a
    stand-in (FakeTensorMode) can show one. About a traceback not shown to be produced here, the facts
    confirm and rule out nothing: they are said as this machine's, with why they decide nothing."""
    elsewhere = origin is not None and not origin.here and not this_process
    findings = _verdicts(facts, evidence, elsewhere=elsewhere)
    if isinstance(facts, str) or this_process:
        return findings
    why = undecided(facts, evidence, origin)
    if why is None:
        return findings
    return [_as_context(finding, why) for finding in findings]


def undecided(facts: dict[str, Any], evidence: Evidence | None, origin: Provenance | None) -> str | None:
    """Why this machine's facts cannot decide between the traceback's causes; None when they can
    (no traceback, or one shown to be produced here on devices this machine has)."""
    if origin is not None and not origin.here:
        return origin.why
    return _device_missing_here(facts, evidence)


def _device_missing_here(facts: dict[str, Any], evidence: Evidence | None) -> str | None:
    """A tensor the message puts on `cuda:3` (or MPS) lived where the error happened: a machine without
    that device is not the one. Messages about a device that is missing name none (`invalid device
    ordinal`, `deserialize object on CUDA device 2`), and neither do the stand-ins (meta) count."""
    if evidence is None or not facts.get("torch"):
        return None
    count = int(facts.get("device_count") or 0) if facts.get("cuda_available") else 0
    for device in evidence.devices:
        kind, _, ordinal = device.lower().removeprefix("torch.").partition(":")
        if kind.startswith("cuda") and (count == 0 or (ordinal.isdigit() and int(ordinal) >= count)):
            return f"the error shows a tensor on {device}, which this machine does not have"
        if kind == "mps" and not facts.get("mps_available"):
            return "the error shows a tensor on MPS, which this machine does not have"
    return None


def _as_context(finding: Finding, why: str) -> Finding:
    """This machine's fact, said as one, with no verdict on the traceback's causes; why it decides
    nothing is said once by `diagnose` (the traceback-origin row) and kept in each finding's facts."""
    if finding.verdict == "could-not-check":
        return finding
    said = f"on this machine: {finding.summary} (decides nothing about this traceback)"
    return Finding(finding.probe, "info", said, finding.entries, {**finding.facts, "undecided": why})


def _verdicts(facts: dict[str, Any] | str, evidence: Evidence | None, *, elsewhere: bool) -> list[Finding]:
    if isinstance(facts, str):
        return [Finding("env-torch-build", "could-not-check", facts)]
    if not facts.get("torch"):
        why = f"torch does not import: {facts.get('torch_error')}"
        return [Finding("env-torch-build", "could-not-check", why, facts=facts)]
    count = int(facts.get("device_count") or 0)
    build = "CPU-only"
    if facts.get("cuda_build") or facts.get("hip_build"):
        build = f"CUDA {facts['cuda_build']}" if facts.get("cuda_build") else f"ROCm {facts['hip_build']}"
    ordinals = sorted(_ordinals(evidence))
    return [
        Finding("env-torch-build", "info", f"torch {facts['torch']} ({build}); {count} GPU(s) usable", facts=facts),
        *_torch_build(facts, build, evidence),
        *_cuda(facts, count, ordinals, evidence),
        *_visible_devices(facts, ordinals),
        *_distributed(facts, count),
        *_mps(facts),
        *_torch_version(facts, evidence),
        *_libraries(facts, ran_through(evidence), elsewhere=elsewhere),
        *_keras(facts, ran_through(evidence), elsewhere=elsewhere),
    ]


def ran_through(evidence: Evidence | None) -> frozenset[str]:
    """The libraries the traceback proves ran, on whatever machine: those its frames are in, and Keras
    when the message is Keras 3's own wrapper of a layer's error."""
    if evidence is None:
        return frozenset()
    return evidence.libraries | ({"keras"} if _KERAS_WRAPPER.search(evidence.message) else set())


def _torch_version(facts: dict[str, Any], evidence: Evidence | None) -> list[Finding]:
    """Before 2.1, `load_state_dict` left fused and capturable Adam's `step` counters wherever the
    checkpoint put them (the CPU, after map_location="cpu"), even with the model already on the GPU:
    pytorch/pytorch#103256, fixed in 2.1. Said only when the traceback is about those counters."""
    if evidence is None or not (evidence.argument == "state_steps" or (evidence.op or "").startswith("fused_adam")):
        return []
    version = _release(str(facts.get("torch", "")))
    if version is None:
        return []
    entry = ("optimizer-state-after-resume",)
    if version < (2, 1):
        why = (
            f"torch {facts['torch']} is older than 2.1, whose load_state_dict leaves a fused optimizer's step "
            "counters on the CPU after a CPU-mapped checkpoint (pytorch#103256): upgrade, or move them after loading"
        )
        return [Finding("env-torch-version", "confirms", why, entry)]
    why = (
        f"torch {facts['torch']} moves fused step counters on load (fixed in 2.1, pytorch#103256): under it, "
        "counters found apart were left there by the code's order"
    )
    return [Finding("env-torch-version", "info", why, entry)]


def _release(version: str) -> tuple[int, int] | None:
    found = re.match(r"(\d+)\.(\d+)", version)
    return (int(found.group(1)), int(found.group(2))) if found else None


def _ordinals(evidence: Evidence | None) -> set[int]:
    if evidence is None:
        return set()
    text = "\n".join((*evidence.messages, *evidence.devices))
    return {int(a or b) for a, b in _ORDINAL.findall(text)}


def _torch_build(facts: dict[str, Any], build: str, evidence: Evidence | None) -> list[Finding]:
    """A CPU-only build is the mechanism of "not compiled with CUDA" only for code that asked for CUDA:
    about an error between meta and the CPU it is a fact, not a verdict."""
    cpu_only = not facts.get("cuda_build") and not facts.get("hip_build")
    why = "this PyTorch build has no CUDA support" if cpu_only else f"this PyTorch build supports {build}"
    verdict: Verdict = "rules-out" if not cpu_only else "confirms" if _asks_for_cuda(evidence) else "info"
    return [Finding("env-torch-build", verdict, why, ("torch-not-compiled-with-cuda",))]


def _asks_for_cuda(evidence: Evidence | None) -> bool:
    """No traceback (a check of the machine alone), or one whose error involves CUDA."""
    if evidence is None:
        return True
    return any("cuda" in d.lower() for d in evidence.devices) or any("cuda" in m.lower() for m in evidence.messages)


def _cuda(facts: dict[str, Any], count: int, ordinals: list[int], evidence: Evidence | None) -> list[Finding]:
    """No CUDA here confirms a load without map_location only for an error that shows such a load (the
    deserializer's own message); for any other error it is a fact about the machine."""
    if not facts.get("cuda_available"):
        loaded = evidence is not None and any(_DESERIALIZED_ON_CUDA.search(m) for m in evidence.messages)
        why = (
            "CUDA is not usable here, so tensors saved on a GPU cannot be loaded back onto one"
            if loaded
            else "CUDA is not usable here: a checkpoint saved on a GPU loads here only with map_location"
        )
        verdict: Verdict = "confirms" if loaded else "info"
        return [Finding("env-cuda", verdict, why, ("torch-load-without-map-location",), {"cuda_available": False})]
    names = ", ".join(facts.get("devices") or [])
    findings = [Finding("env-cuda", "info", f"{count} GPU(s): {names}", facts={"devices": facts.get("devices")})]
    if ordinals and max(ordinals) >= count:
        why = f"the error names GPU {max(ordinals)} but torch sees {count} GPU(s) here, numbered from 0"
        findings.append(Finding("env-cuda", "confirms", why, _ORDINAL_ENTRIES))
    elif ordinals:
        why = f"every GPU the error names exists here (torch sees {count})"
        findings.append(Finding("env-cuda", "rules-out", why, _ORDINAL_ENTRIES[:2]))
    if count < 2:
        why = "with fewer than two GPUs DataParallel runs the model as it is and never makes this check"
        findings.append(Finding("env-cuda", "rules-out", why, _MULTI_GPU_ENTRIES))
    return findings


def _visible_devices(facts: dict[str, Any], ordinals: list[int]) -> list[Finding]:
    value = facts["env"].get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return [Finding("env-visible-devices", "info", "CUDA_VISIBLE_DEVICES is not set: every GPU is visible")]
    visible = [part for part in value.split(",") if part.strip()]
    findings = [
        Finding(
            "env-visible-devices",
            "info",
            f"CUDA_VISIBLE_DEVICES={value}: this process sees {len(visible)} GPU(s), renumbered from cuda:0",
            facts={"CUDA_VISIBLE_DEVICES": value},
        )
    ]
    if ordinals and max(ordinals) >= len(visible):
        why = f"CUDA_VISIBLE_DEVICES={value} leaves no GPU {max(ordinals)}: the visible ones are cuda:0 upwards"
        findings.append(Finding("env-visible-devices", "confirms", why, _ORDINAL_ENTRIES[:2]))
    return findings


def _distributed(facts: dict[str, Any], count: int) -> list[Finding]:
    env = facts["env"]
    ranks = {k: env[k] for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE") if env.get(k) is not None}
    if not ranks:
        why = "no RANK/LOCAL_RANK/WORLD_SIZE here: run under your launcher (`torchrun ... -m fixer run`) to check ranks"
        return [Finding("env-distributed", "info", why)]
    shown = ", ".join(f"{k}={v}" for k, v in ranks.items())
    findings = [Finding("env-distributed", "info", shown, facts=ranks)]
    local = [int(v) for k in ("LOCAL_RANK", "LOCAL_WORLD_SIZE") if (v := ranks.get(k, "")).isdigit()]
    if facts.get("cuda_available") and local:
        needed = max(local[0] + 1, local[-1])
        verdict: Verdict = "confirms" if needed > count else "rules-out"
        why = f"this node's ranks need {needed} GPU(s) and torch sees {count}"
        findings.append(Finding("env-distributed", verdict, why, ("more-ranks-than-gpus",)))
    return findings


def _mps(facts: dict[str, Any]) -> list[Finding]:
    available = facts.get("mps_available")
    return [Finding("env-mps", "info", f"Apple's MPS backend is {'available' if available else 'not available'}")]


def _libraries(facts: dict[str, Any], proven: frozenset[str], *, elsewhere: bool) -> list[Finding]:
    """A library missing here rules its causes out only when the traceback does not show it running:
    a traceback pasted from another machine proves what ran there."""
    versions: dict[str, str] = facts.get("libraries") or {}
    shown = ", ".join(f"{name} {version}" for name, version in versions.items()) or "none of the placement libraries"
    findings = [Finding("env-libraries", "info", f"installed: {shown}", facts={"libraries": versions})]
    for library, entries in (("accelerate", _ACCELERATE_ENTRIES), ("bitsandbytes", ("bnb-quantized-model-to",))):
        if library in versions:
            continue
        if library in proven or elsewhere:
            why = f"{library} is not installed here, which says nothing about where the traceback ran"
            findings.append(Finding("env-libraries", "info", why, entries))
        else:
            findings.append(Finding("env-libraries", "rules-out", f"{library} is not installed", entries))
    return findings


def _keras(facts: dict[str, Any], proven: frozenset[str], *, elsewhere: bool) -> list[Finding]:
    """The shell's KERAS_BACKEND and keras.json say how a script run from here starts, but a script may
    set the backend in code (`os.environ["KERAS_BACKEND"] = "torch"` before the import): only a
    backend named by both and not contradicted by the traceback's frames rules the cause out."""
    version = (facts.get("libraries") or {}).get("keras")
    entry = ("keras-torch-dataparallel",)
    if "keras" in proven:
        return [Finding("env-keras", "info", "the traceback ran through Keras: its backend is what it shows", entry)]
    if version is None:
        if elsewhere:
            why = "Keras is not installed here, which says nothing about where the traceback ran"
            return [Finding("env-keras", "info", why, entry)]
        return [Finding("env-keras", "rules-out", "Keras is not installed", entry)]
    named = facts["env"].get("KERAS_BACKEND") or facts.get("keras_config_backend")
    facts_seen = {"keras": version, "backend": named or "unset"}
    if named is None:
        why = f"Keras {version}: no backend set in the shell or keras.json; the script may set KERAS_BACKEND itself"
        return [Finding("env-keras", "could-not-check", why, entry, facts_seen)]
    if named != "torch":
        why = f"Keras {version} is set to {named} here, unless the script sets KERAS_BACKEND itself"
        return [Finding("env-keras", "info", why, entry, facts_seen)]
    return [Finding("env-keras", "info", f"Keras {version} on the torch backend", facts=facts_seen)]
