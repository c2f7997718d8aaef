"""module-created-in-forward: a layer constructed inside forward() (or another method) at every call.

`nn.LayerNorm(self.dim)(h)`, `head = nn.Linear(16, 2)` or `self.head = nn.Linear(...)` inside
`forward` builds a new layer on the CPU at every call: `model.to(device)` ran before it existed, so
it meets GPU data with CPU weights, and it is never trained either, being new and random each time.

The codemod moves such a construction, when the failing statement uses it, to the end of `__init__`
as an attribute, `self.<name> = nn.X(...)`, and lets the method use that attribute: the call
`nn.X(...)(h)` becomes `self.<name>(h)`, a local `head = nn.X(...)` becomes `head = self.head`, and a
`self.head = nn.X(...)` in the method moves as it is. It does so only when every argument of the
constructor means the same in `__init__`: literals, module-level names and builtins, and `self.<attr>`
attributes `__init__` sets and the method does not change. A layer sized from the input
(`nn.LayerNorm(h.shape[-1])`), built in a loop or comprehension (one per iteration), or in a class
without an `__init__` that calls `super().__init__()` is left alone: no automatic patch can know its
size at construction.

Unsafe, every patch: the layer is now built once, registered, moved and trained with the model,
which is the point, but the model's parameters, its `state_dict` (old checkpoints lack the new keys)
and the random numbers drawn at construction change, and an optimizer built before the change does
not train it. (A layer without weights or buffers never raises this error, so every layer moved
here has some.)
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Iterator

import libcst as cst
from libcst.metadata import PositionProvider

from fixer.patching.base import Codemod, Target, children, dotted, imported_layers, module_classes, walk

_LOOPS = (cst.For, cst.While, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.Lambda)


class MoveModuleToInit(Codemod):
    id = "move-module-to-init"
    summary = "build the layer once in __init__ (registered, moved and trained) instead of at every call"

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self._calls: dict[cst.Call, str] = {}  # constructor called on the spot -> attribute name
        self._locals: dict[cst.BaseExpression, str] = {}  # `local = <constructor>` value -> attribute name
        self._removed: set[cst.BaseSmallStatement] = set()  # `self.x = <constructor>` moved out of the method
        self._added: dict[cst.FunctionDef, list[cst.SimpleStatementLine]] = {}  # __init__ -> new statements

    # -- analysis -----------------------------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> bool:
        self._globals = _module_names(node)
        layer_classes = {c.name.value for c in module_classes(node)} | imported_layers(node)
        for line in reversed(self.target.lines):
            for cls in module_classes(node):
                if self._within(cls, line):
                    self._plan_class(cls, line, layer_classes)
            if self._added:
                break
        return True

    def _within(self, node: cst.CSTNode, line: int) -> bool:
        pos = self.get_metadata(PositionProvider, node)
        return pos.start.line <= line <= pos.end.line

    def _plan_class(self, cls: cst.ClassDef, line: int, layer_classes: set[str]) -> None:
        methods = [s for s in cls.body.body if isinstance(s, cst.FunctionDef)]
        init = next((m for m in methods if m.name.value == "__init__"), None)
        method = next((m for m in methods if self._within(m, line)), None)
        if init is None or method is None or method is init or not _calls_super_init(init):
            return
        if not method.params.params or method.params.params[0].name.value != "self":
            return
        if any(isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], cst.Return) for s in init.body.body):
            return
        failing = [s for s in _small_statements(method) if self._within(s, line)]
        if not failing:
            return
        taken = _attribute_names(cls) | {m.name.value for m in methods}
        init_bound = _bound_in(init)
        method_bound = _bound_in(method)
        init_attrs = _self_targets(init)
        method_attrs = _self_targets(method)

        def available(ctor: cst.Call, moved_attr: str | None = None) -> bool:
            return _available(ctor, init_bound, method_bound, init_attrs, method_attrs - {moved_attr}, self._globals)

        added: list[tuple[str, cst.Call]] = []
        reads = set().union(*(_reads(s) for s in failing))
        # (a) `nn.X(...)(h)` on the failing statement
        in_loop = any(isinstance(n, (cst.For, cst.While)) and self._within(n, line) for n in walk(method))
        for statement in [] if in_loop else failing:  # in a loop it builds one layer per iteration
            for call in _calls_outside_loops(statement):
                ctor = call.func
                if isinstance(ctor, cst.Call) and _is_layer(ctor, layer_classes) and available(ctor):
                    name = _fresh(_snake(dotted(ctor.func) or "layer"), taken)
                    self._calls[ctor] = name
                    added.append((name, ctor))
        # (b) `local = nn.X(...)` and (c) `self.x = nn.X(...)`, at the top of the method, used on the failing line
        for top in method.body.body:
            if self._within(top, line):
                break
            if not isinstance(top, cst.SimpleStatementLine):
                continue
            for small in top.body:
                if not (isinstance(small, cst.Assign) and len(small.targets) == 1):
                    continue
                target, value = small.targets[0].target, small.value
                if not (isinstance(value, cst.Call) and _is_layer(value, layer_classes)):
                    continue
                if isinstance(target, cst.Name) and target.value in reads and available(value):
                    if _assignments_to(method, target.value) != 1:
                        continue
                    name = _fresh(target.value, taken)
                    self._locals[value] = name
                    added.append((name, value))
                elif isinstance(target, cst.Attribute) and dotted(target) == f"self.{target.attr.value}":
                    attr = target.attr.value
                    if f"self.{attr}" not in reads or attr in init_attrs or _self_assignments(cls, attr) != 1:
                        continue
                    if not available(value, attr):
                        continue
                    self._removed.add(small)
                    added.append((attr, value))
        for name, _ in added:
            self.judge("unsafe", f"`{name}` is now trained and saved: parameters and state_dict keys change")
        if added:
            self._added[init] = [
                cst.SimpleStatementLine(
                    body=[
                        cst.Assign(
                            targets=[cst.AssignTarget(cst.Attribute(value=cst.Name("self"), attr=cst.Name(name)))],
                            value=ctor.deep_clone(),
                        )
                    ]
                )
                for name, ctor in added
            ]

    # -- rewriting ----------------------------------------------------------------------------------
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        name = self._calls.get(original_node)
        return updated_node if name is None else _self_attr(name)

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        name = self._locals.get(original_node.value)
        return updated_node if name is None else updated_node.with_changes(value=_self_attr(name))

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        if not any(small in self._removed for small in original_node.body):
            return updated_node
        kept = [new for old, new in zip(original_node.body, updated_node.body, strict=True) if old not in self._removed]
        if not kept:
            return cst.RemoveFromParent()
        return updated_node.with_changes(body=[*kept[:-1], kept[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)])

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        added = self._added.get(original_node)
        if not added or not isinstance(updated_node.body, cst.IndentedBlock):
            return updated_node
        body = updated_node.body
        return updated_node.with_changes(body=body.with_changes(body=[*body.body, *added]))


def _available(
    ctor: cst.Call,
    init_bound: set[str],
    method_bound: set[str],
    init_attrs: set[str],
    method_attrs: set[str],
    module_names: set[str],
) -> bool:
    """Whether every name the constructor reads means the same at the end of __init__."""
    own = set()  # names bound inside the constructor call itself (comprehension variables)
    for node in walk(ctor):
        if isinstance(node, cst.CompFor):
            own |= _target_names(node.target)
    for node in _names_read(ctor):
        if isinstance(node, cst.Attribute):  # self.<attr>
            attr = node.attr.value
            if attr not in init_attrs or attr in method_attrs:
                return False
            continue
        name = node.value
        if name in own:
            continue
        if name == "self" or name in method_bound or name in init_bound:
            return False
        if name not in module_names and not hasattr(builtins, name):
            return False
    return True


def _names_read(node: cst.CSTNode) -> Iterator[cst.Name | cst.Attribute]:
    """Names an expression reads, with `self.<attr>` kept whole; attribute and keyword names skipped."""
    if isinstance(node, cst.Attribute):
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            yield node
        else:
            yield from _names_read(node.value)
        return
    if isinstance(node, cst.Name):
        yield node
        return
    if isinstance(node, cst.Arg):
        yield from _names_read(node.value)
        return
    for child in children(node):
        yield from _names_read(child)


def _reads(node: cst.CSTNode) -> set[str]:
    found = set()
    for n in _names_read(node):
        found.add(n.value if isinstance(n, cst.Name) else f"self.{n.attr.value}")
    return found


def _is_layer(node: cst.Call, layers: set[str]) -> bool:
    """`nn.Linear(...)`, `torch.nn.LayerNorm(...)`, or a module class of this file."""
    name = dotted(node.func)
    if name is None:
        return False
    head, _, last = name.rpartition(".")
    if not last[:1].isupper():
        return False
    return head in ("nn", "torch.nn") or (not head and last in layers)


def _calls_outside_loops(node: cst.CSTNode) -> Iterator[cst.Call]:
    if isinstance(node, _LOOPS):
        return
    if isinstance(node, cst.Call):
        yield node
    for child in children(node):
        yield from _calls_outside_loops(child)


def _small_statements(method: cst.FunctionDef) -> Iterator[cst.BaseSmallStatement]:
    for node in walk(method):
        if isinstance(node, cst.BaseSmallStatement):
            yield node


def _bound_in(function: cst.FunctionDef) -> set[str]:
    """Parameters and every name the function binds (assignments, loops, with, imports, defs)."""
    params = function.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            names.add(star.name.value)
    for node in walk(function):
        if isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor)):
            names |= _target_names(node.target)
        elif isinstance(node, cst.AsName):
            names |= _target_names(node.name)
        elif isinstance(node, cst.NamedExpr):
            names |= _target_names(node.target)
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node is not function:
            names.add(node.name.value)
    return names


def _target_names(target: cst.CSTNode) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return set().union(*(_target_names(e.value) for e in target.elements))
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return set()


def _module_names(module: cst.Module) -> set[str]:
    """Names bound at the top of the module: imports, assignments, functions, classes."""
    names: set[str] = set()
    for statement in module.body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            names.add(statement.name.value)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        names |= _target_names(target.target)
                elif isinstance(small, cst.AnnAssign):
                    names |= _target_names(small.target)
                elif isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                    for alias in small.names:
                        bound = alias.asname.name if alias.asname else alias.name
                        first = (dotted(bound) or "").split(".")[0]
                        if first:
                            names.add(first)
    return names


def _calls_super_init(init: cst.FunctionDef) -> bool:
    return any(
        isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "__init__"
        for n in walk(init)
    )


def _attribute_names(cls: cst.ClassDef) -> set[str]:
    """Every `self.<name>` the class mentions, and names assigned in its body."""
    names = {n.attr.value for n in walk(cls) if isinstance(n, cst.Attribute) and dotted(n.value) == "self"}
    for statement in cls.body.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, (cst.Assign, cst.AnnAssign)):
                    targets = small.targets if isinstance(small, cst.Assign) else [small]
                    for t in targets:
                        names |= _target_names(t.target)
    return names


def _assignments_to(function: cst.FunctionDef, name: str) -> int:
    return sum(1 for n in walk(function) if isinstance(n, cst.AssignTarget) and name in _target_names(n.target))


def _self_assignments(cls: cst.ClassDef, attr: str) -> int:
    return sum(
        1
        for target in _assignment_targets(cls)
        for n in walk(target)
        if isinstance(n, cst.Attribute) and dotted(n) == f"self.{attr}"
    )


def _self_targets(function: cst.FunctionDef) -> set[str]:
    """Attributes the function assigns: `self.<attr> = ...`, `self.<attr> += ...`, in tuple targets too."""
    found = set()
    for target in _assignment_targets(function):
        for node in walk(target):
            if isinstance(node, cst.Attribute) and dotted(node.value) == "self":
                found.add(node.attr.value)
    return found


def _assignment_targets(node: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    for n in walk(node):
        if isinstance(n, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)):
            yield n.target


def _fresh(name: str, taken: set[str]) -> str:
    candidate, number = name, 2
    while candidate in taken:
        candidate, number = f"{name}_{number}", number + 1
    taken.add(candidate)
    return candidate


def _snake(dotted_name: str) -> str:
    """`torch.nn.LayerNorm` -> `layer_norm`, `nn.Conv1d` -> `conv1d`, `nn.GELU` -> `gelu`."""
    last = dotted_name.rsplit(".", 1)[-1]
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", last).lower()


def _self_attr(name: str) -> cst.Attribute:
    return cst.Attribute(value=cst.Name("self"), attr=cst.Name(name))


CODEMOD = MoveModuleToInit
