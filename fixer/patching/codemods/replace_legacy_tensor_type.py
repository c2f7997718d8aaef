"""legacy-tensor-type-device: a legacy tensor type (torch.FloatTensor, torch.LongTensor) used on a tensor
that lives on an accelerator.

Each legacy type names a device as well as a dtype: `torch.LongTensor` is a CPU tensor of int64. Two
patterns, on the failing lines:

- a cast, `t.type(torch.LongTensor)` (or the type's name as a string): it copies a GPU tensor to the CPU.
  The patch casts with the dtype's own method, `t.long()`, which keeps the tensor where it is. Safe: the
  dtype the line asked for is the same, and the tensor no longer leaves the device the failing operation
  reads its partners on.
- a constructor given one argument, `torch.FloatTensor(x)`: for a tensor on another device it raises
  ("expected TensorOptions(dtype=float, device=cpu, ...) (got TensorOptions(..., device=cuda:0, ...))").
  The patch converts with `torch.as_tensor(x, dtype=torch.float32)`, which keeps a tensor on its device and
  reads lists and arrays as the constructor did. Safe where the argument is plainly a tensor; otherwise
  unsafe, since for a whole number the constructor made a tensor of that many uninitialised elements and
  `as_tensor` makes a tensor holding that number.

A CUDA type (`torch.cuda.FloatTensor`) is left alone: it asks for the GPU on purpose, and where that is
wrong the fix is a device choice, which another entry makes.
"""

from __future__ import annotations

import libcst as cst

from fixer.patching.base import Target, dotted, resolved, torch_names
from fixer.patching.flow import PlannedCodemod, literal, plainly_tensor

# The legacy CPU types, by name: the dtype each holds and the tensor method that casts to it.
LEGACY_TYPES: dict[str, tuple[str, str]] = {
    "FloatTensor": ("float32", "float"),
    "DoubleTensor": ("float64", "double"),
    "HalfTensor": ("float16", "half"),
    "BFloat16Tensor": ("bfloat16", "bfloat16"),
    "LongTensor": ("int64", "long"),
    "IntTensor": ("int32", "int"),
    "ShortTensor": ("int16", "short"),
    "CharTensor": ("int8", "char"),
    "ByteTensor": ("uint8", "byte"),
    "BoolTensor": ("bool", "bool"),
}

_CAST_KEEPS_DEVICE = "the cast gives the dtype the line asked for and no longer copies the tensor to the CPU"
_TENSOR_STAYS = "as_tensor gives a tensor of the same dtype and values, on the device its argument is on"
_MAYBE_A_SIZE = (
    "if the argument can be a whole number, the legacy constructor made that many uninitialised elements, "
    "where as_tensor makes a tensor holding the number"
)


class ReplaceLegacyTensorType(PlannedCodemod):
    id = "replace-legacy-tensor-type"
    summary = "cast or convert with the dtype instead of a legacy CPU tensor type, so the tensor keeps its device"

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self.rewritten: set[int] = set()  # a cast two failing calls both read is rewritten once

    def plan(self, module: cst.Module) -> None:
        names = torch_names(module)
        for _line, calls in self.calls_on_target(module):
            for call in calls:
                if self._cast(call, names) or self._constructor(call, names):
                    continue
                before = self.before(call)
                for arg in call.args:
                    bound = before.binding(arg.value.value) if isinstance(arg.value, cst.Name) else None
                    if bound is not None and bound.value is not None:
                        self._cast_within(bound.value, names)

    def _cast_within(self, value: cst.BaseExpression, names: dict[str, str]) -> None:
        """The casts in what a name the failing call reads was bound to: `target = labels.type(torch.LongTensor)`
        some lines before `loss = criterion(logits, target)`, where the CPU copy meets the GPU."""
        found: list[cst.Call] = []

        class Calls(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> None:
                found.append(node)

        value.visit(Calls())
        for call in found:
            self._cast(call, names)

    def _cast(self, call: cst.Call, names: dict[str, str]) -> bool:
        """`t.type(torch.LongTensor)` -> `t.long()`."""
        if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "type") or len(call.args) != 1:
            return False
        given = call.args[0]
        if given.keyword is not None and given.keyword.value != "dst_type":
            return False
        legacy = _legacy_type(given.value, names)
        if legacy is None:
            return False
        if id(call) not in self.rewritten:
            self.rewritten.add(id(call))
            self.rewrite(call, lambda cast: _cast_with(cast, LEGACY_TYPES[legacy][1]))
            self.judge("safe", _CAST_KEEPS_DEVICE)
        return True

    def _constructor(self, call: cst.Call, names: dict[str, str]) -> bool:
        """`torch.FloatTensor(x)` -> `torch.as_tensor(x, dtype=torch.float32)`, for one argument that is
        neither a literal nor a list or tuple display, which the constructor reads as sizes or data alike."""
        legacy = _legacy_type(call.func, names)
        if legacy is None or len(call.args) != 1:
            return False
        arg = call.args[0]
        if arg.keyword is not None or arg.star or literal(arg.value) or isinstance(arg.value, cst.List | cst.Tuple):
            return False
        torch, dot, _ = (dotted(call.func) or "").rpartition(".")
        if not dot:
            return False  # `from torch import FloatTensor`: no name of torch's module to write as_tensor with
        self.rewrite(call, lambda made: _converted(made, torch, LEGACY_TYPES[legacy][0]))
        if plainly_tensor(arg.value, self.before(call)):
            self.judge("safe", _TENSOR_STAYS)
        else:
            self.judge("unsafe", _MAYBE_A_SIZE)
        return True


def _cast_with(node: cst.CSTNode, method: str) -> cst.CSTNode:
    assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
    return cst.Call(func=cst.Attribute(value=node.func.value, attr=cst.Name(method)))


def _converted(node: cst.CSTNode, torch: str, dtype: str) -> cst.CSTNode:
    assert isinstance(node, cst.Call)
    return cst.Call(
        func=cst.parse_expression(f"{torch}.as_tensor"),
        args=[
            cst.Arg(value=node.args[0].value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            cst.Arg(
                keyword=cst.Name("dtype"),
                value=cst.parse_expression(f"{torch}.{dtype}"),
                equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
            ),
        ],
    )


def _legacy_type(node: cst.BaseExpression, names: dict[str, str]) -> str | None:
    """`FloatTensor` for `torch.FloatTensor`, `th.FloatTensor` or the string "torch.FloatTensor"; None for
    a CUDA type or anything else."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        name = value if isinstance(value, str) else None
    else:
        name = resolved(node, names) if dotted(node) else None
    if not name or not name.startswith("torch.") or name.count(".") != 1:
        return None
    short = name.removeprefix("torch.")
    return short if short in LEGACY_TYPES else None


CODEMOD = ReplaceLegacyTensorType
