"""How often each cause is behind a message that says nothing more, counted in real tracebacks.

A bare "Expected all tensors to be on the same device, ... cuda:0 and cpu!" is printed by a dozen
causes; its text cannot tell them apart, and resemblance to one entry's examples says nothing when
other entries have examples just as alike. What it can say is how often each cause turned out to be
behind this very message in the labelled real tracebacks: the KB's examples and the labelled corpora.
`fixer kb priors` counts them into kb/priors/messages.yaml, where they are written down with their
counts; the matcher adds points on a log scale of the count, at most PRIOR_POINTS, and says so.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from fixer.explain.normalise import normalise

PRIOR_POINTS = 20
FILE = Path("priors") / "messages.yaml"  # under the KB's root
HEADER = """\
# How often each cause is behind each message, counted by `fixer kb priors` over the labelled real
# tracebacks of the corpora named below (threads found by searching for the messages, so causes come in
# the proportions users meet them). Generated: do not edit; run `fixer kb priors` again when a corpus
# grows. For a message that several causes print, the matcher adds up to {points} points to each cause,
# on a log scale of its count (fixer/explain/priors.py); a message of one cause is listed so that a cut
# message is known to start more than one.
"""


@dataclass(frozen=True)
class Prior:
    count: int
    total: int
    points: int


_TYPE_PREFIX = re.compile(r"^(?:[a-z_][\w.]*(?:error|exception)\s*:\s*)+")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+(?=[,.!?;:])|(?<=\w)\s+(?=\(\))")  # "is_available ()" retyped
# Other accelerators (and meta, which tests and deferred loading put where a GPU would be) meet the CPU
# for the same reasons CUDA does; their own cases are too few to count.
_ACCELERATORS = re.compile(r"<(?:mps|xpu|npu|hpu|xla|meta)>")
CUT_MINIMUM = 40  # characters of a message's start that say which counted message it is
_CHECKING_CLAUSE = re.compile(r"\s*\(when checking argument[^()]*\)$")
# PyTorch 2.8 rewrote the one check behind "found at least two devices" (MESSAGES.md, W-2.8): the argument
# moved into the sentence and the devices swapped places. Read in the earlier words, a message from a
# recent PyTorch takes the causes counted over the years of the old wording, and backs off as they do.
_SINCE_2_8 = re.compile(
    r"but got (?P<arg>\w+) is on (?P<off>\S+), different from other tensors on (?P<com>[^\s(]+)"
    r"(?: \(when checking argument in method (?P<op>\w+)\))?"
)


def _in_earlier_words(found: re.Match[str]) -> str:
    said = f"but found at least two devices, {found['com']} and {found['off']}!"
    if not found["op"]:
        return said
    return f"{said} (when checking argument for argument {found['arg']} in method {found['op']})"


def key(message: str) -> str:
    """Messages that differ only in ordinals, numbers, paths, case, line wrapping, CUDA's boilerplate
    or an exception type typed into the message share a key."""
    message = message.strip().strip("`")  # a message pasted as inline code
    text = _SPACE_BEFORE_PUNCTUATION.sub("", normalise(" ".join(message.split()).casefold()).casefold())
    return _SINCE_2_8.sub(_in_earlier_words, _TYPE_PREFIX.sub("", text))


def lookup(priors: dict[str, dict[str, Prior]], message: str, *, back_off: bool = False) -> dict[str, Prior]:
    """The priors of this message, or of the same message on CUDA when it names another accelerator.

    With `back_off`, a message whose `(when checking argument for argument X in method Y)` clause was
    never counted takes the priors of the message without it: the caller says the argument tells nothing
    (no entry's evidence speaks of it), so the causes behind the bare message are still the best guess."""
    found = key(message)
    keys = [found, _ACCELERATORS.sub("<cuda>", found)]
    if back_off:
        keys += [_CHECKING_CLAUSE.sub("", k) for k in keys]
    exact = next((priors[k] for k in keys if len(priors.get(k, ())) > 1), None)
    if exact is not None:
        return exact
    # A message cut short, by the person or at a line break its second sentence was printed after, is the
    # start of the counted messages it could be: the causes behind it are theirs, counted together.
    starts = [k for k in keys[:2] if len(k) >= CUT_MINIMUM]
    merged: Counter[str] = Counter()
    for counted, causes in priors.items():
        if any(counted.startswith(start) for start in starts):
            merged.update({cause: prior.count for cause, prior in causes.items()})
    return weighed(merged) if len(merged) > 1 else {}


def weighed(counts: Mapping[str, int]) -> dict[str, Prior]:
    """Each cause's prior among the causes counted behind one message."""
    total, most = sum(counts.values()), max(counts.values(), default=0)
    return {cause: Prior(n, total, points(n, most)) for cause, n in counts.items()}


def count(labelled: Iterable[tuple[str, tuple[str, ...]]], message_of: Callable[[str], str]) -> dict[str, Counter[str]]:
    """Causes per message key. `labelled` yields (traceback text, its causes): the items of corpora
    gathered by searching public threads for the messages themselves, so their causes come in the
    proportions users meet them (the KB's examples do not: each entry collects its own). A traceback
    labelled with several causes counts for none, since it does not say which one was behind it. Other
    accelerators' cases count as CUDA's, as `lookup` reads them.

    Every counted message is kept, though only those behind more than one cause give points (one cause
    alone is a signature's job): a cut message takes the counts of every counted message it starts, those
    of one cause included."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for text, causes in labelled:
        message = message_of(text) if len(causes) == 1 else ""
        if message:
            counts[_ACCELERATORS.sub("<cuda>", key(message))][causes[0]] += 1
    return dict(sorted(counts.items()))


def dump(counts: dict[str, Counter[str]], sources: list[str]) -> str:
    documents = [
        {"message": message, "counts": dict(sorted(causes.items(), key=lambda kv: (-kv[1], kv[0])))}
        for message, causes in counts.items()
    ]
    named = "".join(f"#   {source}\n" for source in sources)
    import yaml

    body = yaml.safe_dump(documents, sort_keys=False, allow_unicode=True, width=120)
    return HEADER.format(points=PRIOR_POINTS) + "# Counted over:\n" + named + body


def points(count: int, most: int) -> int:
    """Points on a log scale, as a score's other points act: a cause behind five cases where another is
    behind one is more likely, not five times the evidence, so what the code shows can still outweigh it.
    Adding one keeps a cause seen once above nothing."""
    return round(PRIOR_POINTS * math.log1p(count) / math.log1p(most))


def load(root: Path) -> dict[str, dict[str, Prior]]:
    """Message key -> cause -> its prior; empty when the KB has no priors file (a team's KB)."""
    import yaml

    path = root / FILE
    try:
        documents = (
            yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or []
        )
    except (OSError, yaml.YAMLError):
        return {}
    priors: dict[str, dict[str, Prior]] = {}
    try:
        for document in documents:
            counts = {str(cause): int(n) for cause, n in document["counts"].items() if int(n) > 0}
            if counts:
                priors[str(document["message"])] = weighed(counts)
    except (KeyError, TypeError, ValueError, AttributeError):  # a hand-edited file: no priors, not a crash
        return {}
    return priors
