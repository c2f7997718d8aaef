"""plain-tensor-attribute: a tensor kept as a plain attribute of an nn.Module.

`self.scale = torch.full(...)` in `__init__` stores the tensor in the instance dict, where
`Module.to()`, `.cuda()` and DataParallel's replication never look, so it stays on the CPU while the
parameters move, and `x * self.scale` in `forward` then fails. The codemod takes the tensor
attributes that the failing line reads and, when `__init__` assigns them from a torch expression
after `super().__init__()`, registers them instead: `self.register_buffer("scale", ..., persistent=...)`.

`persistent=` is decided from the class: a constant that nothing reassigns or updates in place gets
`persistent=False`, so the `state_dict` (and every checkpoint) stays exactly as it was; a tensor that
another method reassigns or updates in place is state (a running mean, a cache of counts), so it gets
`persistent=True` and is saved from now on, which adds a key old checkpoints lack. An attribute that
is elsewhere given a non-tensor value, is assigned before `super().__init__()`, is assigned more than
once in `__init__`, or lives in a class that is not a module is left alone.

Safety, per patch: with `persistent=True` the `state_dict` gains a key that old checkpoints lack, so
strict loading of them fails: unsafe. With `persistent=False` the `state_dict` is unchanged and the
tensor now follows `.to()` and DataParallel replication, which is the fix; it would also follow a
dtype cast (`.half()`, `.to(torch.bfloat16)`), which the plain attribute escaped, so the patch is safe
only when the file casts no module's dtype, and says so when it does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TypeGuard

import libcst as cst
from libcst.metadata import PositionProvider

from fixer.patching.base import Codemod, Target, children, dotted, module_classes

# Torch functions that return a tensor; the attribute is built by one of them (maybe inside arithmetic).
TENSOR_FUNCTIONS = frozenset(
    {
        "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "arange", "range", "linspace",
        "logspace", "eye", "rand", "randn", "randint", "randperm", "normal", "tril", "triu", "diag", "stack",
        "cat", "outer", "exp", "log", "sqrt", "sin", "cos", "pow", "cumsum", "cumprod", "zeros_like",
        "ones_like", "full_like", "clone", "polar", "meshgrid", "einsum", "matmul", "hann_window",
    }
)  # fmt: skip
# Tensor methods that give back something else than a tensor.
_NOT_TENSOR_METHODS = frozenset({"tolist", "item", "numpy", "size", "dim", "numel", "nelement", "element_size"})
_IN_PLACE_HINTS = frozenset(
    {"copy_", "fill_", "zero_", "add_", "sub_", "mul_", "div_", "lerp_", "clamp_", "index_add_"}
)


class TensorAttributeToBuffer(Codemod):
    id = "tensor-attribute-to-buffer"
    summary = "register the tensor attribute as a buffer so .to() and DataParallel move it with the module"

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self._fixes: dict[cst.BaseSmallStatement, tuple[str, bool]] = {}  # assignment -> (name, persistent)

    def visit_Module(self, node: cst.Module) -> bool:
        classes = module_classes(node)
        cast = _dtype_cast(node)
        for line in reversed(self.target.lines):
            cls = next((c for c in classes if self._span(c)[0] <= line <= self._span(c)[1]), None)
            if cls is None:
                continue
            for name in self._attributes_read_at(cls, line):
                fix = _plan(cls, name)
                if fix is not None and fix[0] not in self._fixes:
                    self._fixes[fix[0]] = (name, fix[1])
                    self._judge_buffer(name, persistent=fix[1], cast=cast)
            if self._fixes:
                break
        return True

    def _judge_buffer(self, name: str, *, persistent: bool, cast: str | None) -> None:
        if persistent:
            self.judge("unsafe", f"`{name}` is state, so state_dict gains the key; old checkpoints lack it")
        elif cast is not None:
            self.judge("unsafe", f"the file casts a module with `{cast}`, which now casts `{name}` too")
        else:
            self.judge("safe", f"`{name}` is not persistent, so state_dict is unchanged; no dtype cast in the file")

    def _span(self, node: cst.CSTNode) -> tuple[int, int]:
        pos = self.get_metadata(PositionProvider, node)
        return pos.start.line, pos.end.line

    def _attributes_read_at(self, cls: cst.ClassDef, line: int) -> list[str]:
        """`self.<name>` values read by the statement on `line` (not methods or layers it calls)."""
        names: list[str] = []
        for statement in _statements(cls):
            start, end = self._span(statement)
            if not start <= line <= end:
                continue
            called = {id(n.func) for n in _walk(statement) if isinstance(n, cst.Call)}
            for node in _walk(statement):
                if _self_attribute(node) and id(node) not in called and node.attr.value not in names:
                    names.append(node.attr.value)
        return names

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        if not any(small in self._fixes for small in original_node.body):
            return updated_node
        body = []
        for original, updated in zip(original_node.body, updated_node.body, strict=True):
            fix = self._fixes.get(original)
            if fix is not None and isinstance(updated, (cst.Assign, cst.AnnAssign)) and updated.value is not None:
                updated = _register(fix[0], updated.value, persistent=fix[1])
            body.append(updated)
        return updated_node.with_changes(body=body)


_CASTS = frozenset({"half", "bfloat16", "double"})
_DTYPE_NAMES = re.compile(r"^torch\.(?:float16|half|bfloat16|float64|double)$")


def _dtype_cast(module: cst.Module) -> str | None:
    """`.half()`, `.bfloat16()`, `.double()` or `.to(torch.float16)`/`.to(dtype=...)` somewhere in the file."""
    for node in _walk(module, into_scopes=True):
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
            continue
        method = node.func.attr.value
        if method in _CASTS and not node.args:
            return f".{method}()"
        if method == "to" and any(
            (arg.keyword is not None and arg.keyword.value == "dtype") or _DTYPE_NAMES.match(dotted(arg.value) or "")
            for arg in node.args
        ):
            return ".to(<dtype>)"
    return None


def _plan(cls: cst.ClassDef, name: str) -> tuple[cst.BaseSmallStatement, bool] | None:
    """The `self.<name> = <tensor>` of __init__ to register, and whether it is state (persistent)."""
    init = next((f for f in _methods(cls) if f.name.value == "__init__"), None)
    if init is None:
        return None
    assignments = [(f, s) for f in _methods(cls) for s in _walk(f) if _assigns(s, name)]
    in_init = [s for f, s in assignments if f is init]
    if len(in_init) != 1:
        return None
    assignment = in_init[0]
    assert isinstance(assignment, (cst.Assign, cst.AnnAssign))
    if assignment.value is None or not _is_tensor_expression(assignment.value):
        return None
    if not _after_super_init(init, assignment):
        return None
    for node in _walk(cls, into_scopes=True):  # registered already, or made a parameter somewhere
        if isinstance(node, cst.Call) and (dotted(node.func) or "").endswith(("register_buffer", "register_parameter")):
            first = node.args[0].value if node.args else None
            if isinstance(first, cst.SimpleString) and first.evaluated_value == name:
                return None
    state = False
    for _function, statement in assignments:
        if statement is assignment:
            continue
        value = statement.value if isinstance(statement, (cst.Assign, cst.AnnAssign)) else None
        if value is not None and _plainly_not_a_tensor(value):
            return None  # a buffer only takes tensors (or None)
        state = True  # reassigned or augmented after construction: it is state, not a constant
    for method in _methods(cls):
        for node in _walk(method):
            if _mutates_in_place(node, name):
                state = True
    return assignment, state


def _register(name: str, value: cst.BaseExpression, *, persistent: bool) -> cst.Expr:
    no_space = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
    return cst.Expr(
        cst.Call(
            func=cst.Attribute(value=cst.Name("self"), attr=cst.Name("register_buffer")),
            args=[
                cst.Arg(cst.SimpleString(f'"{name}"')),
                cst.Arg(value),
                cst.Arg(cst.Name(str(persistent)), keyword=cst.Name("persistent"), equal=no_space),
            ],
        )
    )


def _methods(cls: cst.ClassDef) -> Iterator[cst.FunctionDef]:
    for statement in cls.body.body:
        if isinstance(statement, cst.FunctionDef):
            yield statement


def _statements(cls: cst.ClassDef) -> Iterator[cst.CSTNode]:
    """Each simple statement of the class's methods, and the header of each compound one."""
    for node in _walk(cls, into_scopes=True):
        if isinstance(node, cst.BaseSmallStatement):
            yield node
        elif isinstance(node, (cst.If, cst.While)):
            yield node.test
        elif isinstance(node, cst.For):
            yield node.iter
        elif isinstance(node, cst.With):
            yield from (item.item for item in node.items)


