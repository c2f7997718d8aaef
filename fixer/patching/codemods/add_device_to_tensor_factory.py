"""tensor-created-without-device and rnn-hidden-state-on-cpu: a torch factory call without `device=`.

`torch.zeros(...)`, `ones`, `arange`, `full`, `eye`, `empty`, `rand*`, `tensor(...)` and friends make
their tensor on the CPU unless told otherwise. Inside `forward`, a loss or a mask helper, that new
tensor then meets GPU data at the failing line: a causal mask, a position index, a loss accumulator, or
an RNN's initial state `torch.zeros(layers, batch, hidden)`.

The codemod follows the data backwards from the failing line (the factory call on that line, or the
assignments that feed the names it reads, including what a `self.helper(...)` it calls returns) and
adds `device=` to the factory calls it finds there, reusing a device the code already has, in this
order: a `device` variable in scope; the tensor whose `.shape`/`.size()` sizes the new one (the
input of an RNN, for its hidden state); a `<something>.device` already written in the function; the
device argument of an earlier `.to(...)`; a tensor parameter of the function; and, in a method of a
module holding layers, `next(self.parameters()).device`. With none of those it changes nothing.

Safety, per patch: the values are unchanged either way. When the device is that of a tensor the
failing line's data is computed from (`device=x.device` for the `x` it meets, or the input its
scores came from), only the placement changes and the patch is safe. Any other choice (a `device`
variable, a parameter's device, an earlier `.to`) may not be where the failing line's other tensors
are, and code that relied on a CPU copy (`.numpy()`, `pack_padded_sequence` lengths, Python
indexing) would behave differently, so it is unsafe and says which device it chose.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import PositionProvider

from fixer.patching.base import Codemod, Target, children, dotted, functions_with_class, resolved, torch_names

FACTORIES = frozenset(
    {
        "zeros", "ones", "empty", "full", "arange", "range", "linspace", "logspace", "eye", "rand",
        "randn", "randint", "randperm", "tensor", "as_tensor", "tril_indices", "triu_indices",
    }
)  # fmt: skip
# Constructors that take no device= a GPU run can use (the legacy typed ones accept only their own device
# type, and from_numpy none): their tensor is moved where it is made instead, `torch.FloatTensor(v).to(d)`.
MOVED_FACTORIES = frozenset(
    {
        "Tensor", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
        "ShortTensor", "IntTensor", "LongTensor", "BoolTensor", "from_numpy",
    }
)  # fmt: skip
# Methods and attributes that only a tensor (or an array, for the first two) has: evidence a name is one.
_TENSOR_USES = frozenset(
    {
        "shape", "size", "dtype", "device", "ndim", "dim", "view", "reshape", "unsqueeze", "squeeze",
        "transpose", "permute", "contiguous", "float", "masked_fill", "new_zeros", "new_ones", "matmul",
    }
)  # fmt: skip
_DEVICE_STRING = re.compile(r"^(?:cuda|cpu|mps|xpu|meta|npu|hpu)(?::\d+)?$")
_SCOPE_NODES = (cst.FunctionDef, cst.ClassDef)
_NOT_DATA = frozenset({"next", "torch", "iter"})  # names a device expression reads that hold no data
_CONSTANTS = frozenset({"True", "False", "None"})


@dataclass
class _Unit:
    """One statement, or the header of a compound one: what it binds, what it reads, where it is."""

    node: cst.CSTNode
    start: int
    end: int
    assigns: set[str] = field(default_factory=set)
    reads: set[str] = field(default_factory=set)  # everything it reads
    flows: set[str] = field(default_factory=set)  # what it reads through tensor ops, not through layers or opaque calls


@dataclass
class _Scope:
    node: cst.FunctionDef | cst.Module
    cls: cst.ClassDef | None
    units: list[_Unit]
    params: list[cst.Param]


class AddDeviceToTensorFactory(Codemod):
    id = "add-device-to-tensor-factory"
    summary = "create the tensor on the device of the data it meets (add device= to the torch factory call)"

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self._fixes: dict[cst.Call, cst.BaseExpression] = {}
        self._met: set[int] = set()  # devices read off a value the arithmetic meets, which may be a number

    # -- analysis -----------------------------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> bool:
        self._module = node
        self._names = torch_names(node)  # `th.zeros(...)` after `import torch as th` is a factory too
        self._functions = functions_with_class(node)
        self._module_names = {n for unit in self._units(node.body) for n in unit.assigns}  # what a function may read
        innermost = self.target.lines[-1:]
        for line in reversed(self.target.lines):  # innermost first; stop at the first frame that yields a fix
            scope = self._scope_at(line)
            if isinstance(scope.node, cst.Module) and line not in innermost:
                continue  # a script's outer call site: its inputs are another cause (inputs-not-moved)
            failing = [u for u in scope.units if u.start <= line <= u.end]
            if not failing:
                continue
            self._follow(scope, failing, depth=0)
            if self._fixes:
                break
        return True

    def _span(self, node: cst.CSTNode) -> tuple[int, int]:
        pos = self.get_metadata(PositionProvider, node)
        return pos.start.line, pos.end.line

    def _scope_at(self, line: int) -> _Scope:
        inner: cst.FunctionDef | None = None
        for function in self._functions:
            start, end = self._span(function)
            if start <= line <= end and (inner is None or self._span(inner)[0] < start):
                inner = function
        if inner is None:
            return self._scope_of(self._module)
        return self._scope_of(inner)

    def _scope_of(self, node: cst.FunctionDef | cst.Module) -> _Scope:
        if isinstance(node, cst.Module):
            return _Scope(node, None, list(self._units(node.body)), [])
        params = [*node.params.posonly_params, *node.params.params, *node.params.kwonly_params]
        return _Scope(node, self._functions.get(node), list(self._block(node.body)), params)

    def _units(self, body: Sequence[cst.CSTNode]) -> Iterator[_Unit]:
        for statement in body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    yield self._unit(small)
            elif isinstance(statement, (cst.If, cst.While)):
                yield self._unit(statement.test)
                yield from self._block(statement.body)
                if statement.orelse is not None:
                    yield from (
                        self._units([statement.orelse])
                        if isinstance(statement.orelse, cst.If)
                        else self._block(statement.orelse.body)
                    )
            elif isinstance(statement, cst.For):
                unit = self._unit(statement.iter)
                unit.assigns |= _bound(statement.target)
                yield unit
                yield from self._block(statement.body)
            elif isinstance(statement, cst.With):
                for item in statement.items:
                    unit = self._unit(item.item)
                    if item.asname is not None:
                        unit.assigns |= _bound(item.asname.name)
                    yield unit
                yield from self._block(statement.body)
            elif isinstance(statement, cst.Try):
                yield from self._block(statement.body)
                for handler in statement.handlers:
                    yield from self._block(handler.body)
                for extra in (statement.orelse, statement.finalbody):
                    if extra is not None:
                        yield from self._block(extra.body)

    def _block(self, block: cst.BaseSuite) -> Iterator[_Unit]:
        if isinstance(block, cst.IndentedBlock):
            yield from self._units(block.body)
        elif isinstance(block, cst.SimpleStatementSuite):
            for small in block.body:
                yield self._unit(small)

    def _unit(self, node: cst.CSTNode) -> _Unit:
        start, end = self._span(node)
        unit = _Unit(node, start, end)
        sources: list[cst.CSTNode] = [node]
        if isinstance(node, cst.Assign):
            for target in node.targets:
                unit.assigns |= _bound(target.target)
            sources = [node.value]
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
            unit.assigns |= _bound(node.target)
            sources = [node.value] if node.value is not None else []
            if isinstance(node, cst.AugAssign):
                sources.append(node.target)
        for source in sources:
            unit.reads |= _reads(source)
            unit.flows |= _reads(source, flow=True)
        return unit

    def _follow(self, scope: _Scope, failing: list[_Unit], depth: int) -> None:
        """Backward data flow from the failing statements: fix the factory calls whose result gets there."""
        needed: set[str] = set().union(*(unit.reads for unit in failing))
        feeding = [(unit, False) for unit in failing]  # the failing statement consumes all it reads
        first = scope.units.index(failing[0])
        upstream = set(needed)  # every name the failing line's data is computed from, through layers too
        for unit in reversed(scope.units[:first]):
            if unit.assigns & needed:
                needed |= unit.flows
                feeding.append((unit, True))
            if unit.assigns & upstream:
                upstream |= unit.reads
        for unit, flow in feeding:
            moved = _moved_afterwards(unit.node)
            for call in _calls(unit.node, flow=flow):
                if factory(call, self._names) and call not in moved:
                    device = self._device_for(scope, call, failing)
                    if device is not None and call not in self._fixes:
                        self._fixes[call] = device
                        self._judge_choice(device, upstream)
                elif depth < 2 and (helper := self._helper(scope, call)) is not None:
                    inner = self._scope_of(helper)
                    returns = [u for u in inner.units if isinstance(u.node, cst.Return)]
                    if returns:
                        self._follow(inner, returns, depth + 1)

    def _helper(self, scope: _Scope, call: cst.Call) -> cst.FunctionDef | None:
        """The function a call runs, when it is defined in this file: `self.init_hidden(...)`, `make_mask(...)`."""
        name = dotted(call.func)
        if name is None:
            return None
        for function, cls in self._functions.items():
            if function is scope.node:
                continue
            if name == f"self.{function.name.value}" and cls is not None and cls is scope.cls:
                return function
            if name == function.name.value and cls is None and function in self._module.body:
                return function
        return None

    # -- choosing the device ------------------------------------------------------------------------
    def _device_for(self, scope: _Scope, call: cst.Call, failing: list[_Unit]) -> cst.BaseExpression | None:
        index = next(i for i, u in enumerate(scope.units) if _contains(u.node, call))
        before = scope.units[:index]
        bound = {p.name.value for p in scope.params} | {n for u in before for n in u.assigns}
        if "device" in bound or self._global_device_in_use(scope):
            return cst.Name("device")
        for param in scope.params:
            if _annotated(param, "torch.device"):
                return cst.Name(param.name.value)
        sized = _sized_by(call, before, bound)
        if sized is not None:
            return _attr(cst.Name(sized), "device")
        met = _met(scope.units[index].node, call) or self._met_later(scope.units[index], failing)
        if met is not None and _root(met) in bound | {"self"} | self._module_names:
            device = _attr(met, "device")
            self._met.add(id(device))
            return device
        for unit in reversed(before):  # a device the code already asks for: `x.device`, `next(...).device`
            for node in _walk(unit.node):
                if (
                    isinstance(node, cst.Attribute)
                    and node.attr.value == "device"
                    and resolved(node, self._names) != "torch.device"
                ):
                    return node.deep_clone()
        for unit in reversed(before):  # the device of an earlier `.to(...)`
            for node in _calls(unit.node):
                if isinstance(node.func, cst.Attribute) and node.func.attr.value == "to":
                    arg = _device_arg(node)
                    if arg is not None:
                        return arg.deep_clone()
        tensors = [p.name.value for p in scope.params if p.name.value not in ("self", "cls") and _is_tensor(scope, p)]
        if tensors:
            failing_reads = set().union(*(unit.reads for unit in failing))
            chosen = next((t for t in tensors if t in failing_reads), tensors[0])
            return _attr(cst.Name(chosen), "device")
        if self._module_with_layers(scope):
            return cst.parse_expression("next(self.parameters()).device")
        return None

    @staticmethod
    def _met_later(unit: _Unit, failing: list[_Unit]) -> cst.BaseExpression | None:
        """What the tensor meets at the failing line when it was made earlier and bound to one name there:
        `s = torch.tensor(...)` above `return s - (end - start)` meets `end`."""
        if unit in failing or len(unit.assigns) != 1 or not isinstance(unit.node, cst.Assign):
            return None
        name = next(iter(unit.assigns))
        for later in failing:
            for node in _walk(later.node):
                if isinstance(node, cst.Name) and node.value == name and (found := _met(later.node, node)) is not None:
                    return found
        return None

    def _judge_choice(self, device: cst.BaseExpression, upstream: set[str]) -> None:
        """Safe when the device comes from what the failing line's data is computed from."""
        chosen = cst.Module([]).code_for_node(device)
        if id(device) in self._met:
            met = chosen.removesuffix(".device")
            self.judge(
                "unsafe", f"made on `{chosen}`, the value it meets: check that `{met}` is a tensor, not a number"
            )
            return
        sources = {name for name in _reads(device) if "." not in name} - _NOT_DATA
        if sources and sources <= upstream:
            self.judge("safe", f"made on `{chosen}`, where the failing line's data comes from: only placement changes")
        else:
            self.judge("unsafe", f"made on `{chosen}`: check that is where the failing line's other tensors are")

    def _global_device_in_use(self, scope: _Scope) -> bool:
        """`device` read by the function and assigned at the top of the module: the script's own device."""
        if isinstance(scope.node, cst.Module) or not any("device" in u.reads for u in scope.units):
            return False
        return any("device" in u.assigns for u in self._units(self._module.body))

    def _module_with_layers(self, scope: _Scope) -> bool:
        """A method of an nn.Module subclass that builds layers in __init__, so it has parameters to ask."""
        cls = scope.cls
        if cls is None or not scope.params or scope.params[0].name.value != "self":
            return False
        if not any((name := dotted(base.value)) and name.endswith("Module") for base in cls.bases):
            return False
        for function, owner in self._functions.items():
            if owner is cls and function.name.value == "__init__":
                for node in _walk(function):
                    if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
                        head = dotted(node.value.func) or ""
                        if re.match(r"(?:torch\.)?nn\.[A-Z]", head):
                            return True
        return False

    # -- rewriting ----------------------------------------------------------------------------------
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        device = self._fixes.get(original_node)
        if device is None:
            return updated_node
        return made_on(updated_node, device, moved=factory(original_node, self._names) in MOVED_FACTORIES)


