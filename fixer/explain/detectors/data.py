"""Facts about tensors and the data passed to a model: where they are made and whether they move."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator

from fixer.explain.detectors import detector, syntax
from fixer.explain.detectors.code import Code, Scope
from fixer.explain.detectors.copies import holds_cpu_copy

# Functions that run at every step, where a tensor made without device= lands on the CPU each time.
_PER_STEP = re.compile(
    r"forward|__call__|(?:training|validation|test|predict)_step|"
    r"_?\w*(?:loss|mask|attn|attention|score|logits|criterion|noise|sampl|diffus|reparam|position|rotary)\w*"
)
# Indexing ops and where their index goes: (positional index as a method, as a torch function).
_INDEXING = {
    "gather": (1, 2), "index_select": (1, 2), "scatter": (1, 2), "scatter_": (1, None), "scatter_add": (1, 2),
    "scatter_add_": (1, None), "index_add": (1, 2), "index_add_": (1, None), "index_copy": (1, 2),
    "index_copy_": (1, None), "index_fill": (1, 2), "index_fill_": (1, None), "take": (0, 1),
    "take_along_dim": (0, 1),
}  # fmt: skip


def _unplaced_factories(node: ast.AST, scope: Scope, statement: ast.stmt) -> Iterator[tuple[ast.Call, str]]:
    """Factory calls in `node` that get no device: no device=, no **kwargs, not moved where they are made."""
    for call in syntax.calls(node):
        made = syntax.factory(call, scope.names)
        if made is None or syntax.keyword(call, "device") is not None:
            continue
        if any(k.arg is None for k in call.keywords) or syntax.moved_where_made(call, statement):
            continue
        yield call, made


@detector(
    "factory-without-device-in-forward",
    reads="your files or the code pasted",
    finds="a forward, loss, mask or step function makes a tensor with a torch factory and no device=",
)
def factory_without_device_in_forward(code: Code) -> Iterator[str]:
    for scope in code.showing:
        function = scope.function
        if function is None or not _PER_STEP.fullmatch(function.name):
            continue
        for statement in syntax.statements(function):
            if not scope.may_run_before(statement):
                continue  # made after the failing line: it had no part in the failure
            for call, made in _unplaced_factories(statement, scope, statement):
                yield f"{scope.where(call)}: `torch.{made}(...)` in `{function.name}()` has no device="


@detector(
    "factory-meets-moved-on-failing-line",
    reads="your files or the code pasted",
    finds="the failing statement uses a tensor made by a torch factory with no device= next to one the code "
    "made and put on a device itself (a script or a REPL session as it ran)",
)
def factory_meets_moved_on_failing_line(code: Code) -> Iterator[str]:
    for scope in code.showing:
        if scope.failing is None:
            continue
        made, moved = [], []
        for name in _names_read(scope.failing):
            source = scope.last_binding(name)
            value = syntax.value_of(source) if source is not None else None
            if source is None or value is None:
                continue
            if syntax.placed(value) and _makes_a_tensor(value, scope):
                moved.append(f"`{name}` (line {source.lineno})")
            elif any(True for _ in _unplaced_factories(value, scope, source)):
                made.append(f"`{name}` (line {source.lineno})")
        if made and moved:
            made_text, moved_text = ", ".join(made), ", ".join(moved)
            yield f"{scope.where(scope.failing)}: {made_text} made without device=, {moved_text} on a device"


@detector(
    "failing-line-reads-unplaced-factory",
    reads="your files or the code pasted",
    finds="the failing statement reads a name whose last binding before it made a tensor with a torch factory "
    "and no device=, in whatever function it lies",
)
def failing_line_reads_unplaced_factory(code: Code) -> Iterator[str]:
    """By what the failing line reads, not by the function's name: a helper called `build_biases` makes
    its CPU tensor as surely as a `forward` does. A script's top level is left out: tensors made there
    stand in for data, which the other causes cover. A library's failing line counts as well: its own
    tensor made on the CPU is the cause, whoever has to change it."""
    for scope in (*code.showing, *code.library):
        if scope.failing is None or scope.function is None:
            continue
        made = _traced(scope, scope.failing, _made_at, "`torch.{}(...)`")
        if made:
            yield f"{scope.where(scope.failing)}: {', '.join(made)} made without device="


def _traced(
    scope: Scope, statement: ast.stmt, origin: Callable[[Scope, str], tuple[int, str] | None], shown: str
) -> list[str]:
    """Each name the statement reads whose value `origin` traces to a line, said as "`name` (line N: what)"."""
    return [
        f"`{name}` (line {found[0]}: {shown.format(found[1])})"
        for name in _names_read(statement)
        if (found := origin(scope, name))
    ]


def _names_read(statement: ast.stmt) -> list[str]:
    """The names a statement reads, sorted; `total += x` reads `total` too."""
    used = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
        used.add(statement.target.id)
    return sorted(used)


def _made_at(scope: Scope, name: str) -> tuple[int, str] | None:
    """Where the value a name holds at the failing line was made by a factory without device=, following
    an accumulator back (`total = total + ...` and `total += ...` keep the device `total` was made on);
    None where a binding moves it, makes it otherwise, or may not have run."""
    for source in reversed([s for s in scope.before if name in syntax.assigned_names(s)]):
        value = syntax.value_of(source)
        if value is None or id(source) in scope.conditional or syntax.placed(value):
            return None
        for _, kind in _unplaced_factories(value, scope, source):
            return source.lineno, kind
        if not isinstance(source, ast.AugAssign) and not any(
            isinstance(n, ast.Name) and n.id == name for n in ast.walk(value)
        ):
            return None
    return None


# The legacy typed names of CPU tensors: each is a dtype and the CPU at once.
_LEGACY_CPU_TYPES = re.compile(r"torch\.(?:Float|Double|Half|BFloat16|Long|Int|Short|Char|Byte|Bool)Tensor")


@detector(
    "failing-line-reads-legacy-cast",
    reads="your files or the code pasted",
    finds="the failing statement reads a name last bound to a cast with a legacy CPU type "
    "(`x.type(torch.LongTensor)`), which copies a GPU tensor to the CPU",
)
def failing_line_reads_legacy_cast(code: Code) -> Iterator[str]:
    """A cast that looks like a dtype change moves the tensor as well; the mismatch surfaces where the copy
    meets the GPU, lines later, in a statement that shows nothing of it."""
    for scope in (*code.showing, *code.library):
        if scope.failing is None:
            continue
        cast = _traced(scope, scope.failing, _legacy_cast_at, "`.type({})`")
        if cast:
            yield f"{scope.where(scope.failing)}: {', '.join(cast)} cast to a CPU type"


def _left_where_made(scope: Scope, name: str) -> bool:
    """Never placed, and not sent to the CPU on purpose (a copy) or by a cast to a legacy CPU type: those
    are moves of their own, each another cause's."""
    return not _ever_placed(scope, name) and not holds_cpu_copy(scope, name) and _legacy_cast_at(scope, name) is None