def _walk(node: cst.CSTNode, *, into_scopes: bool = False) -> Iterator[cst.CSTNode]:
    yield node
    for child in children(node):
        if into_scopes or not isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            yield from _walk(child, into_scopes=into_scopes)


def _self_attribute(node: cst.CSTNode, name: str | None = None) -> TypeGuard[cst.Attribute]:
    return (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
        and (name is None or node.attr.value == name)
    )


def _assigns(node: cst.CSTNode, name: str) -> bool:
    """`self.<name> = ...`, `self.<name>: T = ...` or `self.<name> += ...` (also inside a tuple target)."""
    if isinstance(node, cst.Assign):
        return any(_target_names(t.target, name) for t in node.targets)
    if isinstance(node, (cst.AnnAssign, cst.AugAssign)):
        return _target_names(node.target, name)
    return False


def _target_names(target: cst.BaseExpression, name: str) -> bool:
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_target_names(e.value, name) for e in target.elements)
    return _self_attribute(target, name)


def _mutates_in_place(node: cst.CSTNode, name: str) -> bool:
    """`self.<name>.add_(...)`, `self.<name>[i] = ...`: the tensor is updated after construction."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and _self_attribute(node.func.value, name):
        method = node.func.attr.value
        return method in _IN_PLACE_HINTS or (method.endswith("_") and not method.startswith("_"))
    if isinstance(node, cst.Assign):
        return any(isinstance(t.target, cst.Subscript) and _self_attribute(t.target.value, name) for t in node.targets)
    return False


def _is_tensor_expression(node: cst.BaseExpression) -> bool:
    """Plainly a tensor: a torch function call, a tensor method on one, or arithmetic with one."""
    if isinstance(node, cst.Call):
        name = dotted(node.func) or ""
        if name.startswith("torch.") and name.count(".") == 1:
            return name.removeprefix("torch.") in TENSOR_FUNCTIONS
        if isinstance(node.func, cst.Attribute) and node.func.attr.value not in _NOT_TENSOR_METHODS:
            return _is_tensor_expression(node.func.value)
        return False
    if isinstance(node, cst.BinaryOperation):
        return _is_tensor_expression(node.left) or _is_tensor_expression(node.right)
    if isinstance(node, cst.UnaryOperation):
        return _is_tensor_expression(node.expression)
    if isinstance(node, cst.Subscript):
        return _is_tensor_expression(node.value)
    return False


def _plainly_not_a_tensor(node: cst.BaseExpression) -> bool:
    return isinstance(
        node,
        (
            cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
            cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp, cst.Lambda,
        ),
    )  # fmt: skip


def _after_super_init(init: cst.FunctionDef, assignment: cst.CSTNode) -> bool:
    """Whether `super().__init__()` (or `nn.Module.__init__(self)`) runs before the assignment."""
    for statement in init.body.body:
        if any(n is assignment for n in _walk(statement)):
            return False
        for node in _walk(statement):
            if (
                isinstance(node, cst.Call)
                and isinstance(node.func, cst.Attribute)
                and node.func.attr.value == "__init__"
            ):
                return True
    return False


CODEMOD = TensorAttributeToBuffer
