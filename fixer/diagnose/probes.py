"""Every probe id a KB entry may name under `diagnostics`, where it runs and what it looks at.

This table imports nothing heavy: `fixer kb lint` checks entries against it, and the terminal and
the site tell readers which command settles a cause, without loading torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Where = Literal["machine", "traceback", "objects", "run", "checkpoint", "exported"]

RUNS_IN: dict[Where, str] = {
    "machine": "`fixer diagnose`",
    "traceback": "`fixer diagnose --traceback FILE`, on your files the traceback names",
    "objects": "`fixer run` and `fixer.audit(...)`",
    "run": "`fixer run`",
    "checkpoint": "`fixer diagnose --checkpoint PATH`",
    "exported": "`fixer diagnose --exported PATH`",
}


@dataclass(frozen=True)
class Probe:
    id: str
    where: Where
    looks_at: str


PROBES: dict[str, Probe] = {
    probe.id: probe
    for probe in (
        Probe("env-torch-build", "machine", "whether this PyTorch build was compiled with CUDA or ROCm"),
        Probe("env-cuda", "machine", "whether CUDA is usable and how many GPUs it sees, against those the error names"),
        Probe("env-visible-devices", "machine", "CUDA_VISIBLE_DEVICES, which renumbers the GPUs a process sees"),
        Probe("env-distributed", "machine", "RANK, LOCAL_RANK and WORLD_SIZE against the GPUs on the machine"),
        Probe("env-mps", "machine", "whether Apple's MPS backend is available"),
        Probe("env-libraries", "machine", "which placement libraries are installed: accelerate, bitsandbytes, ..."),
        Probe("env-keras", "machine", "the Keras version and KERAS_BACKEND"),
        Probe("env-torch-version", "machine", "the PyTorch release, against bugs fixed in later ones"),
        Probe("default-device", "run", "torch.get_default_device() in the failing process"),
        Probe("current-device", "run", "torch.cuda.current_device() in the failing process"),
        Probe("traceback-origin", "traceback", "whether the traceback ran here: its files, their lines, this torch"),
        Probe("user-frame-tensor-factories", "traceback", "tensor factories without device= in your failing functions"),
        Probe("user-frame-module-constructors", "traceback", "layers constructed inside forward()"),
        Probe("frame-tensor-devices", "run", "the tensors in your failing frame, and the device of each"),
        Probe("collective-tensor-devices", "run", "the process group's backend against the devices of its tensors"),
        Probe("module-devices", "objects", "every parameter and buffer by submodule and device: the odd one out"),
        Probe("module-plain-tensor-attributes", "objects", "tensors kept as plain attributes, which .to() skips"),
        Probe("module-unregistered-submodules", "objects", "layers kept in plain lists or dicts, which .to() skips"),
        Probe("optimizer-state-devices", "objects", "optimizer state tensors against their parameters' devices"),
        Probe("batch-devices", "objects", "the batch's tensors against the model's device"),
        Probe("loss-module-devices", "objects", "the loss module's weights against the model's device"),
        Probe("dataloader-generator", "objects", "a DataLoader's random generator against the default device"),
        Probe("accelerate-hooks", "objects", "accelerate hooks and the devices they move tensors to"),
        Probe("graph-module-devices", "objects", "device arguments baked into a traced or exported module's graph"),
        Probe("hf-device-map", "objects", "a transformers device_map that splits the model"),
        Probe("model-quantization", "objects", "whether the model is quantized by bitsandbytes"),
        Probe("fsdp-offload-config", "objects", "FSDP's CPU offload setting"),
        Probe("keras-dataparallel", "objects", "a Keras model wrapped by torch's DataParallel or DDP"),
        Probe("checkpoint-devices", "checkpoint", "the device each saved tensor came from, read without loading it"),
        Probe("exported-program-devices", "exported", "devices written into an exported program's graph"),
    )
}


def how_to_run(probe_id: str) -> str:
    probe = PROBES[probe_id]
    return f"{probe.looks_at} ({RUNS_IN[probe.where]})"
