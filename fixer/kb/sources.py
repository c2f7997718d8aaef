"""The messages PyTorch and the libraries built on it raise (kb/messages/<library>.yaml) as signatures
of the entries that cause them.

The hand-written signatures were drawn from what users pasted; the extracted messages are what PyTorch
and its libraries can say. Each message becomes a signature of the entries its record names, weighing
`SOURCE_WEIGHT`, that the matcher reads only where no hand-written signature reads the paste: where one
does, it decides which causes the message admits and how much it weighs. Where none does, the message
admits its causes and lets the evidence and the priors order them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from fixer.kb.paths import KBError
from fixer.kb.schema import Signature, SourceMessage

MESSAGES = Path("messages")  # under the built-in KB directory: one file a library, named after it
SOURCE_WEIGHT = 25
_HOLE = re.compile(r"\{[^{}]*\}")


def read_sources(directory: Path, read: Callable[[Path], object]) -> tuple[SourceMessage, ...]:
    """The extracted messages of every library, each told by its file's name; a KB without the
    directory has none. `read`: the catalog's safe YAML reader."""
    if not directory.is_dir():
        return ()
    messages: list[SourceMessage] = []
    for path in sorted(directory.glob("*.yaml")):
        data = read(path)
        items = (
            [{**item, "library": path.stem} if isinstance(item, dict) else item for item in data]
            if isinstance(data, list)
            else data or []  # not a list: validation says so
        )
        try:
            messages += TypeAdapter(list[SourceMessage]).validate_python(items)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise KBError(f"{MESSAGES / path.name}: {problems}") from None
    return tuple(messages)


def pattern_of(key: str) -> str:
    """The regex that finds a message: its fixed text as written, anything where a value goes."""
    return ".*?".join(re.escape(part) for part in key.split("{}"))


_VALUES = (
    (re.compile(r"device_?type|\.type\(\)|DeviceType", re.I), ("cuda", "cpu")),
    (re.compile(r"device|dev\b|\bd\d\b", re.I), ("cuda:0", "cpu")),
    (re.compile(r"type|toString", re.I), ("torch.cuda.FloatTensor", "torch.FloatTensor")),
    (re.compile(r"name|arg|str\(", re.I), ("input", "weight")),
    (re.compile(r"\b(?:i|idx|index|pos|position|n|size|count|len)\b", re.I), ("1", "2")),
)


def sample_of(template: str) -> str:
    """The line a template prints, with a plausible value in each hole: a device where the source
    splices a device (the first one `cuda:0`, the next `cpu`, and so on), a type name where a type."""
    used: dict[tuple[str, ...], int] = {}

    def value(hole: re.Match[str]) -> str:
        expression = hole.group(0)[1:-1]
        for pattern, values in _VALUES:
            if pattern.search(expression):
                n = used.get(values, 0)
                used[values] = n + 1
                return values[n % len(values)]
        n = used.get(("cuda:0", "cpu"), 0)
        used[("cuda:0", "cpu")] = n + 1
        return ("cuda:0", "cpu")[n % 2]

    return _HOLE.sub(value, template)


def derived(messages: Iterable[SourceMessage]) -> dict[str, list[Signature]]:
    """Per entry, the signatures its source messages add. The matcher reads them only where no written
    signature reads the message, and reads them tolerantly where none reads it as printed."""
    added: dict[str, list[Signature]] = {}
    for message in messages:
        signature = Signature(pattern=pattern_of(message.key), weight=SOURCE_WEIGHT)
        for entry_id in message.entries:
            added.setdefault(entry_id, []).append(signature)
    return added
