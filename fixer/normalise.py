"""Placeholders for the parts of a message that vary between runs, so similar errors compare equal.

Device *kinds* survive (`cuda:3` -> `<cuda>`), because "cuda and cpu" and "cuda and cuda" point to
different causes; ordinals, addresses, shapes, numbers, dtypes and paths do not.
"""

from __future__ import annotations

import re

VERSION = 1

_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        (r"0x[0-9a-fA-F]+", "<addr>"),
        (r"(?:[A-Za-z]:)?(?:[\\/][\w.\- ]+)+\.py\w?", "<path>"),
        (r"torch\.cuda\.\w+Tensor|CUDA\w*Type", "<cuda-type>"),
        (r"MPS\w*Type", "<mps-type>"),
        (r"torch\.(?:Float|Double|Half|BFloat16|Long|Int|Short|Byte|Bool|Char)Tensor|CPU\w*Type", "<cpu-type>"),
        (r"\b(cuda|mps|xpu|npu|hpu|xla)(?::\d+)?\b", r"<\1>"),
        (r"\bcpu\b", "<cpu>"),
        (r"\bmeta\b", "<meta>"),
        (r"torch\.Size\(\[[\d, ]*\]\)|\(\d+(?:, ?\d+)+\)|\[\d+(?:, ?\d+)+\]", "<shape>"),
        (
            r"\b(?:torch\.)?(?:float(?:16|32|64)?|bfloat16|half|double|int(?:8|16|32|64)?|uint8|bool|"
            r"Float|Double|Half|BFloat16|Long|Int)\b",
            "<dtype>",
        ),
        (r"\b\d+(?:\.\d+)?\b", "<n>"),
        (r"\s+", " "),
    )
)


def normalise(message: str) -> str:
    text = message
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text.strip()
