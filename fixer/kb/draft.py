"""`fixer kb new`: a pasted traceback as a draft KB entry, so a new cause starts from its real message.

The draft holds what the traceback itself says (a signature built from its message, the exception
type, the traceback verbatim as the first example, the libraries and op it shows) and a `TODO` in
every field only a person can write; `fixer kb lint` reports each `TODO` left, so a draft cannot
pass for a finished entry. It is parsed with the same reader as `fixer explain`, and the entries
that already match are returned, since the right change is often one more example for one of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import HttpUrl, TypeAdapter, ValidationError

from fixer.explain.match import Matcher
from fixer.explain.normalise import normalise
from fixer.kb.catalog import MAX_ENTRY_BYTES, Catalog
from fixer.kb.schema import ENTRY_ID, Entry
from fixer.output import redact as redaction

SCHEMA_IN_KB = "../docs/schema/entry.schema.json"  # from kb/ in fixer's own tree
SCHEMA_BESIDE = "entry.schema.json"  # in a team's directory: `fixer kb schema -o DIR/entry.schema.json`


def header(schema: str) -> str:
    """The line that gives editors (YAML language servers) the entry schema, for completion and checks."""
    return f"# yaml-language-server: $schema={schema}\n"


HEADER = header(SCHEMA_IN_KB)


def with_schema(draft: str, schema: str) -> str:
    """The draft pointing its editor at `schema` instead of the built-in KB's."""
    return header(schema) + draft.removeprefix(HEADER)


PLACEHOLDER_SOURCE = "https://example.com/TODO-link-to-the-public-thread"
SIGNATURE_WEIGHT = 40
MAX_SIGNATURE = 160  # characters of regex: a sentence or two of the message, which a person can still read
MAX_ID_WORDS = 5
MAX_ID_WORD = 24  # `distributeddataparallel`; a longer run of letters is a hash or a dump, not a word
# What the signature and the id are made from at most: far more than MAX_SIGNATURE needs, and short
# enough that tokenising a message that is one 8,000-character line costs nothing.
_SCAN_CHARS = 4 * MAX_SIGNATURE


class DraftError(ValueError):
    """Why no draft can be made from this input: a one-line reason for the user."""


class NoTraceback(DraftError):
    """The text holds no traceback, or one without an error message to build a signature from."""


@dataclass(frozen=True)
class Draft:
    id: str
    yaml: str  # the entry file's text
    closest: list[tuple[str, int]]  # (entry id, score) of the KB entries that already match, best first


def draft_entry(
    text: str, catalog: Catalog, *, entry_id: str | None = None, source: str | None = None, redact: bool = True
) -> Draft:
    """A draft entry for the traceback in `text`; `entry_id` and `source` as given, else suggested and a
    placeholder. Raises `DraftError` when the text has no error message, or the id or source is unusable.

    With `redact` (the default) the example is the traceback as `--redact` posts it: a team KB is shared
    and published as a wiki, and a paste carries home folders, user and host names and tokens."""

    explanation = Matcher(catalog).explain(text)
    tb, evidence = explanation.traceback, explanation.evidence
    if tb is None or evidence is None:
        raise NoTraceback("no traceback or known error message found in the input")
    if not tb.message.strip():
        raise NoTraceback("the traceback has no error message (was its last line cut off?)")
    if source is not None:
        _check_source(source)
    headline = _headline(tb.message)
    taken = _taken_ids(catalog)
    chosen = _checked_id(entry_id, taken) if entry_id is not None else _suggest_id(headline, tb.exception, taken)
    signature: dict[str, Any] = {"pattern": _signature_pattern(headline)}
    if tb.exception:
        signature["exception"] = tb.exception.rsplit(".", 1)[-1]
    signature["weight"] = SIGNATURE_WEIGHT
    tags = {
        "libraries": _Flow(sorted(lib for lib in evidence.libraries if lib != "python")),
        "ops": _Flow([evidence.op] if evidence.op else []),
    }
    example = redaction.redact(text) if redact else text
    data = _entry_data(chosen, signature, example, source or PLACEHOLDER_SOURCE, tags)
    Entry.model_validate(data)  # the draft must load: a schema change that outdates this module fails here
    rendered = _render(data, example)
    size = len(rendered.encode("utf-8"))
    if size > MAX_ENTRY_BYTES:  # `read_entry` would refuse the file
        raise DraftError(
            f"the paste makes a {size:,}-byte entry, more than an entry can be ({MAX_ENTRY_BYTES:,}): "
            "paste only the traceback"
        )
    return Draft(id=chosen, yaml=rendered, closest=[(match.id, match.score) for match in explanation.matches])


