"""What every codemod shares: the target (where the error surfaced), running one, naming code.

A codemod is a LibCST transformer with positions available. It receives the lines of the file the
traceback named, so it can prefer the code that actually failed, and it changes nothing when the
pattern it fixes is not there: a codemod never guesses.

Safety belongs to each edit, not to the codemod: the same rewrite keeps the meaning of one file and
changes another's (a buffer that `state_dict` never sees, or one it now saves). Every edit says which
with a reason (`judge`); an edit with no verdict counts as unsafe, and one unsafe edit makes the
whole patch unsafe, so `--apply --yes` never writes more than was shown to be harmless.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import ClassVar, Literal

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, ProviderT

from fixer.explain.detectors.syntax import resolve_name
from fixer.patching import registry

Safety = Literal["safe", "unsafe"]


@dataclass(frozen=True)
class Target:
    """Lines of this file that the traceback passes through (1-based), innermost last; `innermost`: no
    other file fixer reads holds a frame nearer the error (an outer file only called into it)."""

    lines: tuple[int, ...] = ()
    innermost: bool = True


@dataclass(frozen=True)
class Verdict:
    safety: Safety
    why: str  # one line a reviewer can check against the diff


@dataclass(frozen=True)
class Edit:
    """A codemod's rewrite of one file and whether it keeps the file's meaning."""

    code: str
    safety: Safety
    why: tuple[str, ...] = field(default=())


class Codemod(cst.CSTTransformer):
    id: ClassVar[str]
    summary: ClassVar[str]
    innermost_only: ClassVar[bool] = False  # rewrites only the file nearest the error: others are not read
    METADATA_DEPENDENCIES: ClassVar[Collection[ProviderT]] = (PositionProvider,)

    def __init__(self, target: Target) -> None:
        super().__init__()
        self.target = target
        self.verdicts: list[Verdict] = []

    def judge(self, safety: Safety, why: str) -> None:
        """Say, for an edit this codemod makes, whether it keeps the meaning of the code and why."""
        self.verdicts.append(Verdict(safety, why))

    def line_of(self, node: cst.CSTNode) -> int:
        return self.get_metadata(PositionProvider, node).start.line

    def spans_target(self, node: cst.CSTNode) -> bool:
        span = self.get_metadata(PositionProvider, node)
        return any(span.start.line <= line <= span.end.line for line in self.target.lines)


_UNJUDGED = Verdict("unsafe", "the codemod gave no reason to trust this edit")


def run(codemod: type[Codemod], source: str, target: Target) -> Edit | None:
    """The rewrite and its verdict, or None when the codemod found nothing to change (or cannot parse).

    The reasons given are those behind the verdict: for an unsafe edit, what may change."""
    if not registry.may_change(codemod.id, source):
        return None
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return None
    transformer = codemod(target)
    # The tree was parsed here for this one visit: the wrapper's defensive deep copy is a tenth of a second
    # per file for nothing.
    changed = MetadataWrapper(module, unsafe_skip_copy=True).visit(transformer).code
    if changed == source:
        return None
    verdicts = transformer.verdicts or [_UNJUDGED]
    safety: Safety = "safe" if all(v.safety == "safe" for v in verdicts) else "unsafe"
    return Edit(changed, safety, tuple(dict.fromkeys(v.why for v in verdicts if v.safety == safety)))


def dotted(node: cst.BaseExpression) -> str | None:
    """`torch.nn.Linear` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = dotted(node.value)
        return f"{head}.{node.attr.value}" if head else None
    return None


def torch_names(module: cst.Module) -> dict[str, str]:
    """Local name -> the torch name it stands for: `th` after `import torch as th`, `zeros` after `from
    torch import zeros`; what the detectors' `syntax.aliases` reads, for the codemods that patch it."""
    names = {"torch": "torch"}
    for statement in module.body:
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Import):
                for alias in small.names:
                    name = dotted(alias.name)
                    if name and (name == "torch" or name.startswith("torch.")):
                        local = dotted(alias.asname.name) if alias.asname is not None else name
                        names[local or name] = name
            elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
                source = dotted(small.module)
                if (
                    source
                    and (source == "torch" or source.startswith("torch."))
                    and not isinstance(small.names, cst.ImportStar)
                ):
                    for alias in small.names:
                        imported = dotted(alias.name)
                        local = dotted(alias.asname.name) if alias.asname is not None else imported
                        if imported and local:
                            names[local] = f"{source}.{imported}"
    return names


