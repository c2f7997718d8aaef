"""Extract PyTorch's device-placement error messages from its source, as data the KB is checked against.

The KB's signatures were first written from the messages users pasted; the source is the catalogue of
what PyTorch can actually say. This script reads one or more PyTorch trees, each given as
`VERSION=PATH`, where PATH is a source checkout (C++ `TORCH_CHECK`-style checks, stream and `c10::str`
messages, and Python `raise`/`torch._check` messages) or an installed `torch` package (its Python files
are read; its shared libraries are searched for the literal text of messages found in a source tree, so
that a binary dates a C++ message without its source).

The result is merged into `kb/messages/pytorch.yaml`: one record a message, keyed by its template with
every spliced-in value written `{}`. `template`, `raised`, `where` and `versions` are rewritten on each
run; `entries` (the causes that raise the message, curated by hand) is kept, so re-running against a
new release only adds what is new, which then has no entry until someone assigns one.

    python tools/extract_messages.py 1.13.1=/src/pytorch-1.13.1 2.6.0=/src/pytorch-2.6.0 \\
        2.13.0=$(python -c "import torch, os; print(os.path.dirname(torch.__file__))")
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "kb/messages/pytorch.yaml"

# Where device checks live: the C++ core and kernels, the Python layers users call, and the backends.
CPP_DIRS = ("aten/src/ATen", "c10", "torch/csrc")
PY_DIRS = (
    "torch/nn",
    "torch/optim",
    "torch/distributed",
    "torch/_prims",
    "torch/_prims_common",
    "torch/_refs",
    "torch/_decomp",
    "torch/_meta_registrations.py",
    "torch/_subclasses",
    "torch/export",
    "torch/_export",
    "torch/serialization.py",
    "torch/random.py",
    "torch/cuda",
    "torch/mps",
    "torch/xpu",
    "torch/utils/data",
    "torch/_tensor.py",
    "torch/functional.py",
    "torch/amp",
    "torch/_dynamo",
    "torch/_inductor",
    "torch/fx",
    "torch/jit",
    "torch/_utils.py",
    "torch/__init__.py",
)
CPP_SUFFIXES = {".cpp", ".cc", ".cu", ".cuh", ".h", ".hpp", ".mm"}
# Tests, benchmarks and vendored code raise messages no user meets.
SKIPPED_PARTS = {"test", "tests", "testing", "benchmarks", "third_party", "_vendor"}

# The macros and helpers whose message arguments become the error text; the number is how many
# leading arguments are not part of the message (the condition, or the exception type).
CPP_RAISERS = {
    "TORCH_CHECK": 1,
    "TORCH_CHECK_VALUE": 1,
    "TORCH_CHECK_TYPE": 1,
    "TORCH_CHECK_INDEX": 1,
    "TORCH_CHECK_NOT_IMPLEMENTED": 1,
    "TORCH_CHECK_LINALG": 1,
    "TORCH_CHECK_ALWAYS_SHOW_CPP_STACKTRACE": 1,
    "AT_ERROR": 0,
    "TORCH_INTERNAL_ASSERT": 1,
    "C10_THROW_ERROR": 1,
    "TORCH_CHECK_WITH": 2,
    # Extensions built on PyTorch (flash-attn, mmcv, xformers) and PyTorch before 1.5.
    "STD_TORCH_CHECK": 1,
    "AT_ASSERTM": 1,
    "AT_CHECK": 1,
    # A bare C++ exception, as R's torch (lantern) and some extensions throw them.
    "std::runtime_error": 0,
    "std::invalid_argument": 0,
}
CPP_EXCEPTIONS = {
    "TORCH_CHECK_VALUE": "ValueError",
    "TORCH_CHECK_TYPE": "TypeError",
    "TORCH_CHECK_INDEX": "IndexError",
    "TORCH_CHECK_NOT_IMPLEMENTED": "NotImplementedError",
    "std::invalid_argument": "ValueError",
}
_RAISER = re.compile(r"\b(" + "|".join(sorted(CPP_RAISERS, key=len, reverse=True)) + r")\s*\(")
_STREAM = re.compile(r"^[ \t]*([A-Za-z_][\w.]*)[ \t]*<<", re.MULTILINE)
# glog's checks, which DGL and other runtimes built on dmlc-core use: the message is streamed into the
# failed check (`CHECK_EQ(a, b) << "..." << name;`) or into a fatal log line.
_GLOG = re.compile(r"\b(?:D?CHECK(?:_(?:EQ|NE|LT|LE|GT|GE|NOTNULL))?|LOG)\s*\(")
_FORMATTERS = ("c10::str", "fmt::format", "std::string", "c10::Error")

# A message belongs to the family when its fixed text speaks of where tensors live. Each pattern is
# one way PyTorch has said it; the test keeps a sample of known family messages and of look-alikes
# (dtype, shape, "device-side assert") on the right side of these.
FAMILY = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"same device",
        r"\bon (?:the )?(?:same |expected |different |\w+ )?device",
        r"\bdevices?\b[^.]{0,40}\b(?:but|does not|doesn't|must|mismatch|differ|expected|match)",
        r"\bexpected\b[^.]{0,60}\bdevice\b",
        r"\bdevice\b[^.]{0,30}\bbut (?:got|found|is)\b",
        r"\bto be (?:a |on )?(?:an? )?(?:cuda|cpu|mps|xla|xpu|gpu|hpu|npu|meta)\b",
        r"\b(?:is|are|be|was) on (?:cpu|gpu|cuda|mps|xla|the cpu|the gpu)\b",
        r"\b(?:cuda|cpu|mps|gpu) tensors?\b[^.]{0,40}\b(?:expected|but|must|only|not supported|cannot)",
        r"\b(?:expected|must be|only)\b[^.]{0,40}\b(?:cuda|cpu|mps|gpu) tensors?",
        r"input type[^.]{0,40}weight type",
        r"not an xla tensor",
        r"storage has not been allocated on",
        r"deserialize object on (?:a )?cuda device",
        r"map_location",
        r"\bonly (?:supported|available) (?:on|with|in) (?:the )?(?:cuda|gpu|mps|xla)\b",
        r"not compiled with (?:cuda|mps|xpu)",
        r"install the (?:cuda|gpu) (?:version|build)",
        r"invalid device ordinal",
        r"device[- ]side generator|generator[^.]{0,40}device",
        r"device type tensor to numpy|can't convert cuda",
        r"\bbackend (?:cpu|cuda)\b",
        # Libraries built on PyTorch: where a model is split or sent, and moves they refuse.
        r"\bdevice_map\b",
        r"`?(?:\.to|to\(\)|cuda\(\))`? is not supported",
        r"\bmove (?:a|the) model\b",
    )
)
# Device-free look-alikes the patterns above would otherwise take: CUDA's own fault reports, kernel
# availability, and internal states no placement mistake leads to.
NOT_FAMILY = re.compile(
    r"device-side assert|assertion failures|out of memory|is not (?:yet )?(?:implemented|supported) (?:for|on)|"
    r"not implemented for|no kernel|INTERNAL ASSERT|cudnn_status|cublas|nvrtc|peer access|"
    r"device guard|DeviceGuard|stream\b|Stream\b|event\b|graph capture|capture|"
    r"non-float|compute capability|not currenlty supported|divisible|more than \d+ dimensions|bfloat16\. Please|"
    r"string must not be empty|must be (?:str or )?torch\.device|device must be provided|schedule too many|layout|"
    r"memory size|is not available on the current|QueryPool|synchroniz|index must not be negative|device handle|"
    r"device to be set|mesh|DTensor|device cache|no_device_partitions|named tensors|Output dim sizes|"
    r"std and var|does not have a corresponding|at start of device string|not have a device index|"
    r"make_generator_for_device|specified index or an integer|MKLDNN|mkldnn|Vulkan|vulkan|nvfuser|fusions|"
    r"not compiled for|should not be called for both|allocator|RNG forking|instantiation requires|"
    r"cudaHostRegister|Device type with index|device id must be positive|must be a constant|"
    r"no space left|performance may be|barrier|while executing on device|Generator\(|string literal|AOTI|"
    r"Execution of this Module|data cache|"
    # A library's set-up and version requirements, which name a device map without placing anything.
    r"pip install|requires? (?:`?accelerate|the `accelerate`|torch|PyTorch|Accelerate)|mutually exclusive|"
    r"low_cpu_mem_usage|tp_plan|tensor.parallel|_no_split_modules|offload_(?:folder|dir)|Flax|DeepSpeed|"
    r"attention blocks|keys are missing|enough GPU RAM|with a device_map that contains|graphs:|kernel repo|"
    r"shape mismatches|tf2onnx|not enough free device memory|This script is to be run|CUDA \d+(?:\.\d+)? and above",
    re.IGNORECASE,
)
# A message whose fixed text is shorter than this is a fragment no paste could be matched by.
MINIMUM_TEXT = 12


@dataclass(frozen=True)
class Found:
    """One message as one tree raises it."""

    template: str
    raised: str
    where: str

    @property
    def key(self) -> str:
        return key_of(self.template)


@dataclass
class Record:
    key: str
    template: str
    raised: str
    where: str
    versions: list[str] = field(default_factory=list)
    entries: list[str] = field(default_factory=list)
    outside: str | None = None


def key_of(template: str) -> str:
    """The template with every spliced-in value as `{}` and runs of blanks as one space: the same
    message from two releases whose variable names differ is one message."""
    return " ".join(re.sub(r"\{[^{}]*\}", "{}", template).split())


def in_family(template: str) -> bool:
    text = re.sub(r"\{[^{}]*\}", " ", template)
    if len("".join(text.split())) < MINIMUM_TEXT:
        return False
    return any(p.search(text) for p in FAMILY) and not NOT_FAMILY.search(text)


# ---------------------------------------------------------------------------------------------- C++


def _without_comments(code: str) -> str:
    """The code with comments blanked (newlines kept, so offsets and line numbers still hold) and
    string literals left intact."""
    out: list[str] = []
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if c == '"' or (c == "'" and not (i and (code[i - 1].isalnum()))):
            end = _literal_end(code, i)
            out.append(code[i:end])
            i = end
        elif code.startswith("//", i):
            end = code.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif code.startswith("/*", i):
            end = code.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("".join(ch if ch == "\n" else " " for ch in code[i:end]))
            i = end
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _literal_end(code: str, start: int) -> int:
    quote = code[start]
    i = start + 1
    while i < len(code) and code[i] != quote:
        if code[i] == "\\":
            i += 1
        elif code[i] == "\n":
            break
        i += 1
    return i + 1


def _call_args(code: str, open_paren: int) -> tuple[list[str], int] | None:
    """The top-level arguments of the call whose `(` is at `open_paren`, and where it closes."""
    depth, i, start = 0, open_paren, open_paren + 1
    args: list[str] = []
    while i < len(code):
        c = code[i]
        if c == '"' or (c == "'" and not code[i - 1].isalnum()):
            i = _literal_end(code, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(code[start:i])
                return [a.strip() for a in args], i
        elif c == "," and depth == 1:
            args.append(code[start:i])
            start = i + 1
        i += 1
    return None


def _split_top(expr: str, separator: str) -> list[str]:
    parts, depth, start, i = [], 0, 0, 0
    while i < len(expr):
        c = expr[i]
        if c == '"' or (c == "'" and not (i and expr[i - 1].isalnum())):
            i = _literal_end(expr, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and expr.startswith(separator, i):
            parts.append(expr[start:i])
            i += len(separator)
            start = i
            continue
        i += 1
    parts.append(expr[start:])
    return [p.strip() for p in parts if p.strip()]


# Literals, and in a macro's body `#x`, the argument's own text (`#x " must be on CUDA"`).
_STRINGS_ONLY = re.compile(r'^(?:\s*(?:(?:u8|L|u|U)?"(?:[^"\\\n]|\\.)*"|#\s*\w+))+\s*$')
_ONE_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"|#\s*(\w+)')


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": " ", "t": " "}.get(m.group(1), m.group(1)), body)


def _cpp_pieces(expr: str) -> str:
    """One message argument as template text: literals as they read, anything else as `{expr}`."""
    expr = expr.strip()
    if '"' in expr and _STRINGS_ONLY.match(expr):
        return "".join(_unescape(text) if not name else "{" + name + "}" for text, name in _ONE_STRING.findall(expr))
    for name in _FORMATTERS:
        if expr.startswith(name) and expr[len(name) :].lstrip().startswith("("):
            parsed = _call_args(expr, expr.index("(", len(name)))
            if parsed and parsed[1] == len(expr) - 1:
                return "".join(_cpp_pieces(a) for a in parsed[0])
    if '"' in expr and len(parts := _split_top(expr, "+")) > 1:
        return "".join(_cpp_pieces(p) for p in parts)
    return "{" + " ".join(expr.split()) + "}"


def _line_of(code: str, offset: int) -> int:
    return code.count("\n", 0, offset) + 1


def cpp_messages(code: str, where: str) -> Iterator[Found]:
    """Every message a C++ file raises through a check macro, every `stream << "..."` statement
    (the messages built up before an `AT_ERROR(oss.str())`), and every message streamed into a glog
    check or fatal log line. A check in a macro's body is read once, where the macro is defined, with
    the stringified argument as a value."""
    code = _without_comments(code).replace("\\\n", " \n")
    for hit in _RAISER.finditer(code):
        parsed = _call_args(code, hit.end() - 1)
        if not parsed:
            continue
        args, _ = parsed
        macro = hit.group(1)
        message = args[CPP_RAISERS[macro] :]
        if macro == "C10_THROW_ERROR" and args:
            raised = args[0]
        else:
            raised = CPP_EXCEPTIONS.get(macro, "RuntimeError")
        template = "".join(_cpp_pieces(a) for a in message)
        if '"' in " ".join(message):
            yield Found(template, raised, f"{where}:{_line_of(code, hit.start())}")
    for hit in _GLOG.finditer(code):
        parsed = _call_args(code, hit.end() - 1)
        if not parsed or (hit.group(0).startswith("LOG") and parsed[0] != ["FATAL"]):
            continue
        after = parsed[1] + 1
        if not code[after:].lstrip().startswith("<<"):
            continue
        end = code.find(";", after)
        end = end if end > 0 else len(code)
        template = "".join(_cpp_pieces(p) for p in _split_top(code[after:end], "<<"))
        if '"' in code[after:end]:
            yield Found(template, "RuntimeError", f"{where}:{_line_of(code, hit.start())}")
    # Consecutive statements into one stream build one message.
    pending: tuple[str, int, int, str] | None = None  # stream, start, end, template so far
    for hit in _STREAM.finditer(code):
        if pending and hit.start() < pending[2]:
            continue
        end = code.find(";", hit.start())
        end = end if end > 0 else len(code)
        stream, *parts = _split_top(code[hit.start() : end], "<<")
        template = "".join(_cpp_pieces(p) for p in parts)
        if pending and pending[0] == stream and not code[pending[2] + 1 : hit.start()].strip():
            pending = (stream, pending[1], end, pending[3] + template)
            continue
        if pending:
            yield Found(pending[3], "RuntimeError", f"{where}:{_line_of(code, pending[1])}")
        pending = (stream, hit.start(), end, template) if '"' in code[hit.start() : end] else None
    if pending:
        yield Found(pending[3], "RuntimeError", f"{where}:{_line_of(code, pending[1])}")


# ------------------------------------------------------------------------------------------- Python


def _py_text(node: ast.expr) -> str | None:
    """A message expression as template text, or None where it holds no literal text at all."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                parts.append("{" + ast.unparse(value.value) + "}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _py_text(node.left), _py_text(node.right)
        if left is None and right is None:
            return None
        return (left if left is not None else "{" + ast.unparse(node.left) + "}") + (
            right if right is not None else "{" + ast.unparse(node.right) + "}"
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and (base := _py_text(node.left)):
        return re.sub(r"%[-#0 +]*\d*(?:\.\d+)?[sdrfi]", "{}", base)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and (base := _py_text(node.func.value))
    ):
        return base
    if isinstance(node, ast.Lambda):
        return _py_text(node.body)
    return None