def _check_source(source: str) -> None:
    try:
        TypeAdapter(HttpUrl).validate_python(source)
    except ValidationError:
        raise DraftError(f"the source {source!r} is not an http(s) URL") from None


# -- the message's headline: what the signature and the id are made from --------------------------


def _headline(message: str) -> str:
    """The message's first line that says something, with the lines it runs on to. CUDA's boilerplate
    lines (which `normalise` empties) say nothing about this error; a line ending in a comma was wrapped
    by the person who pasted it (`...found at least two devices,` / `meta and cpu!`), so it goes on."""
    lines = message.split("\n")
    start = next((i for i, line in enumerate(lines) if line.strip() and normalise(line)), 0)
    end = start + 1
    while (
        lines[end - 1].rstrip().endswith(",")
        and end < len(lines)
        and lines[end].strip()
        and normalise(lines[end])
        and sum(len(line) for line in lines[start:end]) < _SCAN_CHARS
    ):
        end += 1
    return "\n".join(lines[start:end]).strip()[:_SCAN_CHARS]


# -- the signature ---------------------------------------------------------------------------------


def _type_name(token: str) -> str:
    """A legacy tensor type name with any dtype, of the same device kind: `torch.cuda.FloatTensor`
    stands for every CUDA tensor type, `torch.FloatTensor` for every CPU one."""
    if token.startswith("torch.cuda."):
        return r"torch\.cuda\.\w+Tensor"
    if token.startswith("torch."):
        return r"torch\.\w+Tensor"
    return re.sub(r"^(CUDA|CPU|MPS)\w*Type$", r"\1\\w*Type", token)


# The parts of a message that vary between runs, each with the pattern that stands for it: the parts
# `normalise` turns into placeholders. A device is any device: the pair in one paste is one run's, and
# a signature of it alone would claim every traceback with that pair for the draft's cause; a team
# that means one pair writes a rule on the devices.
_DEVICE = r"\b(?:cuda|cpu|mps|meta|xpu|hpu|npu|xla|mtia|privateuseone)(?::\d+)?(?![\w:])"
_ANY_DEVICE = r"\w+(?::\d+)?"
_Replacement = Callable[[str], str]
_PARTS: tuple[tuple[str, _Replacement], ...] = (
    (r"0x[0-9a-fA-F]+", lambda _: r"0x[0-9a-fA-F]+"),
    (r"(?:[A-Za-z]:)?[\w.~-]*(?:[\\/][\w.~-]+){2,}", lambda _: r"\S+"),  # a path: two separators at least
    (r"torch\.(?:cuda\.)?[A-Z]\w*Tensor\b|\b(?:CUDA|CPU|MPS)\w*Type\b", _type_name),
    (_DEVICE, lambda _: _ANY_DEVICE),
    (r"torch\.Size\(\[[\d, ]*\]\)", lambda _: r"torch\.Size\(\[[\d, ]*\]\)"),
    (r"\(\d+(?:, ?\d+)+\)", lambda _: r"\([\d, ]+\)"),
    (r"\[\d+(?:, ?\d+)+\]", lambda _: r"\[[\d, ]+\]"),
    (
        r"\b(?:torch\.)?(?:float(?:16|32|64)?|bfloat16|half|double|int(?:8|16|32|64)?|uint8|bool|"
        r"Float|Double|Half|BFloat16|Long|Int)\b",
        lambda token: r"torch\.\w+" if token.startswith("torch.") else r"\w+",
    ),
    (r"\b\d+(?:\.\d+)?\b", lambda token: r"\d+(?:\.\d+)?" if "." in token else r"\d+"),
    (r"\s+", lambda space: " " if space == " " else r"\s+"),  # a paste re-wraps and re-indents messages
)


_TOKEN = re.compile("|".join(f"({pattern})" for pattern, _ in _PARTS))
_SPECIAL = re.compile(r"[.^$*+?{}\[\]|()\\]")
_WORD = re.compile(r"\w")


@dataclass(frozen=True)
class _Piece:
    text: str  # as the message has it
    regex: str
    literal: bool


def _signature_pattern(message: str) -> str:
    """A regex that matches `message` (and the same message with other numbers, device ordinals, paths,
    addresses, shapes and dtypes), cut at a word boundary to about MAX_SIGNATURE characters, without the
    punctuation it would end on. Literal text is escaped only where regex syntax needs it, so it reads
    like the signatures people wrote, and translates to JavaScript for the site's paste box."""
    pieces = _fit(_pieces(message))
    trimmed = _without_trailing_junk(pieces)
    return "".join(p.regex for p in trimmed or pieces)


