"""Facts about layers: where they are built and held, which `.to()` never reaches."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from fixer.explain.detectors import detector, syntax
from fixer.explain.detectors.code import Code, Scope

# Methods that build a module once (not at every call), where constructing layers is the point.
_BUILDERS = ("init", "build", "make", "create", "setup", "configure", "reset", "add", "replace", "load", "new")
_WRAPPERS = frozenset({"ModuleList", "ModuleDict", "Sequential", "ParameterList", "ParameterDict"})


@detector(
    "layer-assigned-after-move",
    reads="your files",
    finds="a layer assigned to an attribute of a model after that model was moved with .to()/.cuda()",
)
def layer_assigned_after_move(code: Code) -> Iterator[str]:
    for scope in code.scopes:
        moves: dict[str, int] = {}  # model name -> line of its latest move
        late: dict[str, tuple[ast.stmt, str]] = {}  # model name -> the assignment made after that move
        for statement in _until_failing(scope):
            for name in _moves(statement):
                moves[name] = statement.lineno
                late.pop(name, None)
            value = syntax.value_of(statement)
            if value is None or not isinstance(value, ast.Call) or not syntax.constructs(value):
                continue
            if syntax.placed(value):
                continue
            for target in syntax.assigned_names(statement) or _subscripted(statement):
                owner = next((m for m in moves if target.startswith(m + ".")), None)
                if owner is not None:
                    late[owner] = (statement, target)
        for owner, (statement, target) in late.items():
            value = syntax.value_of(statement)
            built = syntax.dotted(value.func) if isinstance(value, ast.Call) else None
            yield (
                f"{scope.where(statement)}: `{target} = {built or '...'}(...)` after `{owner}` was moved at line "
                f"{moves[owner]}"
            )


def _until_failing(scope: Scope) -> list[ast.stmt]:
    failing = scope.failing
    return [*scope.before, *([failing] if failing is not None else [])]


def _moves(statement: ast.stmt) -> Iterator[str]:
    """Names a statement moves: `m.to(d)`, `m.cuda()`, `m = m.to(d)`, `m = Net().to(d)`."""
    if isinstance(statement, ast.Expr):
        name = syntax.moved(statement.value)
        if name:
            yield name
    value = syntax.value_of(statement)
    if value is not None and syntax.is_move(value):
        yield from syntax.assigned_names(statement)


def _subscripted(statement: ast.stmt) -> list[str]:
    """`model.classifier[6] = nn.Linear(...)`: the container attribute assigned into."""
    if isinstance(statement, ast.Assign):
        return [name for t in statement.targets if isinstance(t, ast.Subscript) and (name := syntax.dotted(t.value))]
    return []


@detector(
    "layer-built-in-method",
    reads="your files",
    finds="a method that runs at every call (not __init__ or a builder) constructs a layer with weights",
)
def layer_built_in_method(code: Code) -> Iterator[str]:
    for scope in code.scopes:
        function = scope.function
        if function is None or not _is_method(function) or _is_builder(function.name):
            continue
        for statement in syntax.statements(function):
            for call in syntax.calls(statement):
                layer = syntax.layer(call, scope.names)
                if layer and syntax.keyword(call, "device") is None and not syntax.moved_where_made(call, statement):
                    yield f"{scope.where(call)}: `{layer}(...)` is built inside `{function.name}()`"


def _is_method(function: syntax.Function) -> bool:
    return bool(function.args.args) and function.args.args[0].arg == "self"


def _is_builder(name: str) -> bool:
    return name.lstrip("_").startswith(_BUILDERS)


@detector(
    "layers-in-plain-container",
    reads="your files",
    finds="a class keeps layers in a plain Python list, dict or tuple attribute instead of nn.ModuleList/ModuleDict",
)
def layers_in_plain_container(code: Code) -> Iterator[str]:
    for scope, cls in _classes(code):
        wrapped = _wrapped_attributes(cls)
        empty: dict[str, ast.stmt] = {}
        for statement in syntax.all_statements(cls):
            value = syntax.value_of(statement)
            for target in syntax.assigned_names(statement):
                attribute = target.removeprefix("self.")
                if not target.startswith("self.") or attribute in wrapped or value is None:
                    continue
                if _holds_layers(value):
                    yield f"{scope.where(statement)}: `{target}` is a plain {_kind(value)} of layers"
                elif _is_empty_list(value):
                    empty[target] = statement
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
                call = statement.value
                if isinstance(call.func, ast.Attribute) and call.func.attr in ("append", "extend", "insert"):
                    owner = syntax.dotted(call.func.value)
                    if owner in empty and any(_holds_layers(arg) or _constructs(arg) for arg in call.args):
                        yield f"{scope.where(statement)}: layers are appended to the plain list `{owner}`"


def _classes(code: Code) -> Iterator[tuple[Scope, ast.ClassDef]]:
    """Each class around a failing line that may be an nn.Module, once: what these detectors find is what
    `.to()`, `.parameters()` and buffers do, which a plain class has none of."""
    seen: set[int] = set()
    for scope in code.scopes:
        cls = scope.cls
        if cls is not None and id(cls) not in seen and syntax.may_be_module(cls, scope.module):
            seen.add(id(cls))
            yield scope, cls


def _wrapped_attributes(cls: ast.ClassDef) -> set[str]:
    """Attributes some ModuleList/ModuleDict/Sequential takes in, or that are reassigned to one."""
    names = set()
    for call in syntax.calls(cls):
        name = syntax.dotted(call.func) or ""
        if name.rsplit(".", 1)[-1] in _WRAPPERS:
            for arg in call.args:
                inner = arg.value if isinstance(arg, ast.Starred) else arg
                attribute = syntax.dotted(inner) or ""
                if attribute.startswith("self."):
                    names.add(attribute.removeprefix("self."))
    for statement in syntax.all_statements(cls):
        value = syntax.value_of(statement)
        if isinstance(value, ast.Call) and (syntax.dotted(value.func) or "").rsplit(".", 1)[-1] in _WRAPPERS:
            names.update(t.removeprefix("self.") for t in syntax.assigned_names(statement))
    return names


def _constructs(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and syntax.constructs(node) and (syntax.dotted(node.func) or "") not in _WRAPPERS


def _holds_layers(value: ast.expr) -> bool:
    if isinstance(value, ast.List | ast.Tuple):
        return any(_constructs(element) for element in value.elts)
    if isinstance(value, ast.Dict):
        return any(_constructs(element) for element in value.values)
    if isinstance(value, ast.ListComp):
        return _constructs(value.elt)
    if isinstance(value, ast.DictComp):
        return _constructs(value.value)
    return False


def _kind(value: ast.expr) -> str:
    return "dict" if isinstance(value, ast.Dict | ast.DictComp) else "tuple" if isinstance(value, ast.Tuple) else "list"


def _is_empty_list(value: ast.expr) -> bool:
    if isinstance(value, ast.List):
        return not value.elts
    return isinstance(value, ast.Call) and syntax.dotted(value.func) == "list" and not value.args


@detector(
    "tensor-attribute-not-buffer",
    reads="your files",
    finds="a class stores a tensor made by a torch factory as a plain attribute, not a registered buffer",
)
def tensor_attribute_not_buffer(code: Code) -> Iterator[str]:
    for scope, cls in _classes(code):
        for target, statement, made in _plain_tensor_attributes(scope, cls):
            where = scope.where(statement)
            yield f"{where}: `self.{target}` holds a tensor made by torch.{made}(...) as a plain attribute"


def _plain_tensor_attributes(scope: Scope, cls: ast.ClassDef) -> Iterator[tuple[str, ast.stmt, str]]:
    """Each attribute the class sets to a tensor made by a torch factory, unplaced and unregistered: its
    name, the statement, and the factory."""
    registered = _registered(cls)
    for method in (node for node in cls.body if isinstance(node, ast.FunctionDef)):
        local: dict[str, ast.expr] = {}  # what each local name of the method was last bound to
        for statement in syntax.all_statements(method):
            value = syntax.value_of(statement)
            if value is None or isinstance(statement, ast.AugAssign) or _is_parameter(value):
                continue
            for target in syntax.assigned_names(statement):
                if "." not in target:
                    local[target] = value
                    continue
                if not target.startswith("self.") or target.count(".") != 1 or target[5:] in registered:
                    continue
                made = _made_by_factory(value, local, scope.names)
                if made and not syntax.placed(value):
                    yield target[5:], statement, made


@detector(
    "failing-attribute-registered",
    reads="your files",
    finds="the failing line computes with an attribute its module registers as a buffer or parameter, which "
    ".to() moves with the module, and with no tensor the module keeps as a plain attribute",
)
def failing_attribute_registered(code: Code) -> Iterator[str]:
    for scope, cls in _classes(code):
        if scope.failing is None:
            continue
        read = _attributes_reaching(scope, scope.failing)
        plain = {name for name, _, _ in _plain_tensor_attributes(scope, cls)}
        registered = _registered(cls)
        found = [name for name in read if name in registered]
        if found and not read & plain:
            name = found[0]
            yield f"{scope.where(scope.failing)}: `self.{name}` is registered on the module at line {registered[name]}"


def _attributes_reaching(scope: Scope, statement: ast.stmt, depth: int = 3) -> set[str]:
    """The attributes a statement computes with, directly or through the local names it reads, each
    followed to its last binding before the failing line (`exp = self.faces.flatten()`, then `x == exp`):
    a value does not change device by being named. A binding that may not have run ends the trail."""
    found = _attributes_computed_with(statement)
    if depth == 0:
        return found
    for name in {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}:
        binding = scope.last_binding(name, before=statement)
        if binding is not None and id(binding) not in scope.conditional:
            found |= _attributes_reaching(scope, binding, depth - 1)
    return found


def _attributes_computed_with(statement: ast.stmt) -> set[str]:
    """`anchors` for `self.proj(x) + self.anchors`: the module's attributes a statement uses as values,
    not the layers it calls (`self.proj(x)`) nor what it reads from them (`self.proj.weight`)."""
    parents = {id(child): node for node in ast.walk(statement) for child in ast.iter_child_nodes(node)}
    found = set()
    for node in ast.walk(statement):
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.Call) and parent.func is node:
            continue
        if isinstance(parent, ast.Attribute) and not _called(parent, parents):
            continue  # `self.proj.weight`; but `self.scale.sigmoid()` computes with the attribute
        found.add(node.attr)
    return found


def _called(node: ast.expr, parents: dict[int, ast.AST]) -> bool:
    parent = parents.get(id(node))
    return isinstance(parent, ast.Call) and parent.func is node


def _registered(cls: ast.ClassDef) -> dict[str, int]:
    """The class's buffers and parameters, by name, with the line that registers each."""
    found: dict[str, int] = {}
    for call in syntax.calls(cls):
        method = call.func.attr if isinstance(call.func, ast.Attribute) else None
        first = call.args[0] if call.args else None
        if method in ("register_buffer", "register_parameter") and isinstance(first, ast.Constant):
            found.setdefault(str(first.value), call.lineno)
    for statement in syntax.all_statements(cls):
        value = syntax.value_of(statement)
        if value is not None and _is_parameter(value):
            for target in syntax.assigned_names(statement):
                if target.startswith("self.") and target.count(".") == 1:
                    found.setdefault(target[5:], statement.lineno)
    return found


