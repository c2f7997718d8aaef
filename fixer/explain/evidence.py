"""The facts a traceback gives about *where* tensors were: devices, the argument, the op, the libraries.

Device messages come in many shapes across PyTorch versions (see shared/MESSAGES.md); each shape
below says which device is the common one and which the odd one out, so the two wordings with
flipped device order (`found at least two devices, A and B` vs. 2.8's `but got X is on B, different
from other tensors on A`) yield the same facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from fixer.explain.libraries import normalise_path
from fixer.explain.parse import MAX_CODE_CHARS, Frame, Traceback

KNOWN_DEVICE = r"(?:cpu|meta|(?:cuda|mps|xpu|npu|hpu|xla|privateuseone)(?::\d+)?)"
_DEVICE_TOKEN = re.compile(rf"(?<![\w.'\"=(/-]){KNOWN_DEVICE}(?![\w-])")
# Inside a known sentence any `name:N` is a device: out-of-tree backends (`spyre:0`) included.
DEVICE = rf"(?:{KNOWN_DEVICE}|[a-z][a-z0-9_]*:\d+)"

# Each shape names the groups it has: com (the common device), off (the odd one out), arg, op.
# Type-name groups (com_type/off_type) carry legacy type names such as torch.cuda.FloatTensor.
# Kept as text and searched with `re.search`, whose cache compiles a shape the first time a message
# reaches it: a message stops at the first shape it has, so a run compiles only the shapes before it.
_SHAPES: tuple[str, ...] = (
    rf"but got (?P<arg>\w+) is on (?P<off>{DEVICE}), different from other tensors on (?P<com>{DEVICE})"
    r"(?: \(when checking argument in method (?P<op>\w+)\))?",
    # A paste cut just before the clause's closing parenthesis still names its argument and op.
    rf"found at least two devices\s*,?\s*(?P<com>{DEVICE}) and (?P<off>{DEVICE})!?"
    r"(?:\s*\(when checking (?:arugment|argument) for argument (?P<arg>\w+) in method (?P<op>\w+)(?:\)|$))?",
    r"Device Propagation for (?P<op>aten\.\w+)(?:\.\w+)?, found two different devices "
    rf"(?P<com>{DEVICE}), (?P<off>{DEVICE})",
    rf"found input tensor at (?P<com>{DEVICE}) and (?P<arg>hidden|parameter) tensor at (?P<off>{DEVICE})",
    r"Input type \((?P<com_type>[\w.:]+)\) and (?P<arg>weight|bias) type \((?P<off_type>[\w.:]+)\)",
    rf"Received (?P<com>{DEVICE}) and (?P<off>{DEVICE})",
    r"Tensor for (?:argument #\d+ )?'(?P<arg>\w+)' is on CPU,.*?expected (?:it|them) to be on GPU"
    r"(?: \(while checking arguments for (?P<op>\w+)\))?",
    r"Expected object of (?:device type|backend) (?P<com_type>\w+) but (?:got|found) (?:device type|backend) "
    r"(?P<off_type>\w+) for (?:argument|sequence element \d+ in sequence argument at position) #\d+ "
    r"'(?P<arg>\w+)'(?: in call to (?P<op>\w+))?",
    r"Expected object of type (?P<com_type>[\w.]+) but found type (?P<off_type>[\w.]+) "
    r"for argument #\d+ '(?P<arg>\w+)'",
    # TensorIterator before 1.6 expected the first operand's device: either side may be the odd one.
    r"expected (?:backend|device) (?P<com_type>[\w:]+) and dtype \w+ but got (?:backend|device) "
    r"(?P<off_type>[\w:]+) and dtype(?P<either>)",
    rf"expected device (?P<com>{DEVICE}) but got device (?P<off>{DEVICE})(?P<either>)",
    r"expected type (?P<com_type>torch\.[\w.]+) but got (?P<off_type>torch\.[\w.]+)(?P<either>)",
    rf"on device (?P<com>{DEVICE}) \(device_ids\[0\]\) but found one of them on device: (?P<off>{DEVICE})",
    rf"can't convert (?P<off>{DEVICE}) device type tensor to numpy",
    r"can't convert (?P<off_type>CUDA) tensor to numpy",
    r"Expected a '(?P<com_type>\w+)' device type for generator but found '(?P<off_type>\w+)'",
    rf"Tensor on device (?P<off>{DEVICE}) is not on the expected device (?P<com>{DEVICE})",
    rf"Devices (?P<com>{DEVICE}) and (?P<off>{DEVICE}) are not equal",
    rf"indices should be either on cpu or on the same device as the indexed tensor \((?P<com>{DEVICE})\)",
    # TensorIterator's out= and in-place check, 1.0-1.5: the output is the odd one out.
    r"output with (?:device|backend|type) (?P<off_type>[\w.:]+)(?: and dtype \w+)? doesn't match the desired "
    r"(?:device|backend|type) (?P<com_type>[\w.:]+)",
    # Checks of the device alone: equal names here are 0.4's misprint, never a dtype mismatch.
    r"Expected tensor to have (?P<com_type>\w+) (?:DeviceType|Backend), but got tensor with (?P<off_type>\w+) "
    r"(?:DeviceType|Backend)(?P<device_check>)(?: \(while checking arguments for (?P<op>\w+))?",
    rf"expected '(?P<arg>\w+)' to be a (?P<com_type>CPU) tensor, ?but got (?:a (?P<off_type>CUDA) tensor|tensor on "
    rf"(?P<off>{DEVICE}))",
    r"expected '(?P<arg>\w+)' to be (?P<com_type>CUDA), but got (?P<off_type>CPU)",
    rf"(?i:expected all tensors to be on the same device)\. Found: (?P<com>{DEVICE}), (?P<off>{DEVICE})",
    rf"Tensor for argument (?P<arg>\w+) is on (?P<off>{DEVICE}) but expected on (?P<com>mps)",
    rf"Expected scalars to be on CPU, got (?P<off>{DEVICE}) instead",
    r"Input and (?P<arg>hidden|parameter) CUDA tensors are not at the same GPU, found input tensor at "
    r"(?P<com>(?i:cuda):\d+) and (?:hidden|parameter) tensor at (?P<off>(?i:cuda):\d+)",
    # A legacy typed constructor (torch.FloatTensor(x), x.new(y)) given a tensor: it checks dtype and device
    # together, so one device on both sides means the dtypes differed.
    rf"expected TensorOptions\(dtype=[^,]*, device=(?P<com>{DEVICE}).*?\) \(got TensorOptions\(dtype=[^,]*, "
    rf"device=(?P<off>{DEVICE})(?P<dtype_check>)",
)


_OP_WRAPPER = re.compile(r"^wrapper_(?:[A-Z][A-Za-z]*_)?")  # codegen prefix and dispatch key
_OP_LEGACY = re.compile(r"^_thnn_|^_th_")  # TH/THNN names before 1.10


def device_kind(device: str) -> str:
    """`cuda:1` -> `cuda`; legacy type and backend names -> their device kind."""
    lowered = device.lower()
    if lowered.startswith("torch.cuda.") or lowered in {"cuda", "gpu"} or lowered.startswith("cuda"):
        return "cuda"
    if lowered.startswith("mps"):
        return "mps"
    if lowered.startswith(("torch.", "cpu")) or lowered.endswith("tensor"):
        return "cpu"
    if lowered.startswith("c10::") or lowered in {"float", "double", "half"}:
        return "dtype"
    return lowered.split(":", 1)[0]


@dataclass(frozen=True)
class Evidence:
    exception: str | None
    message: str
    messages: tuple[str, ...]
    devices: tuple[str, ...]
    offending: str | None
    common: str | None
    argument: str | None
    op: str | None
    libraries: frozenset[str]
    frame_lines: tuple[str, ...]
    text: str
    dtype_only: bool = False
    facts: dict[str, tuple[str, ...]] = field(default_factory=dict)  # detector id -> where it found its fact

    @cached_property
    def frames_lowered(self) -> str:
        """Every frame line in one lowered text: a regex whose literals it lacks matches no frame, so most
        frame rules are settled by one look, not one per frame."""
        return "\n".join(self.frame_lines).lower()

    @property
    def device_kinds(self) -> tuple[str, ...]:
        return tuple(sorted(device_kind(d) for d in self.devices))

    @property
    def offending_kind(self) -> str | None:
        return device_kind(self.offending) if self.offending else None


def normalise_op(raw: str | None) -> str | None:
    """`wrapper_CUDA___fused_adamw_` -> `fused_adamw_`; `_th_addmm` -> `addmm`; `aten.mm` -> `mm`."""
    if not raw:
        return None
    op = raw.removeprefix("aten.")
    op = _OP_WRAPPER.sub("", op)
    op = _OP_LEGACY.sub("", op)
    return op.lstrip("_") or None


def extract(tb: Traceback, *, read_code: bool = True, read_files: bool = True) -> Evidence:
    """The facts of a traceback; with `read_code`, the detectors' facts about the code it shows too, and
    with `read_files` also about the user's files it names, where they are on this machine."""
    # Users re-wrap long messages (`cpu\nand cuda:0`): the sentences are matched with their spaces unified.
    messages = tuple(dict.fromkeys(" ".join(m.split()) for m in tb.messages if m))  # a loop re-raising repeats one
    joined = "\n".join(messages)
    shape = next((m for p in _SHAPES if (m := re.search(p, joined, re.S))), None)
    groups = shape.groupdict() if shape else {}
    common = groups.get("com") or _kind_or_none(groups.get("com_type"))
    offending = groups.get("off") or _kind_or_none(groups.get("off_type"))
    if groups.get("either") is not None and common and offending and _left_behind(common, offending):
        # Where the wording does not say which side is odd, the CPU one is: a tensor left behind.
        common, offending = offending, common
    devices = _distinct([d for d in (common, offending) if d] if shape else _DEVICE_TOKEN.findall(joined))
    kinds = {device_kind(d) for d in devices}
    # Legacy type/backend sentences fire for dtype-only mismatches too: same device on both sides.
    checks_dtype = bool(groups.get("com_type")) or groups.get("dtype_check") is not None
    same_type = checks_dtype and len(kinds) == 1 and groups.get("device_check") is None
    dtype_only = same_type or "dtype" in kinds
    frames = tb.all_frames
    return Evidence(
        exception=tb.exception,
        message=tb.message,
        messages=messages,
        devices=devices,
        offending=offending,
        common=common,
        argument=groups.get("arg"),
        op=normalise_op(groups.get("op")),
        libraries=frozenset(f.library for f in frames if f.library),
        frame_lines=tuple(  # distinct: a rule asks whether any frame shows a thing, and recursion repeats them
            dict.fromkeys(
                f"{normalise_path(f.path)}:{f.function or ''}: {(f.code or '')[:MAX_CODE_CHARS]}" for f in frames
            )
        ),
        text=tb.text,
        dtype_only=dtype_only,
        facts=_facts(frames, tb.text, read_files, cut=tb.final.cut) if read_code else {},
    )


