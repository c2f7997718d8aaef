"""What every codemod shares: the target (where the error surfaced), running one, naming code.

A codemod is a LibCST transformer with positions available. It receives the lines of the file the
traceback named, so it can prefer the code that actually failed, and it changes nothing when the
pattern it fixes is not there: a codemod never guesses.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import ClassVar, Literal

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, ProviderT

Safety = Literal["safe", "unsafe"]


@dataclass(frozen=True)
class Target:
    """Lines of this file that the traceback passes through (1-based), innermost last."""

    lines: tuple[int, ...] = ()


class Codemod(cst.CSTTransformer):
    id: ClassVar[str]
    safety: ClassVar[Safety]
    summary: ClassVar[str]
    METADATA_DEPENDENCIES: ClassVar[Collection[ProviderT]] = (PositionProvider,)

    def __init__(self, target: Target) -> None:
        super().__init__()
        self.target = target

    def line_of(self, node: cst.CSTNode) -> int:
        return self.get_metadata(PositionProvider, node).start.line

    def spans_target(self, node: cst.CSTNode) -> bool:
        span = self.get_metadata(PositionProvider, node)
        return any(span.start.line <= line <= span.end.line for line in self.target.lines)


def run(codemod: type[Codemod], source: str, target: Target) -> str | None:
    """The transformed source, or None when the codemod found nothing to change (or cannot parse)."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return None
    changed = MetadataWrapper(module).visit(codemod(target)).code
    return changed if changed != source else None


def dotted(node: cst.BaseExpression) -> str | None:
    """`torch.nn.Linear` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = dotted(node.value)
        return f"{head}.{node.attr.value}" if head else None
    return None


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


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under `node`, itself first, in source order."""
    yield node
    for child in node.children:
        yield from walk(child)


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
