"""What the placement codemods share: the code that runs before the failing line, and device moves in it.

A codemod of this kind first reads the original module (`plan`), decides which statements to insert and
which nodes to rewrite, and then lets LibCST rebuild the tree with those edits. The reading is lexical:
`Before` sees the statements that come before the failing statement in its own block and in every
enclosing block (a function's body, then the module), plus the names that loop headers, `with ... as`
and function parameters bind on the way. That is what a reader of the file sees; it is enough to find
the user's own device expression and where the model, the batch or the loss was made.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Literal, TypeVar

import libcst as cst
from libcst.metadata import PositionProvider

from fixer.patching.base import Codemod, Target, dotted, module_constructor

_Holder = TypeVar("_Holder", cst.FunctionDef, cst.ClassDef)

_DTYPES = frozenset(
    {
        "float", "float16", "float32", "float64", "half", "double", "bfloat16", "int", "int8", "int16", "int32",
        "int64", "long", "short", "uint8", "bool", "complex64", "complex128", "cfloat", "cdouble",
    }
)  # fmt: skip
_LITERALS = (
    cst.Integer,
    cst.Float,
    cst.Imaginary,
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.FormattedString,
    cst.List,
    cst.Tuple,
    cst.Set,
    cst.ListComp,
    cst.SetComp,
    cst.GeneratorExp,
    cst.Lambda,
    cst.Comparison,
)
_CONSTANTS = frozenset({"True", "False", "None"})


def is_dtype(node: cst.BaseExpression) -> bool:
    """`torch.float16`, `torch.long`, `dtype`: an argument of `.to()` that converts rather than moves."""
    name = dotted(node)
    return name is not None and (name == "dtype" or (name.startswith("torch.") and name[6:] in _DTYPES))


def literal(node: cst.BaseExpression) -> bool:
    """A value that is certainly not a tensor: a number, a string, a container display, a constant."""
    return isinstance(node, _LITERALS) or (isinstance(node, cst.Name) and node.value in _CONSTANTS)


def keyword(call: cst.Call, *names: str) -> cst.Arg | None:
    return next((arg for arg in call.args if arg.keyword is not None and arg.keyword.value in names), None)


@dataclass(frozen=True)
class Device:
    """The user's own way of moving something: `.to(<expr>)` or `.cuda(...)`, with only the device kept."""

    method: Literal["to", "cuda"]
    args: tuple[cst.Arg, ...]

    @classmethod
    def of_call(cls, call: cst.Call) -> Device | None:
        """From a move such as `x.to(device, non_blocking=True)` or `m.cuda()`; None for a dtype-only `.to()`."""
        if not isinstance(call.func, cst.Attribute):
            return None
        if call.func.attr.value == "cuda":
            kept = [arg for arg in call.args if arg.keyword is None or arg.keyword.value == "device"]
            return cls("cuda", tuple(cst.Arg(value=arg.value, keyword=arg.keyword) for arg in kept[:1]))
        if call.func.attr.value != "to":
            return None
        given = keyword(call, "device")
        if given is not None:
            return cls.of_value(given.value)
        first = call.args[0] if call.args else None
        if first is None or first.keyword is not None or first.star:
            return None
        if isinstance(first.value, cst.SimpleString):
            return cls.of_value(first.value)  # `.to("cuda")`
        if is_dtype(first.value) or literal(first.value):
            return None
        return cls.of_value(first.value)

    @classmethod
    def of_value(cls, value: cst.BaseExpression) -> Device | None:
        """From a device expression itself, e.g. the `device=` argument of a factory call; None for the CPU."""
        return None if host_device(value) else cls("to", (cst.Arg(value=value),))

    def move(self, value: cst.BaseExpression) -> cst.Call:
        """`value.to(<device>)` (or `value.cuda(...)`)."""
        return cst.Call(func=cst.Attribute(value=value, attr=cst.Name(self.method)), args=self.args)

    @property
    def names(self) -> set[str]:
        """Free names the device expression reads (`device`, `args` in `args.device`), to check they exist."""
        found: set[str] = set()
        for arg in self.args:
            found |= free_names(arg.value)
        return found