def _legacy_cast_at(scope: Scope, name: str) -> tuple[int, str] | None:
    """Where the value a name holds at the failing line was cast with a legacy CPU type, by its last binding
    before the line; None where that binding may not have run or casts nothing."""
    source = scope.last_binding(name)
    value = syntax.value_of(source) if source is not None else None
    if source is None or value is None or id(source) in scope.conditional:
        return None
    for call in syntax.calls(value):
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "type") or len(call.args) != 1:
            continue
        given = call.args[0]
        typed = given.value if isinstance(given, ast.Constant) and isinstance(given.value, str) else None
        legacy = typed or syntax.resolve_name(syntax.dotted(given), scope.names)
        if legacy and _LEGACY_CPU_TYPES.fullmatch(legacy):
            return source.lineno, legacy
    return None


@detector(
    "cpu-index-to-indexing-op",
    reads="your files or the code pasted",
    finds="an index built on the CPU (a factory without device=, .cpu(), NumPy) is passed to gather/index_select/...",
)
def cpu_index_to_indexing_op(code: Code) -> Iterator[str]:
    for scope in code.showing:
        on_cpu: dict[str, int] = {}
        for statement in scope.statements:
            for call in syntax.calls(statement):
                index = _index_argument(call)
                name = syntax.base_name(index, scope.names) if index is not None else None
                if name in on_cpu:
                    made = on_cpu[name]
                    yield f"{scope.where(call)}: `{name}`, made on the CPU at line {made}, indexes `{_op(call)}`"
            value = syntax.value_of(statement)
            for target in syntax.assigned_names(statement):
                on_cpu.pop(target, None)
                if value is not None and _on_cpu(value, scope, statement):
                    on_cpu[target] = statement.lineno