def _pieces(message: str) -> list[_Piece]:
    pieces: list[_Piece] = []
    at = 0
    for found in _TOKEN.finditer(message):
        pieces.extend(_literal_pieces(message[at : found.start()]))
        index = found.lastindex or 1
        pieces.append(_Piece(found.group(0), _PARTS[index - 1][1](found.group(0)), literal=False))
        at = found.end()
    pieces.extend(_literal_pieces(message[at:]))
    return pieces


def _literal_pieces(text: str) -> list[_Piece]:
    return [_Piece(text, _escape(text), literal=True)] if text else []


def _escape(text: str) -> str:
    """`re.escape` without escaping spaces, dashes and the like, which no unflagged regex needs. A
    backslash is written `\\x5c`, never `\\\\`: before a digit, that reads as a backreference to the
    check that keeps signatures joinable."""
    return _SPECIAL.sub(lambda m: "\\x5c" if m.group(0) == "\\" else "\\" + m.group(0), text)


def _fit(pieces: list[_Piece]) -> list[_Piece]:
    """The pieces that fit in MAX_SIGNATURE characters, so the cut falls between words or tokens; a first
    piece too long on its own is cut where it must be."""
    kept: list[_Piece] = []
    size = 0
    for piece in pieces:
        size += len(piece.regex)
        if size > MAX_SIGNATURE:
            return kept or [_cut(piece)]
        kept.append(piece)
    return kept


def _cut(piece: _Piece) -> _Piece:
    """A literal's longest start that fits (a variable part is far shorter than MAX_SIGNATURE)."""
    text, size = "", 0
    for char in piece.text:
        size += len(_escape(char))
        if size > MAX_SIGNATURE:
            break
        text += char
    return _Piece(text, _escape(text), literal=True)


_OPENERS = {")": "(", "]": "[", "}": "{", ">": "<"}


def _without_trailing_junk(pieces: list[_Piece]) -> list[_Piece]:
    """Without what the message ends on that is no part of it: a comma or an opening bracket where the
    cut fell, Markdown's `**`, and a closing bracket or quote with no partner in the signature (`.")`
    of a quoted `raise` line). A signature that stops short of them still matches the message."""
    kept = list(pieces)
    while kept and not kept[-1].literal and kept[-1].text.isspace():
        kept.pop()
    while kept and kept[-1].literal:
        last, before = kept[-1], "".join(p.text for p in kept[:-1])
        text = last.text
        while text and _is_junk(text[-1], before + text[:-1]):
            text = text[:-1]
        if text == last.text:
            break
        kept[-1:] = [_Piece(text, _escape(text), literal=True)] if text else []
        while kept and not kept[-1].literal and kept[-1].text.isspace():
            kept.pop()
    return kept


def _is_junk(char: str, before: str) -> bool:
    if char in ",;:*([{<":
        return True
    if char in _OPENERS:
        return before.count(_OPENERS[char]) <= before.count(char)
    return char in "'\"`" and before.count(char) % 2 == 0


# -- the id ----------------------------------------------------------------------------------------

_STOP_WORDS = frozenset(
    {
        "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been", "before",
        "but", "by", "can", "could", "did", "do", "does", "each", "either", "for", "found", "from", "get", "got",
        "had", "has", "have", "here", "if", "in", "into", "is", "it", "its", "least", "may", "might", "more",
        "must", "no", "of", "on", "one", "or", "other", "please", "should", "so", "some", "such", "than", "that",
        "the", "their", "then", "there", "these", "this", "those", "to", "two", "use", "using", "was", "were",
        "what", "when", "where", "which", "while", "will", "with", "would", "you", "your",
    }
)  # fmt: skip


def _suggest_id(message: str, exception: str | None, taken: set[str]) -> str:
    """Kebab-case from the message's salient words (placeholders and stop words dropped), unique in
    `taken` by a `-2`, `-3`... suffix. The author renames it after the cause, which the message alone
    does not say; the words only make the draft easy to find meanwhile."""
    words: list[str] = []
    # Without the parts a signature generalises (paths, numbers, types...), then without devices.
    salient = re.sub(r"<[A-Z_]+>", " ", normalise(_TOKEN.sub(" ", message))).lower()
    for word in re.findall(r"[a-z0-9]+", salient):
        if not 2 <= len(word) <= MAX_ID_WORD or word.isdigit() or word in _STOP_WORDS:
            continue
        if any(word in (kept, kept + "s") or kept == word + "s" for kept in words):
            continue  # `device` and `devices` say one thing
        words.append(word)
        if len(words) == MAX_ID_WORDS:
            break
    base = "-".join(words) or _kebab(exception) or "new-entry"
    suggested, n = base, 1
    while suggested in taken:
        n += 1
        suggested = f"{base}-{n}"
    return suggested