def made_on(call: cst.Call, device: cst.BaseExpression, *, moved: bool = False) -> cst.Call:
    """The factory call with `device=` added, keeping a trailing comma's layout; or, for a constructor that
    takes no usable device (`moved`), its result moved there: `torch.FloatTensor(v).to(d)`."""
    if moved:
        return cst.Call(func=_attr(call, "to"), args=[cst.Arg(device)])
    new = cst.Arg(
        keyword=cst.Name("device"),
        value=device,
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    args = list(call.args)
    if args and isinstance(args[-1].comma, cst.Comma):  # a trailing comma: keep the layout
        between = args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else cst.Comma()
        new = new.with_changes(comma=args[-1].comma)
        args[-1] = args[-1].with_changes(comma=between)
    return call.with_changes(args=[*args, new])


def _met(statement: cst.CSTNode, made: cst.BaseExpression) -> cst.BaseExpression | None:
    """The data the new tensor (`made`: the factory call, or the name its result was bound to) meets in
    the statement, outermost operation first, and so the device it needs: `w` in `w - torch.FloatTensor(v)
    * g`, `X[i]` in `torch.from_numpy(a) * (X[i][j:k] - m)`, the index `labels` in `torch.eye(n)[labels]`,
    `preds` in `backward(preds[:, c], torch.ones(n))`."""
    for node in _walk(statement):  # outermost first: a walk meets a parent before its children
        if isinstance(node, cst.BinaryOperation):
            sides = (node.left, node.right)
            holding = [side for side in sides if _contains(side, made)]
            if holding:
                found = _data(sides[1] if holding[0] is sides[0] else sides[0])
                if found is not None:
                    return found
        elif isinstance(node, cst.Subscript) and node.value is made:
            for element in node.slice:
                if isinstance(element.slice, cst.Index) and (found := _data(element.slice.value)) is not None:
                    return found
        elif (
            isinstance(node, cst.Call)
            and (dotted(node.func) or "").startswith("torch.")
            and any(arg.value is made for arg in node.args)
        ):
            for arg in node.args:
                if arg.value is not made and arg.keyword is None and (found := _data(arg.value)) is not None:
                    return found
    return None


def _data(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """The tensor an operand reads, as an expression whose `.device` is its device: a name, an attribute
    or an item of one (`X[l]`), with any slicing dropped (`X[l][a:b]` and `p[:, c]` live where `X[l]`
    and `p` do); in an arithmetic expression, its first such operand. None for numbers and calls."""
    if isinstance(value, cst.BinaryOperation):
        return _data(value.left) or _data(value.right)
    if isinstance(value, cst.UnaryOperation):
        return _data(value.expression)
    while isinstance(value, cst.Subscript) and any(isinstance(e.slice, cst.Slice) for e in value.slice):
        value = value.value
    root = value
    while isinstance(root, (cst.Subscript, cst.Attribute)):
        root = root.value
    if not isinstance(root, cst.Name) or root.value in _NOT_DATA | _CONSTANTS or root.value in ("np", "numpy", "math"):
        return None
    if isinstance(value, cst.Name) or (isinstance(value, (cst.Subscript, cst.Attribute)) and not _calls_in(value)):
        return value.deep_clone().with_changes(lpar=(), rpar=())
    return None


def _root(value: cst.BaseExpression) -> str | None:
    """The name an attribute or item chain starts from: `X` for `X[l].data`."""
    while isinstance(value, (cst.Subscript, cst.Attribute)):
        value = value.value
    return value.value if isinstance(value, cst.Name) else None


def _calls_in(node: cst.CSTNode) -> bool:
    return any(isinstance(n, cst.Call) for n in _walk(node))


def _sized_by(call: cst.Call, before: list[_Unit], bound: set[str]) -> str | None:
    """The tensor whose shape the new one is built from: `torch.zeros(1, x.size(0), h)` -> `x`."""
    seen: set[str] = set()
    frontier: list[cst.CSTNode] = [arg.value for arg in call.args if arg.keyword is None]
    for hop in range(3):
        names: set[str] = set()
        for node in frontier:
            found = _shape_source(node, lengths=hop == 0)
            if found is not None and found in bound:
                return found
            names |= {n for n in _reads(node) if "." not in n} - seen
        seen |= names
        frontier = [u.node for u in reversed(before) if u.assigns & names and isinstance(u.node, cst.Assign)]
        frontier = [n.value for n in frontier if isinstance(n, cst.Assign)]
        if not frontier:
            return None
    return None


def _is_tensor(scope: _Scope, param: cst.Param) -> bool:
    if _annotated(param, "Tensor"):
        return True
    name = param.name.value
    for unit in scope.units:
        for node in _walk(unit.node):
            if (
                isinstance(node, cst.Attribute)
                and isinstance(node.value, cst.Name)
                and node.value.value == name
                and node.attr.value in _TENSOR_USES
            ):
                return True
    return False


def _walk(node: cst.CSTNode, *, flow: bool = False) -> Iterator[cst.CSTNode]:
    """The node and everything under it, not entering nested functions or classes (nor, with `flow`,
    the arguments of calls whose result does not carry their arguments' placement)."""
    yield node
    if flow and _opaque(node):
        return
    for child in children(node):
        if not isinstance(child, _SCOPE_NODES):
            yield from _walk(child, flow=flow)


def _opaque(node: cst.CSTNode) -> bool:
    """A call whose result is not built from its arguments by tensor operations: a layer (`self.rnn(x)`),
    a model, `pack_padded_sequence(...)`. Torch functions and tensor methods (`x.masked_fill`) are not."""
    if not isinstance(node, cst.Call):
        return False
    name = dotted(node.func) or ""
    if name.startswith(("torch.", "F.", "nn.functional.")):
        return name.startswith(("torch.nn.utils", "torch.utils")) or bool(re.match(r"torch\.nn\.[A-Z]", name))
    func = node.func
    if isinstance(func, cst.Attribute):
        return isinstance(func.value, cst.Name) and func.value.value == "self"
    return True


def _calls(node: cst.CSTNode, *, flow: bool = False) -> Iterator[cst.Call]:
    return (n for n in _walk(node, flow=flow) if isinstance(n, cst.Call))


def _contains(outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
    return any(n is inner for n in _walk(outer))


def _reads(node: cst.CSTNode, *, flow: bool = False) -> set[str]:
    """Names and dotted names (`self.hidden`) an expression reads; attribute and keyword names excluded.
    With `flow`, only those that reach its value through tensor operations (see `_opaque`)."""
    found: set[str] = set()

    def visit(n: cst.CSTNode) -> None:
        if flow and _opaque(n):
            return
        if isinstance(n, cst.Name):
            found.add(n.value)
            return
        if isinstance(n, cst.Attribute):
            name = dotted(n)
            if name:
                found.add(name)
            visit(n.value)
            return
        if isinstance(n, cst.Arg):
            visit(n.value)
            return
        if isinstance(n, _SCOPE_NODES):
            return
        for child in children(n):
            visit(child)

    visit(node)
    return found


def _bound(target: cst.CSTNode) -> set[str]:
    """What an assignment target binds: names, `self.attr`, and the root of `a[i] = ...` (it mutates `a`)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return set().union(*(_bound(e.value) for e in target.elements))
    if isinstance(target, cst.StarredElement):
        return _bound(target.value)
    if isinstance(target, cst.Subscript):
        return _bound(target.value)
    name = dotted(target) if isinstance(target, (cst.Name, cst.Attribute)) else None
    return {name} if name else set()


def _moved_afterwards(node: cst.CSTNode) -> set[cst.Call]:
    """Factory calls whose result is moved at once: `torch.ones(3).to(x.device)`, `.cuda()`, `.type_as(x)`,
    also after other methods on the way (`torch.tensor(v).float().to(d)`)."""
    moved: set[cst.Call] = set()
    for n in _walk(node):
        if (
            isinstance(n, cst.Call)
            and isinstance(n.func, cst.Attribute)
            and n.func.attr.value in ("to", "cuda", "type_as")
        ):
            receiver: cst.BaseExpression | None = n.func.value
            while isinstance(receiver, cst.Call):
                moved.add(receiver)
                receiver = receiver.func.value if isinstance(receiver.func, cst.Attribute) else None
    return moved


def factory(call: cst.Call, names: dict[str, str]) -> str | None:
    """The torch factory a call is when it makes its tensor on the default device, or None."""
    name = resolved(call.func, names)
    if name is None or not name.startswith("torch.") or name.removeprefix("torch.") not in FACTORIES | MOVED_FACTORIES:
        return None
    if any(arg.star or (arg.keyword and arg.keyword.value in ("device", "out")) for arg in call.args):
        return None
    return name.removeprefix("torch.")


def _shape_source(node: cst.CSTNode, *, lengths: bool = False) -> str | None:
    """`x.shape[1]`, `x.size(0)`, and with `lengths` `len(x)` or `len(x[0])`, inside an expression: the
    name `x`. A length sizes a tensor only in the factory's own arguments: further up it counts the items
    of a loop or a list (`for i in range(len(xs))`). An uncalled `.size` is not a tensor's (a PIL image's
    width and height, a NumPy array's element count)."""
    for n in _walk(node):
        if isinstance(n, cst.Attribute) and n.attr.value == "shape":
            found = n.value
        elif isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "size":
            found = n.func.value
        elif lengths and isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == "len" and n.args:
            found = n.args[0].value
            while isinstance(found, cst.Subscript):
                found = found.value
        else:
            continue
        if isinstance(found, cst.Name) and found.value not in ("self", "torch", "np", "numpy"):
            return found.value
    return None


def _annotated(param: cst.Param, text: str) -> bool:
    if param.annotation is None:
        return False
    annotation = cst.Module(body=[]).code_for_node(param.annotation.annotation)
    return text in annotation


def _device_arg(call: cst.Call) -> cst.BaseExpression | None:
    """The device a `.to(...)` call names, when it plainly is one (never a dtype)."""
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == "device":
                return arg.value
            continue
        value = arg.value
        if isinstance(value, cst.SimpleString) and _DEVICE_STRING.match(str(value.evaluated_value)):
            return value
        if isinstance(value, cst.Call) and dotted(value.func) == "torch.device":
            return value
        if isinstance(value, cst.Name) and ("device" in value.value or value.value in ("dev", "gpu")):
            return value
        return None
    return None


def _attr(value: cst.BaseExpression, attr: str) -> cst.Attribute:
    return cst.Attribute(value=value, attr=cst.Name(attr))


CODEMOD = AddDeviceToTensorFactory