# Code that says its error in a comment on the line that raised it: `y = f(x)  # RuntimeError: ...`.
ERROR_IN_COMMENT = r"[^\S\n]*[^\s#][^\n]*?#\s*(?:\w+\.)*[A-Z]\w*(?:Error|Exception):"
# A fence, a prompt, a cell or such a line: a paste whose frames show no code may still show the code
# that ran.
_SHOWS_CODE = re.compile(rf"^\s*(?:```|~~~|>>>|In \[\d*\]:)|^{ERROR_IN_COMMENT}", re.MULTILINE)


def _facts(frames: tuple[Frame, ...], text: str, read_files: bool, *, cut: bool) -> dict[str, tuple[str, ...]]:
    """What the detectors find in the code the frames and the paste show; a paste without code costs no
    detector import."""
    if not any(frame.code or frame.is_user for frame in frames) and not _SHOWS_CODE.search(text):
        return {}
    from fixer.explain.detectors import Code, detect

    return detect(Code.of(frames, text, read_files=read_files, cut=cut))


def _left_behind(common: str, offending: str) -> bool:
    return device_kind(common) == "cpu" and device_kind(offending) not in ("cpu", "dtype")


def _kind_or_none(type_name: str | None) -> str | None:
    return device_kind(type_name) if type_name else None


def _distinct(devices: list[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for device in devices:
        seen.setdefault(device, None)
    return tuple(seen)