def _called(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


# A message built in a variable before `raise X(msg)`.
_MESSAGE_NAME = re.compile(r"(?:err(?:or)?_?)?(?:msg|message)\w*|err(?:or)?", re.IGNORECASE)


def py_messages(source: str, where: str) -> Iterator[Found]:
    """Messages raised by `raise X("...")`, by `assert cond, "..."` and by `torch._check*`-style
    helpers, which take the message as a later argument or a lambda returning it."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and _MESSAGE_NAME.fullmatch(node.targets[0].id)
            and (text := _py_text(node.value)) is not None
        ):
            yield Found(text, "RuntimeError", f"{where}:{node.lineno}")
        elif isinstance(node, ast.Assert) and node.msg is not None and (text := _py_text(node.msg)) is not None:
            yield Found(text, "AssertionError", f"{where}:{node.lineno}")
        elif isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            text = _py_text(node.exc.args[0])
            if text is not None:
                yield Found(text, _called(node.exc) or "Exception", f"{where}:{node.lineno}")
        elif isinstance(node, ast.Call) and re.fullmatch(r"_?check(?:_\w+)?", _called(node)):
            for arg in [*node.args[1:], *(k.value for k in node.keywords)]:
                text = _py_text(arg)
                if text is not None:
                    yield Found(text, "RuntimeError", f"{where}:{node.lineno}")
                    break


# -------------------------------------------------------------------------------------------- trees


def _files(root: Path, dirs: Iterable[str], suffixes: set[str]) -> Iterator[Path]:
    for name in dirs:
        top = root / name
        candidates = [top] if top.is_file() else sorted(top.rglob("*")) if top.is_dir() else []
        for path in candidates:
            relative = path.relative_to(root).parts
            if path.suffix in suffixes and not SKIPPED_PARTS.intersection(relative) and path.is_file():
                yield path


def package_root(path: Path) -> tuple[Path, str]:
    """The directory the `torch/...` and `aten/...` paths are relative to, and whether it is a source
    tree or an installed package (a directory named `torch` holding `__init__.py`)."""
    if (path / "torch/__init__.py").is_file() or (path / "aten").is_dir():
        return path, "source" if (path / "aten").is_dir() else "package"
    if path.name == "torch" and (path / "__init__.py").is_file():
        return path.parent, "package"
    raise SystemExit(f"{path}: neither a PyTorch source tree nor an installed torch package")


def read_tree(path: Path) -> tuple[list[Found], dict[str, str]]:
    """The family messages a tree raises, and, for an installed package, the printable strings of its
    shared libraries, each with the library it is in (to date C++ messages found in a source tree,
    and to find the ones a newer release added). A string that is one piece of a check's message is
    also kept as `piece NUL message`, the message as `_assembled` rebuilds it."""
    root, kind = package_root(path)
    found: list[Found] = []
    if kind == "source":
        for file in _files(root, CPP_DIRS, CPP_SUFFIXES):
            where = str(file.relative_to(root))
            found.extend(cpp_messages(file.read_text(errors="replace"), where))
    for file in _files(root, PY_DIRS, {".py"}):
        found.extend(py_messages(file.read_text(errors="replace"), str(file.relative_to(root))))
    strings: dict[str, str] = {}
    if kind == "package":
        for library in sorted((root / "torch/lib").glob("*.so*")) + sorted((root / "torch").glob("_C*.so")):
            name = str(library.relative_to(root))
            for text, whole in _assembled(library.read_bytes()):
                strings.setdefault(text, name)
                if whole != text:
                    strings.setdefault(f"{text}\0{whole}", name)
    return [f for f in found if in_family(f.template)], strings


def read_library(path: Path) -> list[Found]:
    """The family messages a library built on PyTorch raises: every Python file of an installed package
    or a checkout, and every C++/CUDA file of its extension kernels, tests left out."""
    found: list[Found] = []
    for file in sorted(path.rglob("*")):
        relative = file.relative_to(path)
        if SKIPPED_PARTS.intersection(relative.parts) or not file.is_file():
            continue
        if file.suffix == ".py":
            found.extend(py_messages(file.read_text(errors="replace"), str(relative)))
        elif file.suffix in CPP_SUFFIXES:
            found.extend(cpp_messages(file.read_text(errors="replace"), str(relative)))
    return [f for f in found if in_family(f.template)]


# A check records the file it is in (`__FILE__`) next to the pieces of its message.
_SOURCE_FILE = re.compile(r"/(?:aten|c10|torch)/\S+\.(?:cpp|cc|cu|h|hpp|mm)$")
_PIECES_BEFORE = 4


def _assembled(data: bytes) -> Iterator[tuple[str, str]]:
    """Each printable string of a binary (12 characters or more), with the message it is a piece of:
    the strings just before a source file's path that go on one sentence, joined where values were
    spliced in. The compiler lays a check's literals out together, and its file name after them."""
    recent: list[str] = []
    for run in re.finditer(rb"[\x20-\x7e]{4,}", data):
        text = run.group(0).decode("ascii")
        if _SOURCE_FILE.search(text):
            # A message's later pieces go on a sentence (", different from ...", " (when ..."); the
            # piece that starts one begins another check's message.
            start = len(recent) - 1
            while start > 0 and not recent[start][:1].isalnum():
                start -= 1
            message = recent[max(start, 0) :]
            whole = "{}".join(message) + ("{}" if message and message[-1].endswith((" ", "(", ":")) else "")
            for piece in message:
                if len(piece) >= 12:
                    yield piece, whole
            recent = []
            continue
        recent = [*recent[-(_PIECES_BEFORE - 1) :], text]
        if len(text) >= 12:
            yield text, text


def _literals(template: str) -> list[str]:
    return [p for p in re.split(r"\{[^{}]*\}", template) if len(p.strip()) >= 12]


def in_binary(template: str, strings: str) -> bool:
    """Whether a binary holds a message: its longest literal piece is in one of the binary's strings
    (`strings`: all of them, one a line), where the compiler may have merged it with its neighbours."""
    pieces = _literals(template)
    return bool(pieces) and max(pieces, key=len).strip() in strings


# A binary's strings include symbols, format strings and option help; a message reads as words.
_SENTENCE = re.compile(r"(?!_Z)[A-Za-z][\w.()]*[ :][^%]*$")


def binary_only(strings: dict[str, str], known: Iterable[str]) -> Iterator[Found]:
    """Family messages a binary holds that no source tree read raises: the text of a release newer
    than the sources at hand, rebuilt from its pieces where `read_tree` could, with `{}` where a value
    is spliced in."""
    known = list(known)
    pieces = "\n".join(p.strip() for t in known for p in re.split(r"\{[^{}]*\}", t))
    longest = [max(p, key=len).strip() for t in known if (p := _literals(t))]
    wholes = dict(key.split("\0", 1) for key in strings if "\0" in key)
    for text, library in strings.items():
        if "\0" in text or not _SENTENCE.match(text):
            continue
        template = wholes.get(text) or (text + "{}" if text.endswith((" ", ":", "=")) else text)
        if not in_family(template) or not _SENTENCE.match(template):
            continue
        if text.strip() not in pieces and not any(piece in template for piece in longest):
            yield Found(template, "RuntimeError", library)


def merge(previous: list[Record], trees: list[tuple[str, list[Found], dict[str, str]]]) -> list[Record]:
    """Today's records: each message's latest template and place, every version that raises it, and
    the entries a person assigned to it before."""
    kept = {r.key: r for r in previous}
    records: dict[str, Record] = {}
    for version, found, _ in trees:
        for f in found:
            record = records.setdefault(f.key, Record(f.key, f.template, f.raised, f.where))
            record.template, record.raised, record.where = f.template, f.raised, f.where
            if version not in record.versions:
                record.versions.append(version)
    for version, _, strings in trees:
        if strings:
            lines = "\n".join(t for t in strings if "\0" not in t)
            for record in records.values():
                if version not in record.versions and in_binary(record.template, lines):
                    record.versions.append(version)
            for f in binary_only(strings, [r.template for r in records.values()]):
                records.setdefault(f.key, Record(f.key, f.template, f.raised, f.where, [version]))
    for record in records.values():
        record.versions.sort(key=_version_key)
        if (before := kept.get(record.key)) is not None:
            record.entries, record.outside = list(before.entries), before.outside
    return sorted(records.values(), key=lambda r: r.key.lower())


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version))