def _makes_a_tensor(value: ast.expr, scope: Scope) -> bool:
    """The value is a tensor this code builds with a torch factory (`torch.randn(...).cuda()`), not one
    that comes from elsewhere (a model's output, a batch): two tensors the code builds itself, one with
    a device and one without, are a tensor made without one; a batch beside them is data not moved."""
    return any(syntax.factory(call, scope.names) is not None for call in syntax.calls(value))


def _on_cpu(value: ast.expr, scope: Scope, statement: ast.stmt) -> bool:
    if syntax.placed(value):
        return False
    if any(True for _ in _unplaced_factories(value, scope, statement)):
        return True
    for call in syntax.calls(value):
        if isinstance(call.func, ast.Attribute) and call.func.attr in ("cpu", "numpy"):
            return True
        if (syntax.dotted(call.func) or "").split(".")[0] in ("np", "numpy"):
            return True
    return False


def _index_argument(call: ast.Call) -> ast.expr | None:
    if not isinstance(call.func, ast.Attribute) or call.func.attr not in _INDEXING:
        return None
    as_method, as_function = _INDEXING[call.func.attr]
    named = syntax.keyword(call, "index") or syntax.keyword(call, "indices")
    if named is not None:
        return named
    is_function = syntax.dotted(call.func.value) == "torch"
    position = as_function if is_function else as_method
    if position is None or position >= len(call.args):
        return None
    return call.args[position]


def _op(call: ast.Call) -> str:
    return call.func.attr if isinstance(call.func, ast.Attribute) else "?"


@detector(
    "failing-call-args-on-device",
    reads="your files",
    finds="every tensor passed on the failing line was made with device= or moved just before",
)
def failing_call_args_on_device(code: Code) -> Iterator[str]:
    for scope in code.showing:
        for call in scope.failing_calls:
            placed = [_placed_at(scope, arg) for arg in (*call.args, *(k.value for k in call.keywords))]
            shown = [p for p in placed if p]
            if shown and all(p is not None for p in placed):
                yield f"{scope.where(call)}: {', '.join(shown)} on a device already"
                break


def _placed_at(scope: Scope, arg: ast.expr) -> str | None:
    """How an argument is known to be on a device ('' for a constant, which has none to be on), or None."""
    if isinstance(arg, ast.Constant):
        return ""
    if syntax.placed(arg):
        return f"`{ast.unparse(arg)}`"
    name = syntax.base_name(arg, scope.names)
    source = scope.last_binding(name) if name else None
    value = syntax.value_of(source) if source is not None else None
    if source is None or value is None or not syntax.placed(value):
        return None
    return f"`{name}` (line {source.lineno})"


@detector(
    "model-moved-not-its-inputs",
    reads="your files",
    finds="the model called on the failing line is moved, but the data passed to it never is",
)
def model_moved_not_its_inputs(code: Code) -> Iterator[str]:
    for scope in code.scopes:
        moved = scope.moved_before
        for call in scope.failing_calls:
            model = syntax.callee(call)
            if model not in moved:
                continue
            data = _data_arguments(call, scope)
            never = [name for name in data if _left_where_made(scope, name)]
            if never:
                yield (
                    f"{scope.where(call)}: `{model}` is moved at line {moved[model]}, "
                    f"but {', '.join(f'`{n}`' for n in never)} never is"
                )