def resolved(node: cst.BaseExpression, names: dict[str, str]) -> str | None:
    """The torch name a callee stands for (`th.zeros` -> `torch.zeros` after `import torch as th`); a
    name from anywhere else is itself."""
    return resolve_name(dotted(node), names)


def method_call(node: cst.BaseExpression, *names: str) -> cst.Call | None:
    """`x.to(...)` / `x.cuda()`: the call when its callee is an attribute named one of `names`."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in names:
        return node
    return None


def module_constructor(node: cst.BaseExpression) -> bool:
    """`nn.Linear(...)`, `torch.nn.Conv2d(...)`, `MyHead(...)`: a call of a capitalised callable."""
    if not isinstance(node, cst.Call):
        return False
    name = dotted(node.func)
    return name is not None and name.rsplit(".", 1)[-1][:1].isupper()


def chain_to(value: cst.BaseExpression, move: cst.Call) -> cst.Call:
    """`value.to(<same args as move>)` (or `.cuda(...)`), reusing the user's own device expression."""
    assert isinstance(move.func, cst.Attribute)
    return cst.Call(func=cst.Attribute(value=value, attr=move.func.attr), args=move.args)


@lru_cache(maxsize=1 << 16)
def children(node: cst.CSTNode) -> Sequence[cst.CSTNode]:
    """`node.children`, once per node: LibCST computes it by a visit each time it is read, and the
    codemods' walks read it over and over (nodes are immutable and hashed by identity)."""
    return node.children


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under `node`, itself first, in source order."""
    yield node
    for child in children(node):
        yield from walk(child)


def functions_with_class(module: cst.Module) -> dict[cst.FunctionDef, cst.ClassDef | None]:
    """Every function of the file, in source order, with the class it is a method of (None for a plain or
    nested function). Read from the statements alone: a visit of every expression would cost as much as
    the codemod's own."""
    found: dict[cst.FunctionDef, cst.ClassDef | None] = {}

    def index(statements: Iterable[cst.CSTNode], cls: cst.ClassDef | None) -> None:
        for statement in statements:
            if isinstance(statement, cst.FunctionDef):
                found[statement] = cls
                index(_inner_statements(statement), None)
            elif isinstance(statement, cst.ClassDef):
                index(_inner_statements(statement), statement)
            else:
                index(_inner_statements(statement), cls)

    index(module.body, None)
    return found


def _inner_statements(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The statements directly inside a compound statement's blocks (`else`, `elif`, `except`, `finally`
    and `case` included), in source order; none inside a simple one."""
    for name in ("body", "orelse", "handlers", "finalbody", "cases"):
        part = getattr(node, name, None)
        for piece in part if isinstance(part, Sequence) else (part,):
            if isinstance(piece, cst.IndentedBlock):
                yield from piece.body
            elif isinstance(piece, cst.If):  # an `elif`
                yield piece
            elif isinstance(piece, cst.Else | cst.Finally | cst.ExceptHandler | cst.ExceptStarHandler | cst.MatchCase):
                yield from _inner_statements(piece)


def module_classes(module: cst.Module) -> list[cst.ClassDef]:
    """Classes of this file that are nn.Module subclasses, directly or through another class here."""
    classes = [n for n in walk(module) if isinstance(n, cst.ClassDef)]
    modules: set[str] = set()
    changed = True
    while changed:
        changed = False
        for cls in classes:
            bases = {dotted(base.value) or "" for base in cls.bases}
            if cls.name.value not in modules and any(b.endswith("Module") or b in modules for b in bases):
                modules.add(cls.name.value)
                changed = True
    return [cls for cls in classes if cls.name.value in modules]


def imported_layers(module: cst.Module) -> set[str]:
    """Names imported from torch.nn (`from torch.nn import Linear`), usable bare."""
    names: set[str] = set()
    for node in walk(module):
        if isinstance(node, cst.ImportFrom) and dotted(node.module or cst.Name("_")) == "torch.nn":
            for alias in node.names if isinstance(node.names, list | tuple) else ():
                if isinstance(alias.name, cst.Name) and alias.asname is None:
                    names.add(alias.name.value)
    return names