def host_device(device: cst.BaseExpression) -> bool:
    """`"cpu"` or `torch.device("cpu")`: a move to the host, which is not what these codemods look for."""
    if isinstance(device, cst.Call) and dotted(device.func) in ("torch.device", "device") and device.args:
        device = device.args[0].value
    return isinstance(device, cst.SimpleString) and str(device.evaluated_value).split(":")[0] == "cpu"


def device_move(node: cst.BaseExpression) -> Device | None:
    """The device move in a method chain: `M().to(device).eval()` -> `.to(device)`; None if none."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        move = Device.of_call(node) if node.func.attr.value in ("to", "cuda") else None
        if move is not None:
            return move
        node = node.func.value
    return None


def placed_at_creation(node: cst.BaseExpression) -> Device | None:
    """`torch.randn(..., device=d)` or `torch.tensor(x, device=d).float()`: the device it was created on."""
    while isinstance(node, cst.Call):
        given = keyword(node, "device")
        if given is not None and (isinstance(given.value, cst.SimpleString) or not literal(given.value)):
            return Device.of_value(given.value)  # None for device="cpu": made on the host on purpose
        if not isinstance(node.func, cst.Attribute):
            return None
        node = node.func.value
    return None


def makes_module(value: cst.BaseExpression) -> bool:
    """`Net(...)`, `nn.Linear(4, 2).to(d)`, `AutoModel.from_pretrained(name)`: a value that builds a module."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        if value.func.attr.value == "from_pretrained":
            return True
        value = value.func.value
    return module_constructor(value)


def free_names(node: cst.CSTNode) -> set[str]:
    """Names an expression reads, leaving out attribute names (`x` but not `device` in `x.device`)."""
    found: set[str] = set()

    class Reader(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.add(name.value)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            attribute.value.visit(self)
            return False

        def visit_Arg(self, arg: cst.Arg) -> bool:
            arg.value.visit(self)
            return False

    node.visit(Reader())
    return found


@dataclass(frozen=True)
class Event:
    """Something a statement before the failing one does to a name.

    `bind`: the name is (re)bound; `value` is what it was bound to, None when unknown (a loop target,
    a parameter, an unpacking). `call`: a method call on the name as a statement of its own,
    `value` the call (`model.to(device)`, `model.load_state_dict(sd)`).
    """

    kind: Literal["bind", "call"]
    name: str
    line: int
    value: cst.BaseExpression | None
    small: cst.BaseSmallStatement | None  # the statement itself, for rewriting it
    anchor: cst.BaseStatement | None  # the statement of a block on the path that holds it; code may follow it
    opens: cst.IndentedBlock | None = None  # for names bound by a header: the body they are bound in


class _Parents(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.parent: dict[int, cst.CSTNode] = {}
        self._stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._stack:
            self.parent[id(node)] = self._stack[-1]
        self._stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()


def _target_names(target: cst.BaseExpression) -> Iterator[str]:
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _target_names(target.value)
    elif (name := dotted(target)) is not None:
        yield name


def _pairs(
    target: cst.BaseExpression, value: cst.BaseExpression
) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """`a, b = x, y` -> [(a, x), (b, y)]; empty unless both sides are flat tuples of the same length."""
    if not (isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List))):
        return []
    names, values = target.elements, value.elements
    if len(names) != len(values) or any(isinstance(e, cst.StarredElement) for e in (*names, *values)):
        return []
    return [(name.value, given.value) for name, given in zip(names, values, strict=True)]