@detector(
    "argument-never-moved",
    reads="your files",
    finds="the code moves its model or data to a device, but a tensor passed on the failing line never is",
)
def argument_never_moved(code: Code) -> Iterator[str]:
    for scope in code.scopes:
        if not any(syntax.placed(statement) for statement in scope.before):
            continue
        for call in scope.failing_calls:
            bound = [name for name in _data_arguments(call, scope) if _may_hold_a_tensor(scope, name)]
            never = [name for name in bound if _left_where_made(scope, name)]
            if never:
                named = ", ".join(f"`{n}`" for n in never)
                yield f"{scope.where(call)}: {named} never moved, while the code moves others"
                break


def _data_arguments(call: ast.Call, scope: Scope) -> list[str]:
    values = [v.value if isinstance(v, ast.Starred) else v for v in (*call.args, *(k.value for k in call.keywords))]
    names = [syntax.base_name(v, scope.names) for v in values if not syntax.placed(v)]
    return [n for n in names if n and n not in ("True", "False", "None") and "." not in n]


# What a run's settings are made of: command-line arguments and configurations, paths, numbers, devices.
_SETTINGS_ROOTS = {"args", "opt", "opts", "cfg", "config", "conf", "hparams", "hp", "flags", "FLAGS", "options"}
_NOT_TENSORS = {"str", "int", "float", "bool", "len", "range", "Path", "os.path.join", "torch.device", "open"}


def _may_hold_a_tensor(scope: Scope, name: str) -> bool:
    """The name is bound before the failing line, and that binding could be a tensor: not a literal, an
    f-string, a setting read from the command line or a configuration, a path or a number."""
    source = scope.last_binding(name)
    return source is not None and _binding_may_be_tensor(scope, source, 0)


def _binding_may_be_tensor(scope: Scope, source: ast.stmt, depth: int) -> bool:
    value = syntax.value_of(source)
    return value is None or _may_be_tensor(value, scope, source.lineno, depth)


def _may_be_tensor(value: ast.expr, scope: Scope, line: int, depth: int) -> bool:
    """Whether an expression could be a tensor, following the names it combines to their bindings
    above `line` (a few steps: a path built up over several lines stays a path)."""
    if isinstance(value, ast.Constant | ast.JoinedStr):
        return False
    if isinstance(value, ast.BinOp):
        return any(_may_be_tensor(side, scope, line, depth) for side in (value.left, value.right))
    if isinstance(value, ast.IfExp):
        return any(_may_be_tensor(side, scope, line, depth) for side in (value.body, value.orelse))
    if isinstance(value, ast.Call):
        return syntax.resolve(value.func, scope.names) not in _NOT_TENSORS
    if isinstance(value, ast.Name):
        earlier = [s for s in scope.before if s.lineno < line and value.id in syntax.assigned_names(s)]
        return depth >= 3 or not earlier or _binding_may_be_tensor(scope, earlier[-1], depth + 1)
    root = value
    while isinstance(root, ast.Attribute | ast.Subscript):
        root = root.value
    return not (isinstance(root, ast.Name) and root.id in _SETTINGS_ROOTS and root is not value)


def _ever_placed(scope: Scope, name: str, depth: int = 2) -> bool:
    """Some assignment to `name` in the scope places it, or computes it from placed names alone, or puts a
    placed tensor into it (`chunks.append(x.cpu())`, `out[i] = y.to(d)`): a tensor sent to the CPU on
    purpose was not forgotten. A bare `x.to(d)` does not: a tensor's `.to()` returns a copy, and
    discarding it is the bug."""
    for statement in scope.statements:
        value = syntax.value_of(statement)
        if (
            value is not None
            and name in syntax.assigned_names(statement)
            and (syntax.placed(value, _PLACING) or (depth > 0 and _computed_from_placed(scope, value, name, depth)))
        ):
            return True
        if _fills(statement, name) and syntax.placed(statement, _PLACING):
            return True
    return False


