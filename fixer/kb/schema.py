"""The KB entry schema: the one contract between `kb/*.yaml`, the CLI, the site and the lint.

pydantic validates at the boundary (a YAML file written by a person), so every later stage can trust
the shape of an entry. `fixer kb schema` exports this as JSON Schema for editors.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, field_validator, model_validator

from fixer.explain.literals import analyse

ENTRY_ID = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
DeviceKind = Literal["cpu", "cuda", "mps", "meta", "xpu", "npu", "hpu", "xla"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _compiles(pattern: str | None) -> str | None:
    """A regex Python compiles and can always finish: entries come from teams too, and every paste
    is searched with every signature, so one pattern that backtracks without end hangs every user."""
    if pattern is not None:
        try:
            nests_repeats = analyse(pattern).nests_repeats
        except (re.error, OverflowError, RecursionError) as exc:  # `a{4294967296}`, thousands of nested groups
            raise ValueError(f"regex {pattern!r} does not compile: {exc or type(exc).__name__}") from None
        if nests_repeats:
            raise ValueError(
                f"regex {pattern!r} repeats a repetition (like `(a+)+` or `(\\w+\\s?)*`), which can take "
                "exponential time on text that almost matches: write the inner part without its own + or *"
            )
    return pattern


# Signatures are also searched as one alternation (to find a message printed without an exception
# type), where a global flag, a group name or a group number would mean something else or nothing.
_NOT_JOINABLE = re.compile(r"\(\?[aiLmsux]+\)|\(\?P[<=]|\(\?<\w|\(\?\(|\\[1-9]|\\g<")


def _joinable(pattern: str) -> str:
    found = _NOT_JOINABLE.search(pattern)
    if found:
        raise ValueError(
            f"signature {pattern!r} uses {found.group(0)!r}: signatures are searched together, so they take no "
            "global flags (write a scoped group such as (?i:...)), named groups or backreferences"
        )
    return pattern


class Signature(Strict):
    """A message shape that belongs to this entry's family (searched in the exception message)."""

    pattern: str = Field(description="Python regex, searched case-sensitively in the exception message.")
    exception: str | None = Field(
        default=None, description="Regex the exception type name must fully match, e.g. 'RuntimeError'."
    )
    weight: int = Field(default=40, ge=0, le=80, description="Points a hit is worth.")

    _check_pattern = field_validator("pattern", "exception")(_compiles)
    _check_joinable = field_validator("pattern")(_joinable)


class Condition(Strict):
    """Facts about one traceback; every field given must hold for the rule to fire."""

    message: str | None = Field(default=None, description="Regex searched in the exception message.")
    text: str | None = Field(default=None, description="Regex searched in the whole pasted text.")
    exception: str | None = Field(default=None, description="Regex fully matching the exception type name.")
    argument: str | None = Field(
        default=None, description="Regex fully matching the argument the message names (mat1, state_steps)."
    )
    op: str | None = Field(
        default=None, description="Regex searched in the op the message names (index_select, _fused_adamw_)."
    )
    devices: list[DeviceKind] | None = Field(
        default=None,
        description="Kinds of the distinct devices named, as a multiset: [cuda, cpu], or [cuda, cuda] for "
        "two different CUDA ordinals. Must equal the message's exactly.",
    )
    offending: DeviceKind | None = Field(
        default=None,
        description="Kind of the device the message singles out (the argument's device, or the second "
        "device of 'found at least two devices').",
    )
    library: list[str] | None = Field(
        default=None, description="Any of these libraries appears in the frames (keras, accelerate, ...)."
    )
    frame: str | None = Field(default=None, description="Regex searched in each frame's 'path:function: code' line.")
    detector: str | None = Field(
        default=None,
        description="Id of a detector (fixer/explain/detectors) that must find its fact in your code: the failing "
        "lines the traceback printed, or your files around them when they are on this machine.",
    )

    _check_patterns = field_validator("message", "text", "exception", "argument", "op", "frame")(_compiles)


class EvidenceRule(Strict):
    """Points for (or, negative, against) this entry when its condition holds, with the reason shown."""

    when: Condition
    weight: int = Field(ge=-100, le=100)
    because: str = Field(min_length=5, description="Shown to the user in the match's 'why'.")


class Fix(Strict):
    summary: str
    steps: list[str] = Field(min_length=1)
    before: str = Field(description="Code that has the problem.")
    after: str = Field(description="The same code, fixed.")
    codemod: str | None = Field(default=None, description="Id of the codemod that applies this fix.")
    safety: Literal["safe", "unsafe", "manual"] = Field(
        description="safe: keeps meaning; unsafe: may change behaviour; manual: no automatic patch."
    )
    safety_note: str
    manual_because: str | None = Field(
        default=None,
        description="Why no codemod applies this fix (required when codemod is null; absent otherwise).",
    )


class Repro(Strict):
    """Code that must raise this entry's error, and its fixed version that must run."""

    needs: Literal["cpu", "cuda", "2-gpus", "mps", "multi-process"] = Field(
        description="What the code needs to show the real error. 'cpu' code may use FakeTensorMode or meta "
        "tensors to stand in for an accelerator."
    )
    code: str
    fixed: str
    loads: list[str] = Field(
        default_factory=list,
        description="Modules the code needs that its own import lines do not name, such as bitsandbytes, "
        "which transformers imports only when asked to quantize: where one is missing the repro test skips "
        "the entry instead of reporting the library's ImportError as a wrong claim.",
    )
    raises: str | None = Field(
        default=None,
        description="What `code` prints when run as exercise.py: its own frames and the error, library frames "
        "folded (fixer.kb.repro.trimmed). Shown in the training exercises; the repro test holds it to the real "
        "output and prints the text to paste when it differs.",
    )