class _Collector(cst.CSTVisitor):
    """Events inside one statement that precedes the failing one (not inside functions or classes it defines)."""

    def __init__(self, anchor: cst.BaseStatement, line_of: Callable[[cst.CSTNode], int]) -> None:
        super().__init__()
        self.anchor = anchor
        self.line_of = line_of
        self.events: list[Event] = []

    def _bind(
        self,
        target: cst.BaseExpression,
        value: cst.BaseExpression | None,
        small: cst.BaseSmallStatement | None,
        line: int,
    ) -> None:
        single = dotted(target) is not None
        for name in _target_names(target):
            self.events.append(Event("bind", name, line, value if single else None, small, self.anchor))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            pairs = _pairs(target.target, node.value)
            if pairs:  # `images, labels = images.to(d), labels.to(d)`
                for name, value in pairs:
                    self._bind(name, value, node, self.line_of(node))
            else:
                self._bind(target.target, node.value, node, self.line_of(node))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value, node, self.line_of(node))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target, None, node, self.line_of(node))

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target, None, None, self.line_of(node))

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind(node.asname.name, None, None, self.line_of(node))

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
            name = dotted(call.func.value)
            if name is not None:
                self.events.append(Event("call", name, self.line_of(node), call, node, self.anchor))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.events.append(Event("bind", node.name.value, self.line_of(node), None, None, self.anchor))
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.events.append(Event("bind", node.name.value, self.line_of(node), None, None, self.anchor))
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ListComp(self, node: cst.ListComp) -> bool:
        return False

    def visit_DictComp(self, node: cst.DictComp) -> bool:
        return False

    def visit_SetComp(self, node: cst.SetComp) -> bool:
        return False

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> bool:
        return False


Spot = tuple[Literal["before", "after"], cst.BaseStatement]


class Before:
    """The statements that run before the one holding `node`, read from its block and the enclosing ones."""

    def __init__(self, node: cst.CSTNode, parents: dict[int, cst.CSTNode], codemod: Codemod) -> None:
        self.codemod = codemod
        self.statement: cst.BaseStatement | None = None  # the statement holding node, in a block's body
        self.in_expression_scope = False  # node sits in a lambda or a comprehension
        self.events: list[Event] = []
        child: cst.CSTNode = node
        while (parent := parents.get(id(child))) is not None:
            if (
                isinstance(parent, (cst.Lambda, cst.CompFor, cst.ListComp, cst.DictComp, cst.SetComp, cst.GeneratorExp))
                and self.statement is None
            ):
                self.in_expression_scope = True
            if isinstance(parent, (cst.Module, cst.IndentedBlock)) and isinstance(child, cst.BaseStatement):
                if self.statement is None:
                    self.statement = child
                for earlier in parent.body[: list(parent.body).index(child)]:
                    collector = _Collector(earlier, codemod.line_of)
                    earlier.visit(collector)
                    self.events.extend(collector.events)
            if isinstance(child, cst.IndentedBlock):
                self._header(parent, child)
            child = parent
        self.events.sort(key=lambda event: event.line)

    def _header(self, compound: cst.CSTNode, body: cst.IndentedBlock) -> None:
        line = self.codemod.line_of(compound)
        names: list[str] = []
        if isinstance(compound, cst.For):
            names = list(_target_names(compound.target))
        elif isinstance(compound, cst.With):
            names = [n for item in compound.items if item.asname for n in _target_names(item.asname.name)]
        elif isinstance(compound, cst.FunctionDef):
            params = compound.params
            every = [*params.posonly_params, *params.params, *params.kwonly_params]
            for star in (params.star_arg, params.star_kwarg):
                if isinstance(star, cst.Param):
                    every.append(star)
            names = [param.name.value for param in every]
        elif isinstance(compound, cst.ExceptHandler) and compound.name is not None:
            names = list(_target_names(compound.name.name))
        self.events.extend(Event("bind", name, line, None, None, None, body) for name in names)

    def binding(self, name: str, until: int | None = None) -> Event | None:
        """The last binding of `name` before the statement (or before line `until`); None when the file shows none."""
        return next(
            (
                e
                for e in reversed(self.events)
                if e.kind == "bind" and e.name == name and (until is None or e.line < until)
            ),
            None,
        )

    def calls_on(self, name: str, since: int = 0, until: int | None = None) -> list[Event]:
        """Method calls on `name` made as statements of their own after line `since` (and before `until`)."""
        return [
            e
            for e in self.events
            if e.kind == "call" and e.name == name and e.line > since and (until is None or e.line < until)
        ]

    def moved(self, name: str, until: int | None = None, depth: int = 3) -> Device | None:
        """How the module `name` was last sent to a device: `name = M().to(d)`, or `name.to(d)` later.

        A wrapper that keeps its module's placement counts as moved when the module was:
        `model = torch.compile(model)`, `model = DDP(model, ...)` after `model.to(d)`.
        """
        bound = self.binding(name, until)
        since = bound.line if bound is not None else 0
        device = None
        if bound is not None and isinstance(bound.value, cst.Call):
            device = device_move(bound.value)
            wrapped = bound.value.args[0] if bound.value.args else None
            if device is None and depth > 0 and wrapped is not None and isinstance(wrapped.value, cst.Name):
                device = self.moved(wrapped.value.value, bound.line, depth - 1)
        for event in self.calls_on(name, since, until):
            assert isinstance(event.value, cst.Call)
            device = device_move(event.value) or device
        return device

    def device_of(self, node: cst.BaseExpression, depth: int = 4) -> Device | None:
        """The user's own device expression for a value that is already on a device, if the code shows one.

        `x.to(d)`, `torch.randn(..., device=d)`, a name bound to either, or the output of a module that
        was moved (`logits = model(x)` after `model.to(d)`).
        """
        if depth == 0:
            return None
        if isinstance(node, cst.Name):
            bound = self.binding(node.value)
            return self.device_of(bound.value, depth - 1) if bound is not None and bound.value is not None else None
        if not isinstance(node, cst.Call):
            return None
        found = device_move(node) or placed_at_creation(node)
        if found is not None:
            return found
        current: cst.BaseExpression = node
        while isinstance(current, cst.Call):  # `model(x).argmax(1)`: the output of a moved module
            callee = dotted(current.func)
            for owner in (callee, callee.rpartition(".")[0]) if callee else ():
                if owner and (found := self.moved(owner)) is not None:
                    return found
            if not isinstance(current.func, cst.Attribute):
                return None
            current = current.func.value
        return self.device_of(current, depth - 1)

    def spot_after(self, events: Iterable[Event]) -> Spot | None:
        """Where code can go once all `events` have happened: after the last one's statement, or at the
        top of the body that a header binds its names in. None when an event has neither."""
        best: tuple[int, Spot] | None = None
        for event in events:
            spot: Spot
            if event.anchor is not None:
                line = self.codemod.get_metadata(PositionProvider, event.anchor).end.line
                spot = ("after", event.anchor)
            elif event.opens is not None:
                line = event.line
                first = event.opens.body[0]
                spot = ("after", first) if _docstring(first) else ("before", first)
            else:
                return None
            if best is None or line > best[0]:
                best = (line, spot)
        return best[1] if best is not None else None