def load(path: Path = OUTPUT) -> list[Record]:
    if not path.is_file():
        return []
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    return [Record(**item) for item in data]


HEADER = """\
# {owner} device-placement error messages, extracted from its source by tools/extract_messages.py.
# `key` is the message with every spliced-in value as {{}}; `template` shows what is spliced in; `where`
# is the file and line that raises it in the newest tree read; `versions` are the trees that raise it.
# A binary build only shows what it compiled: a Linux CPU wheel holds no CUDA or MPS kernel's message.
# Curated by hand and kept across runs: `entries`, the KB causes behind the message, or `outside`, why
# no KB cause covers it yet. The KB's tests require one of the two for every message.
"""


def dump(records: list[Record], library: str = "pytorch") -> str:
    items = [
        {
            "key": r.key,
            "template": r.template,
            "raised": r.raised,
            "where": r.where,
            "versions": list(r.versions),
            "entries": list(r.entries),
            **({"outside": r.outside} if r.outside else {}),
        }
        for r in records
    ]
    owner = "PyTorch's" if library == "pytorch" else f"{library}'" if library.endswith("s") else f"{library}'s"
    return HEADER.format(owner=owner) + yaml.safe_dump(
        items, sort_keys=False, allow_unicode=True, width=1000, default_flow_style=None
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", metavar="VERSION=PATH", help="a source tree or installed torch package")
    parser.add_argument(
        "--library",
        metavar="NAME",
        help="read a library built on PyTorch (an installed package or a checkout) instead of PyTorch; "
        "its messages go to kb/messages/NAME.yaml",
    )
    parser.add_argument("--output", type=Path, help=f"default: {OUTPUT.relative_to(ROOT)}, or the library's file")
    args = parser.parse_args(argv)
    output = args.output or (OUTPUT.with_name(f"{args.library}.yaml") if args.library else OUTPUT)
    trees = []
    for spec in args.trees:
        version, sep, path = spec.partition("=")
        if not sep or not Path(path).is_dir():
            parser.error(f"{spec}: expected VERSION=PATH to an existing directory")
        found, strings = (read_library(Path(path)), {}) if args.library else read_tree(Path(path))
        print(f"{version}: {len({f.key for f in found})} messages", file=sys.stderr)
        trees.append((version, found, strings))
    records = merge(load(output), trees)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(dump(records, args.library or "pytorch"), encoding="utf-8")
    unassigned = sum(not r.entries and not r.outside for r in records)
    print(f"{len(records)} messages written to {output}; {unassigned} to assign", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