@detector(
    "device-stored-on-self",
    reads="your files",
    finds="a class stores a device in an attribute when it is built and places tensors with it later",
)
def device_stored_on_self(code: Code) -> Iterator[str]:
    for scope, cls in _classes(code):
        methods = [node for node in cls.body if isinstance(node, ast.FunctionDef)]
        if any(_is_property(m) and "device" in m.name for m in methods):
            continue  # a `device` property reads the parameters each time, and follows every move
        stored = {
            target.removeprefix("self."): statement
            for method in methods
            if method.name == "__init__"
            for statement in syntax.all_statements(method)
            for target in syntax.assigned_names(statement)
            if target.startswith("self.") and target.count(".") == 1 and "device" in target
        }
        for method in (m for m in methods if m.name != "__init__"):
            for call in syntax.calls(method):
                placed = syntax.placed_on(call, moves=("to", "cuda"))
                name = (syntax.dotted(placed) or "") if placed is not None else ""
                if name.startswith("self.") and name.removeprefix("self.") in stored:
                    built = scope.where(stored[name.removeprefix("self.")])
                    yield f"{scope.where(call)}: places a tensor on `{name}`, stored when the module was built, {built}"


_PROPERTIES = ("property", "cached_property", "functools.cached_property")


def _is_property(method: ast.FunctionDef) -> bool:
    return any(syntax.dotted(decorator) in _PROPERTIES for decorator in method.decorator_list)