def _docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


# methods whose result on a tensor is a tensor: enough to tell a tensor from other values on the failing line
TENSOR_METHODS = frozenset(
    {
        "abs", "argmax", "argmin", "argsort", "bool", "ceil", "clamp", "clip", "clone", "contiguous", "cuda",
        "detach", "double", "exp", "flatten", "float", "floor", "half", "int", "log", "log_softmax", "long",
        "masked_fill", "matmul", "max", "mean", "min", "mul", "permute", "pow", "relu", "reshape", "round",
        "sigmoid", "softmax", "sqrt", "squeeze", "std", "sum", "t", "tanh", "to", "transpose", "type_as",
        "unsqueeze", "view", "view_as",
    }
)  # fmt: skip
TORCH_PREFIXES = ("torch.", "F.")


def plainly_tensor(value: cst.BaseExpression, before: Before, depth: int = 3) -> bool:
    """Plainly a tensor: made by a torch function or on a device, returned by a tensor method or by a model
    that was moved, or a name bound to one of those."""
    if depth == 0 or literal(value):
        return False
    if isinstance(value, cst.Name):
        bound = before.binding(value.value)
        return bound is not None and bound.value is not None and plainly_tensor(bound.value, before, depth - 1)
    if isinstance(value, cst.Call) and not makes_module(value) and before.device_of(value) is not None:
        return True  # `x.to(device)`, `torch.randn(..., device=d)`, the output of a model that was moved
    if isinstance(value, cst.Call):
        name = dotted(value.func) or ""
        if name.startswith(TORCH_PREFIXES):
            return True
        return isinstance(value.func, cst.Attribute) and value.func.attr.value in TENSOR_METHODS
    return False


