"""Read this machine's facts: torch build, GPUs, ranks, placement libraries.

`fixer diagnose` calls `collect` in a child interpreter with a time limit (importing torch or
initialising CUDA can hang on a broken driver); `fixer run`, where the user's script has already
imported torch, calls it in the failing process itself, which also sees that script's default
device. Only the standard library is imported here until `collect` runs.
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
import os
from typing import Any

LIBRARIES = ("keras", "lightning", "pytorch_lightning", "accelerate", "bitsandbytes", "transformers", "peft",
             "deepspeed")  # fmt: skip
ENVIRONMENT = ("CUDA_VISIBLE_DEVICES", "LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "KERAS_BACKEND",
               "KERAS_HOME")  # fmt: skip


def collect() -> dict[str, Any]:
    facts: dict[str, Any] = {"env": {name: os.environ.get(name) for name in ENVIRONMENT}}
    facts["libraries"] = _versions()
    facts["keras_config_backend"] = _keras_config_backend()
    try:
        import torch
    except Exception as exc:  # a broken install is a fact to report, not a crash
        return {**facts, "torch": None, "torch_error": f"{type(exc).__name__}: {exc}"}
    available = torch.cuda.is_available()
    count = torch.cuda.device_count() if available else 0
    driver = getattr(torch._C, "_cuda_getDriverVersion", None)  # private, and absent from some releases
    mps = getattr(torch.backends, "mps", None)
    getter = getattr(torch, "get_default_device", None)  # torch 2.3+
    return {
        **facts,
        "torch": torch.__version__,
        "torch_dir": os.path.dirname(torch.__file__),  # whose torch a traceback's frames are
        "cuda_build": torch.version.cuda,
        "hip_build": getattr(torch.version, "hip", None),
        "cuda_available": available,
        "device_count": count,
        "devices": [torch.cuda.get_device_name(i) for i in range(count)],
        "current_device": torch.cuda.current_device() if available else None,
        "driver": driver() if available and driver else None,
        "mps_available": bool(mps and mps.is_available()),
        "default_device": str(getter()) if getter else None,
    }


def _versions() -> dict[str, str]:
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _keras_config_backend() -> str | None:
    """Keras 3 reads its backend from KERAS_BACKEND, else from this file; importing keras is slow."""
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    try:
        with open(os.path.join(home, "keras.json"), encoding="utf-8") as config:
            backend = json.load(config).get("backend")
    except (OSError, ValueError, AttributeError):
        return None
    return backend if isinstance(backend, str) else None


if __name__ == "__main__":
    print(json.dumps(collect()))