def _kebab(exception: str | None) -> str:
    """`torch._dynamo.exc.TorchRuntimeError` -> `torch-runtime-error`."""
    name = (exception or "").rsplit(".", 1)[-1]
    return "-".join(part.lower() for part in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", name))


def _taken_ids(catalog: Catalog) -> set[str]:
    """The ids in use: the catalog's, and the files in its KB directory, which include retired entries
    (which `load` leaves out) whose ids are never reused."""
    return set(catalog.entries) | {path.stem for path in catalog.root.glob("*.yaml")}


def _checked_id(entry_id: str, taken: set[str]) -> str:
    if not re.fullmatch(ENTRY_ID, entry_id):
        raise DraftError(f"the id {entry_id!r} is not kebab-case (lowercase letters and digits joined by '-')")
    if entry_id in taken:
        raise DraftError(f"the id {entry_id!r} is taken by an entry of the KB: choose another")
    return entry_id


# -- the file --------------------------------------------------------------------------------------


def _entry_data(
    entry_id: str, signature: dict[str, Any], traceback: str, source: str, tags: dict[str, _Flow]
) -> dict[str, Any]:
    """The entry in the key order of the KB's files; the sections a draft cannot fill are empty, so the
    author sees each of them."""
    return {
        "id": entry_id,
        "title": "TODO: write the cause in one line, as the user would say it",
        "summary": _Folded(
            "TODO: write two or three sentences: what went wrong, and where, for someone who just hit it"
        ),
        "meaning": _Folded("TODO: write what the message means in plain words: which tensors and devices it names"),
        "cause": _Folded(
            "TODO: write why it happens here: the code or library behaviour that puts a tensor on that device"
        ),
        "signatures": [signature],
        "evidence": [],
        "diagnostics": [],
        "fix": {
            "summary": "TODO: write the fix in one sentence",
            "steps": [_Folded("TODO: write the first thing to change, naming the call or argument to use")],
            "before": _Block("TODO: write a few lines of code that raise this error\n"),
            "after": _Block("TODO: write the same code, fixed\n"),
            "codemod": None,
            "safety": "manual",
            "safety_note": _Folded("TODO: write what the fix may change besides the error (memory, speed, results)"),
            "manual_because": _Folded(
                "TODO: write why no codemod can apply this fix: what the source alone does not say"
            ),
        },
        "examples": [{"source": source, "traceback": _Block(traceback)}],
        "related": [],
        "tags": tags,
        "facts": {},
        "quiz": {
            "question": _Folded("TODO: write a question a user could answer after reading this entry"),
            "answer": _Folded("TODO: write the right answer"),
            "wrong": [
                "TODO: write a wrong answer a reader might believe",
                "TODO: write another wrong answer",
                "TODO: write a third wrong answer, or delete this one",
            ],
            "explanation": _Folded("TODO: write why the answer is right and the wrong answers are not"),
        },
    }


class _Block(str):
    """A string written as a literal block (`|`) where YAML can hold it so, else double-quoted."""


class _Folded(str):
    """Prose, written as a folded block (`>-`) as the KB's prose is."""


class _Quoted(str):
    """A string written double-quoted: YAML's one style that holds any text."""


class _Flow(list[str]):
    """A short list written on one line, as the KB's tags are."""


class _Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        """Lists indented under their key, as the KB's files are (PyYAML's default puts `-` under the key)."""
        super().increase_indent(flow, False)


_Dumper.add_representer(_Block, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", str(s), style="|"))
_Dumper.add_representer(_Folded, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", str(s), style=">"))
_Dumper.add_representer(_Quoted, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", str(s), style='"'))
_Dumper.add_representer(_Flow, lambda d, s: d.represent_sequence("tag:yaml.org,2002:seq", list(s), flow_style=True))
_UNFOLDED = 1 << 30
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the loader `read_entry` uses


def _render(data: dict[str, Any], traceback: str) -> str:
    """The entry's text. PyYAML writes a literal block only where it can, else quotes; but a NEL
    (U+0085) in a literal block reads back as a line break, so the text is read back to be sure the
    traceback survives byte for byte, and written double-quoted when it does not."""
    text = HEADER + _dump(data)
    if yaml.load(text, Loader=_Loader)["examples"][0]["traceback"] != traceback:
        data["examples"][0]["traceback"] = _Quoted(traceback)
        text = HEADER + _dump(data)
    return text


def _dump(data: dict[str, Any]) -> str:
    """No line folded: PyYAML folds long scalars at spaces, and a signature folded onto a second line
    reads as two."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=_UNFOLDED)