def _computed_from_placed(scope: Scope, value: ast.expr, name: str, depth: int) -> bool:
    """Every name the value reads, torch and the module's other imports aside, was placed itself: the
    result lives where they do (`estimates = torch.stack([mixture * 0.5])`, `logits = model(images)`)."""
    read = {n.id for n in ast.walk(value) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    read -= {name, *scope.names}
    return bool(read) and all(_ever_placed(scope, other, depth - 1) for other in read)


_PLACING = syntax.MOVES | {"cpu"}


_FILLING = frozenset({"append", "extend", "insert", "add", "update", "setdefault"})


def _fills(statement: ast.stmt, name: str) -> bool:
    """The statement puts something into the container `name`: `name.append(...)`, `name[k] = ...`."""
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        return isinstance(func, ast.Attribute) and func.attr in _FILLING and syntax.dotted(func.value) == name
    if isinstance(statement, ast.Assign):
        return any(isinstance(t, ast.Subscript) and syntax.dotted(t.value) == name for t in statement.targets)
    return False


@detector(
    "failing-loss-without-tensor",
    reads="your files",
    finds="the loss called on the failing line was built without weight=/pos_weight=, so holds no tensor",
)
def failing_loss_without_tensor(code: Code) -> Iterator[str]:
    for scope in code.scopes:
        for call in scope.failing_calls:
            name = syntax.dotted(call.func)
            if name is None:
                continue
            built = _loss_built(scope, name)
            if built is not None:
                statement, loss = built
                yield f"{scope.where(statement)}: `{name}` is built as `{loss}()` with no tensor"


def _loss_built(scope: Scope, name: str) -> tuple[ast.stmt, str] | None:
    """Where and as what, when `name` (a local, or `self.x` anywhere in the class) is assigned once, to a
    loss built with no weight: no positional arguments (CrossEntropyLoss's first is the weight), no
    weight=/pos_weight=."""
    where = scope.cls if name.startswith("self.") and scope.cls is not None else scope.innermost
    assignments = [s for s in syntax.all_statements(where) if name in syntax.assigned_names(s)]
    if len(assignments) != 1:
        return None
    value = syntax.value_of(assignments[0])
    if not isinstance(value, ast.Call):
        return None
    loss = syntax.dotted(value.func)
    if loss is None or not loss.endswith("Loss"):
        return None
    if value.args or any(k.arg in (None, "weight", "pos_weight") for k in value.keywords):
        return None
    return assignments[0], loss


@detector(
    "device-from-module-property",
    reads="failing lines and your files",
    finds="tensors are placed with a module's .device property (self.device, model.device)",
)
def device_from_module_property(code: Code) -> Iterator[str]:
    """`self.device` in a plain class's method is a device the object stored, not a module's property; the
    printed lines alone cannot say which, the file can."""
    read = {f"{scope.file}:{scope.line}" for scope in code.showing}
    printed = (
        (f"{line.where}: `{line.code.strip()}`", call, None)
        for line in code.lines
        if line.user and line.where not in read
        for call in line.calls
    )
    around = ((scope.where(call), call, scope) for scope in code.showing for call in scope.calls_around)
    for where, call, scope in (*printed, *around):
        device = syntax.placed_on(call)
        name = syntax.dotted(device) if device is not None else None
        if not (name and name.endswith(".device") and _module_like(name.removesuffix(".device"))):
            continue
        owner = _class_around(scope.module, call.lineno) if scope is not None else None
        if (
            name == "self.device"
            and scope is not None
            and owner is not None
            and not syntax.may_be_module(owner, scope.module)
        ):
            continue
        yield f"{where}: placed on `{name}`"


def _class_around(module: ast.Module, line: int) -> ast.ClassDef | None:
    """The innermost class whose body holds the line: a script's calls around a line include its classes'."""
    holding = [
        node
        for node in ast.walk(module)
        if isinstance(node, ast.ClassDef) and node.lineno <= line <= (node.end_lineno or node.lineno)
    ]
    return max(holding, key=lambda node: node.lineno, default=None)


def _module_like(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return name == "self" or last == "model" or last.endswith("_model")
