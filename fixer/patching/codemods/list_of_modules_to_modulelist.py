"""submodules-in-plain-container: layers kept in a Python list or dict attribute of an nn.Module.

`nn.Module` registers an attribute as a submodule only when the value itself is a module, so
`self.blocks = [nn.Linear(...) for ...]` (or a dict of heads, or a list filled with `.append`) hides
its layers from `.to()`, `parameters()`, `state_dict()` and `train()/eval()`; after
`model.to(device)` they are still on the CPU and the first forward pass through them fails.

The codemod wraps the container the failing method reads, where `__init__` builds it from layer
constructors (`nn.X(...)`, `torch.nn.X(...)`, or a module class of this file): a list literal, a list
comprehension or a tuple becomes `nn.ModuleList([...])`; a dict with string keys becomes
`nn.ModuleDict({...})`; an empty list filled by `.append`/`.extend` becomes `nn.ModuleList()`, and an
empty dict filled by `d["key"] = layer` becomes `nn.ModuleDict()`; a local list appended to and then
assigned, `self.blocks = blocks`, becomes `nn.ModuleList(blocks)`. It spells `nn` the way the file
imports it, and leaves the code alone when the attribute is reassigned elsewhere, used with list or
dict operations the module containers lack (`+`, `.sort()`, `.index()`, `.get()`, ...), keyed by
something other than strings, or holds anything but layers.

Unsafe, every patch: registering the layers is what the author meant, but it changes `parameters()`
(an optimizer built from the old model never saw them), the `state_dict` keys (old checkpoints lack
them) and what `.to()`, `.half()` and `.eval()` reach.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst
from libcst.metadata import PositionProvider

from fixer.patching.base import Codemod, Target, dotted, imported_layers, module_classes, walk

_LIST_ONLY = frozenset({"sort", "index", "count", "copy", "remove", "reverse", "clear", "get", "setdefault", "popitem"})


class ListOfModulesToModuleList(Codemod):
    id = "list-of-modules-to-modulelist"
    summary = "hold the layers in nn.ModuleList / nn.ModuleDict so .to() and .parameters() see them"

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self._fixes: dict[cst.BaseExpression, cst.BaseExpression] = {}  # value -> its replacement

    def visit_Module(self, node: cst.Module) -> bool:
        nn = _nn_prefix(node)
        if nn is None:
            return True
        classes = module_classes(node)
        layer_classes = {c.name.value for c in classes} | imported_layers(node)
        for line in reversed(self.target.lines):
            cls = next((c for c in classes if self._span(c)[0] <= line <= self._span(c)[1]), None)
            if cls is None:
                continue
            method = next((m for m in _methods(cls) if self._span(m)[0] <= line <= self._span(m)[1]), None)
            init = next((m for m in _methods(cls) if m.name.value == "__init__"), None)
            if method is None or init is None:
                continue
            read = _self_attributes(method)
            for name in read if method is not init else []:
                fix = _plan(cls, init, name, nn, layer_classes)
                if fix is not None:
                    self._fixes.setdefault(*fix)
            if self._fixes:
                break
        return True

    def _span(self, node: cst.CSTNode) -> tuple[int, int]:
        pos = self.get_metadata(PositionProvider, node)
        return pos.start.line, pos.end.line

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        replacement = self._fixes.get(original_node.value)
        if replacement is None:
            return updated_node
        self.judge("unsafe", "the layers join parameters() and state_dict: new keys, and the optimizer now trains them")
        return updated_node.with_changes(value=replacement)


def _plan(
    cls: cst.ClassDef, init: cst.FunctionDef, name: str, nn: str, layers: set[str]
) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """The value of `self.<name> = ...` in __init__ and what to put there, or None to leave it alone."""
    assignments = [n for m in _methods(cls) for n in walk(m) if _assigns_attribute(n, name)]
    if len(assignments) != 1 or not any(n is assignments[0] for n in walk(init)):
        return None
    assignment = assignments[0]
    assert isinstance(assignment, cst.Assign)
    if _misused(cls, name):
        return None
    value = assignment.value

    def wrap(kind: str, *args: cst.BaseExpression) -> cst.Call:
        return cst.Call(func=cst.parse_expression(f"{nn}{kind}"), args=[cst.Arg(a) for a in args])

    if isinstance(value, (cst.List, cst.ListComp)) and _all_layers(value, layers):
        return value, wrap("ModuleList", value)
    if isinstance(value, cst.Tuple) and value.elements and _all_layers(value, layers):
        return value, wrap(
            "ModuleList", cst.List(elements=[e.with_changes(comma=cst.MaybeSentinel.DEFAULT) for e in value.elements])
        )
    if isinstance(value, (cst.Dict, cst.DictComp)) and _all_layers(value, layers):
        return value, wrap("ModuleDict", value)
    if _empty(value, "list") and _filled_by_append(cls, f"self.{name}", layers):
        return value, wrap("ModuleList")
    if _empty(value, "dict") and _filled_by_key(cls, name, layers):
        return value, wrap("ModuleDict")
    if isinstance(value, cst.Name) and _local_list_of_layers(init, value.value, assignment, layers):
        return value, wrap("ModuleList", value)
    return None


def _all_layers(value: cst.BaseExpression, layers: set[str]) -> bool:
    if isinstance(value, cst.ListComp):
        return _is_layer(value.elt, layers)
    if isinstance(value, (cst.List, cst.Tuple)):
        return bool(value.elements) and all(
            isinstance(e, cst.Element) and _is_layer(e.value, layers) for e in value.elements
        )
    if isinstance(value, cst.DictComp):
        return _string_key(value.key) and _is_layer(value.value, layers)
    if isinstance(value, cst.Dict):
        return bool(value.elements) and all(
            isinstance(e, cst.DictElement) and _string_key(e.key) and _is_layer(e.value, layers) for e in value.elements
        )
    return False


def _is_layer(node: cst.BaseExpression, layers: set[str]) -> bool:
    """A call that builds a layer: `nn.Linear(...)`, `torch.nn.Conv2d(...)`, a module class of this file."""
    if not isinstance(node, cst.Call):
        return False
    name = dotted(node.func)
    if name is None:
        return False
    head, _, last = name.rpartition(".")
    if not last[:1].isupper():
        return False
    return head in ("nn", "torch.nn") or (not head and last in layers)


def _string_key(key: cst.BaseExpression) -> bool:
    """ModuleDict keys must be strings: a literal, an f-string or `str(...)`."""
    if isinstance(key, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
        return True
    return isinstance(key, cst.Call) and dotted(key.func) == "str"


def _empty(value: cst.BaseExpression, kind: str) -> bool:
    if kind == "list" and isinstance(value, cst.List):
        return not value.elements
    if kind == "dict" and isinstance(value, cst.Dict):
        return not value.elements
    return isinstance(value, cst.Call) and dotted(value.func) == kind and not value.args


def _filled_by_append(scope: cst.CSTNode, container: str, layers: set[str]) -> bool:
    """`<container>.append(layer)` / `.extend([layers])` somewhere, and nothing else appended."""
    local_layers = _names_bound_to_layers(scope, layers)
    found = False
    for node in walk(scope):
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
            continue
        if dotted(node.func.value) != container or node.func.attr.value not in ("append", "extend", "insert"):
            continue
        if not node.args:
            return False
        item = node.args[-1].value
        if node.func.attr.value == "extend":
            ok = isinstance(item, (cst.List, cst.ListComp, cst.Tuple)) and _all_layers(item, layers)
        else:
            ok = _is_layer(item, layers) or (isinstance(item, cst.Name) and item.value in local_layers)
        if not ok:
            return False
        found = True
    return found


def _filled_by_key(cls: cst.ClassDef, name: str, layers: set[str]) -> bool:
    """`self.<name>["key"] = layer` somewhere, and nothing but layers stored under string keys."""
    found = False
    for node in walk(cls):
        if not isinstance(node, cst.Assign):
            continue
        for target in node.targets:
            t = target.target
            if isinstance(t, cst.Subscript) and dotted(t.value) == f"self.{name}":
                index = t.slice[0].slice if len(t.slice) == 1 else None
                key_ok = isinstance(index, cst.Index) and _string_key(index.value)
                if not (key_ok and _is_layer(node.value, layers)):
                    return False
                found = True
    return found


def _local_list_of_layers(init: cst.FunctionDef, local: str, assignment: cst.Assign, layers: set[str]) -> bool:
    """`blocks = []`, `blocks.append(nn.X(...))`, then `self.x = blocks`, all in __init__."""
    bindings = [
        n for n in walk(init) if isinstance(n, cst.Assign) and any(dotted(t.target) == local for t in n.targets)
    ]
    if len(bindings) != 1 or not _empty(bindings[0].value, "list"):
        return False
    return _filled_by_append(init, local, layers)


def _names_bound_to_layers(scope: cst.CSTNode, layers: set[str]) -> set[str]:
    names = set()
    for node in walk(scope):
        if isinstance(node, cst.Assign) and _is_layer(node.value, layers):
            names |= {t.target.value for t in node.targets if isinstance(t.target, cst.Name)}
    return names


def _misused(cls: cst.ClassDef, name: str) -> bool:
    """Uses that work on a list or dict but not on nn.ModuleList / nn.ModuleDict."""
    container = f"self.{name}"
    for node in walk(cls):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            if dotted(node.func.value) == container and node.func.attr.value in _LIST_ONLY:
                return True
        elif isinstance(node, (cst.BinaryOperation, cst.AugAssign)):
            operands = (node.left, node.right) if isinstance(node, cst.BinaryOperation) else (node.target, node.value)
            if any(dotted(o) == container for o in operands):
                return True
    return False


def _assigns_attribute(node: cst.CSTNode, name: str) -> bool:
    if isinstance(node, cst.Assign):
        return any(dotted(t.target) == f"self.{name}" for t in node.targets)
    if isinstance(node, (cst.AnnAssign, cst.AugAssign)):
        return dotted(node.target) == f"self.{name}"
    return False


def _self_attributes(method: cst.FunctionDef) -> list[str]:
    names: list[str] = []
    for node in walk(method):
        if (
            isinstance(node, cst.Attribute)
            and isinstance(node.value, cst.Name)
            and node.value.value == "self"
            and node.attr.value not in names
        ):
            names.append(node.attr.value)
    return names


def _nn_prefix(module: cst.Module) -> str | None:
    """How this file names torch.nn: `nn.`, `torch.nn.`, or None when it does not import it."""
    prefix = None
    for node in walk(module):
        if isinstance(node, cst.Import):
            for alias in node.names:
                name = dotted(alias.name)
                if name == "torch.nn" and alias.asname is not None:
                    return f"{dotted(alias.asname.name)}."
                if name in ("torch", "torch.nn") and alias.asname is None:
                    prefix = prefix or "torch.nn."
        elif isinstance(node, cst.ImportFrom) and dotted(node.module or cst.Name("_")) == "torch":
            for alias in node.names if isinstance(node.names, (list, tuple)) else ():
                if alias.name.value == "nn":
                    return f"{dotted(alias.asname.name) if alias.asname else 'nn'}."
    return prefix


def _methods(cls: cst.ClassDef) -> Iterator[cst.FunctionDef]:
    for statement in cls.body.body:
        if isinstance(statement, cst.FunctionDef):
            yield statement


CODEMOD = ListOfModulesToModuleList