class _Calls(cst.CSTVisitor):
    def __init__(self, codemod: Codemod, line: int) -> None:
        super().__init__()
        self.codemod = codemod
        self.line = line
        self.found: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        span = self.codemod.get_metadata(PositionProvider, node)
        if span.start.line <= self.line <= span.end.line:
            self.found.append(node)


def statement(small: cst.BaseSmallStatement) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[small])


class PlannedCodemod(Codemod):
    """A codemod that reads the whole original module first (`plan`), then applies the edits it chose."""

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self.parents: dict[int, cst.CSTNode] = {}
        self._before: dict[int, list[cst.BaseStatement]] = {}
        self._after: dict[int, list[cst.BaseStatement]] = {}
        self._rewrite: dict[int, Callable[[cst.CSTNode], cst.CSTNode]] = {}

    def plan(self, module: cst.Module) -> None:
        """By default: fix the first call on the failing lines, innermost line first, that `fix_call` can."""
        for _line, calls in self.calls_on_target(module):
            for call in calls:
                if self.fix_call(call):
                    return

    def fix_call(self, call: cst.Call) -> bool:
        """Plan the edits for one call; False when this codemod has nothing to do for it."""
        raise NotImplementedError

    def visit_Module(self, node: cst.Module) -> bool:
        parents = _Parents()
        node.visit(parents)
        self.parents = parents.parent
        self.plan(node)
        return True

    # --- reading -------------------------------------------------------------------------------------

    def calls_on_target(self, module: cst.Module) -> Iterator[tuple[int, list[cst.Call]]]:
        """For each line the traceback names, innermost first: the calls that span it, outermost first."""
        for line in reversed(self.target.lines):
            finder = _Calls(self, line)
            module.visit(finder)
            if finder.found:
                yield line, finder.found

    def before(self, node: cst.CSTNode) -> Before:
        return Before(node, self.parents, self)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        """The nodes that hold `node`, innermost first."""
        while (parent := self.parents.get(id(node))) is not None:
            yield parent
            node = parent

    def enclosing(self, node: cst.CSTNode, kind: type[_Holder]) -> _Holder | None:
        """The innermost function or class (`kind`) that holds `node`."""
        return next((a for a in self.ancestors(node) if isinstance(a, kind)), None)

    def received(self, node: cst.CSTNode, before: Before, name: str) -> cst.Param | None:
        """The parameter `name` of the function holding `node`, when nothing rebinds it before `node`:
        an object the caller made, whose making this function cannot see."""
        function = self.enclosing(node, cst.FunctionDef)
        if function is None or "." in name:
            return None
        params = function.params
        param = next(
            (p for p in (*params.posonly_params, *params.params, *params.kwonly_params) if p.name.value == name), None
        )
        bound = before.binding(name)
        if param is None or bound is None or bound.value is not None or bound.line != self.line_of(function):
            return None
        return param

    # --- writing -------------------------------------------------------------------------------------

    def insert(self, spot: Spot, *statements: cst.BaseStatement) -> None:
        where, anchor = spot
        (self._before if where == "before" else self._after).setdefault(id(anchor), []).extend(statements)

    def rewrite(self, node: cst.CSTNode, change: Callable[[cst.CSTNode], cst.CSTNode]) -> None:
        """Apply `change` to the rebuilt `node` (an original node) once its children are done."""
        self._rewrite[id(node)] = change

    def replace(self, node: cst.CSTNode, replacement: cst.CSTNode) -> None:
        self._rewrite[id(node)] = lambda _updated: replacement

    @property
    def planned(self) -> bool:
        return bool(self._before or self._after or self._rewrite)

    def on_leave(  # type: ignore[override]
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]:
        result = super().on_leave(original_node, updated_node)
        change = self._rewrite.get(id(original_node))
        if change is not None and isinstance(result, cst.CSTNode):
            result = change(result)
        before = self._before.get(id(original_node), [])
        after = self._after.get(id(original_node), [])
        if (before or after) and isinstance(result, cst.BaseStatement):
            if before and isinstance(result, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                # the block's blank lines and comments now lead into the first inserted line
                before = [before[0].with_changes(leading_lines=result.leading_lines), *before[1:]]
                result = result.with_changes(leading_lines=())
            return cst.FlattenSentinel([*before, result, *after])
        return result
