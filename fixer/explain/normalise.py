"""Placeholders for the parts of a message that vary between runs, so similar errors compare equal.

Device *kinds* survive (`cuda:3` -> `<CUDA>`), because "cuda and cpu" and "cuda and cuda" point to
different causes; ordinals, addresses, shapes, numbers, dtypes and paths do not.
"""

from __future__ import annotations

import re
from collections.abc import Callable

VERSION = 2

_PY_SUFFIX = re.compile(r"\.py\w?")


def path_to_placeholder(found: re.Match[str]) -> str:
    """A path-like run up to its last `.py` name becomes <PATH>. Matching the run first and looking
    for the suffix inside it keeps this linear: a pattern that must end in `.py` rescans a long run
    of `/a/a/a...` from every slash."""
    token = found.group(0)
    end = max((suffix.end() for suffix in _PY_SUFFIX.finditer(token)), default=None)
    return token if end is None else "<PATH>" + token[end:]


_Replacement = str | Callable[[re.Match[str]], str]
_RULES: tuple[tuple[re.Pattern[str], _Replacement], ...] = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        # The lines CUDA appends to every error (MESSAGES.md §11), which say nothing about this one.
        (
            r"(?i:CUDA kernel errors might be asynchronously reported at some other API call, ?so the stacktrace "
            r"below might be incorrect\.?|For debugging consider passing CUDA_LAUNCH_BLOCKING=1\.?|Compile with "
            r"`TORCH_USE_CUDA_DSA` to enable device-side assertions\.?|GPU device may be out of range, do you have "
            r"enough GPUs\?|Device-side assertions were explicitly omitted for this error check[^.]*\.)",
            "",
        ),
        (r"0x[0-9a-fA-F]+", "<ADDR>"),
        (r"(?:[A-Za-z]:)?(?:[\\/][\w.\- ]+)+", path_to_placeholder),
        (r"torch\.cuda\.\w+Tensor|CUDA\w*Type", "<CUDA_TYPE>"),
        (r"MPS\w*Type", "<MPS_TYPE>"),
        (
            r"torch\.(?:Float|Double|Half|BFloat16|Long|Int|Short|Byte|Bool|Char)Tensor|CPU\w*Type",
            "<CPU_TYPE>",
        ),
        (r"\b(cuda|mps|xpu|npu|hpu|xla)(?::\d+)?\b", lambda m: f"<{m.group(1).upper()}>"),
        (r"\bcpu\b", "<CPU>"),
        (r"\bmeta\b", "<META>"),
        (r"torch\.Size\(\[[\d, ]*\]\)|\(\d+(?:, ?\d+)+\)|\[\d+(?:, ?\d+)+\]", "<SHAPE>"),
        (
            r"\b(?:torch\.)?(?:float(?:16|32|64)?|bfloat16|half|double|int(?:8|16|32|64)?|uint8|bool|"
            r"Float|Double|Half|BFloat16|Long|Int)\b",
            "<DTYPE>",
        ),
        (r"\b\d+(?:\.\d+)?\b", "<N>"),
        (r"\s+", " "),
    )
)


def normalise(message: str) -> str:
    text = message
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text.strip()