class Example(Strict):
    source: HttpUrl = Field(description="Public page the traceback is quoted from.")
    traceback: str = Field(min_length=10, description="Verbatim, as the page shows it.")
    note: str | None = None
    ambiguous: bool = Field(
        default=False,
        description="The text alone cannot tell this cause from its siblings (a bare 'cuda:0 and cpu!'): "
        "the lint then asks for this entry in the top 3, or among the close causes that fixer's follow-up "
        "questions weigh, instead of first.",
    )


Likelihood = Literal["always", "usually", "sometimes", "rarely", "never"]


class Fact(Strict):
    """A fact of the user's own run or code that tells causes apart where a traceback's text cannot, asked
    as a question the user can answer, with the way to find the answer."""

    id: str = Field(pattern=ENTRY_ID)
    ask: str = Field(min_length=10, description="A yes/no question about the user's own run or code.")
    check: str = Field(min_length=10, description="One line: how to find the answer. Shown on `?`.")
    base: float = Field(
        gt=0,
        lt=1,
        description="How often the answer is yes in runs that hit these errors at all: what a cause that "
        "says nothing about this fact expects.",
    )
    known: float = Field(
        default=0.9,
        gt=0,
        le=1,
        description="How often a user can answer it: what their run did, nearly always; a library model's "
        'internals, often not. A question answered "don\'t know" tells nothing, so this weighs what it can tell.',
    )
    look: list[str] = Field(
        default_factory=list,
        description="Regexes over the lines of the user's project: a line that matches answers yes, "
        "with its file and line as the reason, and the question is not asked.",
    )

    absent: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description="For a fact the user's own code must show when it holds (a call to `torch.compile`, a "
        "launcher): how often `look` finds it in a project whose run has it. A traceback whose frames are in "
        "the project, read in full without a sighting, is then a no this uncertain, which never rules a cause "
        "out; the question may still be asked.",
    )
    asked: bool = Field(
        default=True,
        description="False for a fact only the user's project is read for, one a person is asked about in "
        "other words (whether the run is several processes, not whether the code sets them up): asking it too "
        "would spend a question.",
    )
    command: list[str] = Field(
        default_factory=list,
        description="Regexes over the command that started the run (`fixer run`'s, or the process's own under "
        "the hook): a match answers yes, such as `--resume` for a resumed run.",
    )

    shown: list[str] = Field(
        default_factory=list,
        description="Regexes over the traceback's message lines: a match answers yes and the question is not "
        "asked. The ranking already weighs what the traceback shows, so such an answer moves no score.",
    )
    frames: list[str] = Field(
        default_factory=list,
        description="The same over its frame lines (`path:function: code`), for where the run failed.",
    )

    @field_validator("look", "command", "shown", "frames")
    @classmethod
    def _looks_compile(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            _compiles(pattern)
        return patterns

    @model_validator(mode="after")
    def _looks_where_it_must(self) -> Fact:
        if self.absent is not None and not self.look:
            raise ValueError("`absent` says how often `look` finds the fact: give `look` too")
        if not self.asked and not self.look:
            raise ValueError("a fact that is not asked is read from the project: give `look`")
        return self


class SourceMessage(Strict):
    """One error message PyTorch or a library built on it raises, as `tools/extract_messages.py` read it
    from the source (kb/messages/<library>.yaml): the catalogue the entries' signatures are checked
    against."""

    key: str = Field(min_length=10, description="The message with every spliced-in value written {}.")
    template: str = Field(description="The message with the source's expression in each {}.")
    raised: str = Field(description="The Python exception it surfaces as.")
    where: str = Field(description="The file (and line) that raises it, in the newest tree read.")
    versions: list[str] = Field(min_length=1, description="The releases read that raise it.")
    entries: list[str] = Field(description="The KB causes behind it.")
    outside: str | None = Field(
        default=None, min_length=10, description="Why no KB cause covers it yet, where `entries` is empty."
    )
    library: str = Field(default="pytorch", description="Who raises it: the name of the file it is read from.")

    @model_validator(mode="after")
    def _assigned(self) -> SourceMessage:
        if bool(self.entries) == bool(self.outside):
            raise ValueError("give either `entries` (the causes behind the message) or `outside` (why none)")
        return self


class Quiz(Strict):
    question: str
    answer: str
    wrong: list[str] = Field(min_length=2)
    explanation: str


class Tags(Strict):
    libraries: list[str] = Field(default_factory=list)
    ops: list[str] = Field(default_factory=list)


class Entry(Strict):
    id: str = Field(pattern=ENTRY_ID)
    title: str = Field(min_length=10)
    summary: str = Field(min_length=20)
    meaning: str = Field(min_length=20, description="What the message means, in plain words.")
    cause: str = Field(min_length=20, description="Why it happens in this situation.")
    signatures: list[Signature] = Field(min_length=1)
    evidence: list[EvidenceRule] = Field(default_factory=list)
    diagnostics: list[str] = Field(default_factory=list, description="Probe ids that can confirm the cause.")
    fix: Fix
    repro: Repro | None = None
    examples: list[Example] = Field(min_length=1)
    related: list[str] = Field(default_factory=list)
    tags: Tags = Field(default_factory=Tags)
    facts: dict[str, Likelihood] = Field(
        default_factory=dict,
        description="How likely a yes is, under this cause, to each question of kb/facts/questions.yaml it "
        "speaks to: `always` or `never` for what the cause cannot be without (an answer against it rules the "
        "cause out), `usually` or `rarely` for what it leans to; an unnamed fact counts at its base rate.",
    )
    quiz: Quiz
    retired: bool = False
    overrides: bool = Field(
        default=False,
        description="A team entry (a directory in --kb or FIXER_KB_PATH) that replaces the entry with the same id.",
    )
