"""The `env` probe: torch build, devices, ranks and the libraries that place tensors.

It runs in a child interpreter with a time limit, because importing torch or initialising CUDA can
hang on a broken driver; a probe must answer "could not check", never hang or raise.
"""

from __future__ import annotations

import json
import subprocess
import sys

from fixer.diagnose.findings import Finding

TIMEOUT_S = 60
_LIBRARIES = ("keras", "lightning", "pytorch_lightning", "accelerate", "bitsandbytes", "transformers", "peft",
              "deepspeed")  # fmt: skip
_SCRIPT = r"""
import importlib.metadata as md, json, os
facts = {"env": {k: os.environ.get(k) for k in
         ("CUDA_VISIBLE_DEVICES", "LOCAL_RANK", "RANK", "WORLD_SIZE", "KERAS_BACKEND")}}
versions = {}
for name in LIBRARIES:
    try:
        versions[name] = md.version(name)
    except md.PackageNotFoundError:
        pass
facts["libraries"] = versions
try:
    import torch
except Exception as exc:
    facts["torch"] = None
    facts["torch_error"] = f"{type(exc).__name__}: {exc}"
else:
    facts["torch"] = torch.__version__
    facts["cuda_build"] = torch.version.cuda
    facts["hip_build"] = getattr(torch.version, "hip", None)
    facts["cuda_available"] = torch.cuda.is_available()
    facts["device_count"] = torch.cuda.device_count() if facts["cuda_available"] else 0
    facts["devices"] = [torch.cuda.get_device_name(i) for i in range(facts["device_count"])]
    facts["mps_available"] = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
    getter = getattr(torch, "get_default_device", None)
    facts["default_device"] = str(getter()) if getter else None
print(json.dumps(facts))
"""


def probe_environment(timeout: float = TIMEOUT_S) -> list[Finding]:
    script = _SCRIPT.replace("LIBRARIES", repr(_LIBRARIES))
    try:
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout, check=False
        )
        facts = json.loads(done.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return [Finding("env", "could-not-check", f"importing torch took longer than {timeout:.0f} s")]
    except (IndexError, json.JSONDecodeError):
        return [Finding("env", "could-not-check", "the environment probe printed nothing usable")]
    if not facts.get("torch"):
        return [Finding("env", "could-not-check", f"torch does not import: {facts.get('torch_error')}", facts=facts)]
    count = facts["device_count"]
    build = f"CUDA {facts['cuda_build']}" if facts["cuda_build"] else ("ROCm" if facts["hip_build"] else "CPU-only")
    findings = [Finding("env", "info", f"torch {facts['torch']} ({build}); {count} CUDA device(s) usable", facts=facts)]
    cpu_only = not facts["cuda_build"] and not facts["hip_build"]
    findings.append(
        Finding(
            "env-torch-build",
            "confirms" if cpu_only else "rules-out",
            "this PyTorch build has no CUDA support" if cpu_only else f"this PyTorch build supports {build}",
            entries=("torch-not-compiled-with-cuda",),
        )
    )
    return findings