def _made_by_factory(value: ast.expr, local: dict[str, ast.expr], names: dict[str, str], depth: int = 3) -> str | None:
    """The torch factory whose tensor a value is, or is computed from (`syntax.tensor_sources`), directly
    or through the method's own local names (`steps = torch.arange(n)`, then `self.table =
    torch.sin(steps / rate)`)."""
    for part in syntax.tensor_sources(value, names):
        if isinstance(part, ast.Call) and (made := syntax.factory(part, names)):
            return made
        if isinstance(part, ast.Name) and part.id in local and depth > 0:
            made = _made_by_factory(local[part.id], local, names, depth - 1)
            if made is not None:
                return made
    return None


def _is_parameter(value: ast.expr) -> bool:
    name = syntax.dotted(value.func) if isinstance(value, ast.Call) else None
    return name is not None and name.rsplit(".", 1)[-1] in ("Parameter", "Buffer")


@detector(
    "layer-from-loop-over-module",
    reads="your files",
    finds="the failing line calls a layer that a loop around it takes from the module's own attribute "
    "(for block in self.blocks), in your file or in the lines a notebook printed above it",
)
def layer_from_loop_over_module(code: Code) -> Iterator[str]:
    for scope in code.showing:
        looped = {
            name: loop
            for loop in scope.statements
            if isinstance(loop, ast.For) and loop.lineno < scope.line <= (loop.end_lineno or loop.lineno)
            for name in _loop_names(loop)
        }
        for call in scope.failing_calls:
            if isinstance(call.func, ast.Name) and call.func.id in looped and call.args:
                yield f"{scope.where(looped[call.func.id])}: `{call.func.id}` is taken from a module attribute"


def _loop_names(loop: ast.For) -> set[str]:
    """The names a `for` binds, when it iterates over an attribute of `self` (`self.blocks`,
    `enumerate(self.layers)`, `zip(self.convs, self.norms)`)."""
    over_module = any(
        isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
        for node in ast.walk(loop.iter)
    )
    return {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)} if over_module else set()
