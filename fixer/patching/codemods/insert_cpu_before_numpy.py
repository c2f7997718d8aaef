"""numpy-on-cuda-tensor: a tensor on the GPU handed to NumPy, which can only read host memory.

Pattern, on the failing line only: `t.numpy()` where `t` is not already copied with `.cpu()` (and no
`force=True`), and `np.array(t)` / `np.asarray(t)` / `np.asanyarray(t)` where `t` is plainly a tensor:
the result of a torch function, of a tensor method such as `.argmax()`/`.softmax()`, or a name bound
to one. The patch copies the tensor to host memory first: `t.numpy()` becomes `t.detach().cpu().numpy()`
(`.cpu()` alone after an existing `.detach()`), and `np.asarray(t)` becomes `np.asarray(t.detach().cpu())`,
so NumPy's own call and its arguments stay as they were.

Safe: for a tensor already on the CPU that does not require grad, `.detach()` and `.cpu()` return the same
data without copying, so the array is the same one as before, memory sharing included; for a tensor on
the GPU or one that requires grad, the original line could only raise. Arguments that might not be
tensors (containers, names whose origin the file does not show) are left alone, since `.detach()` would
fail on them.
"""

from __future__ import annotations

import libcst as cst

from fixer.patching.base import dotted, method_call
from fixer.patching.flow import Before, PlannedCodemod, keyword, literal, makes_module

_NUMPY_CONVERSIONS = ("array", "asarray", "asanyarray")
# methods whose result on a tensor is a tensor: enough to tell a tensor from other values on the failing line
_TENSOR_METHODS = frozenset(
    {
        "abs", "argmax", "argmin", "argsort", "bool", "ceil", "clamp", "clip", "clone", "contiguous", "cuda",
        "detach", "double", "exp", "flatten", "float", "floor", "half", "int", "log", "log_softmax", "long",
        "masked_fill", "matmul", "max", "mean", "min", "mul", "permute", "pow", "relu", "reshape", "round",
        "sigmoid", "softmax", "sqrt", "squeeze", "std", "sum", "t", "tanh", "to", "transpose", "type_as",
        "unsqueeze", "view", "view_as",
    }
)  # fmt: skip
_TORCH_PREFIXES = ("torch.", "F.")
_SAME_ARRAY = "on a CPU tensor .detach().cpu() returns the same data, and on a GPU one the line could only raise"


class InsertCpuBeforeNumpy(PlannedCodemod):
    id = "insert-cpu-before-numpy"
    summary = "copy the tensor to host memory (.detach().cpu()) before NumPy reads it"

    def plan(self, module: cst.Module) -> None:
        numpy = _numpy_names(module)
        for _line, calls in self.calls_on_target(module):
            found = False
            for call in calls:
                found = self._numpy_method(call) or found
                found = self._numpy_function(call, numpy) or found
            if found:
                return

    def _numpy_method(self, call: cst.Call) -> bool:
        """`t.numpy()` -> `t.detach().cpu().numpy()`."""
        if method_call(call, "numpy") is None or keyword(call, "force") is not None:
            return False
        assert isinstance(call.func, cst.Attribute)
        if _on_host(call.func.value):
            return False
        self.rewrite(call, _copy_receiver)
        self.judge("safe", _SAME_ARRAY)
        return True

    def _numpy_function(self, call: cst.Call, numpy: set[str]) -> bool:
        """`np.asarray(t)` -> `np.asarray(t.detach().cpu())` when `t` is plainly a tensor."""
        name = dotted(call.func)
        if name is None or not call.args or call.args[0].keyword is not None or call.args[0].star:
            return False
        head, _, function = name.rpartition(".")
        if head not in numpy or function not in _NUMPY_CONVERSIONS:
            return False
        value = call.args[0].value
        if _on_host(value) or not _tensor(value, self.before(call)):
            return False
        self.rewrite(call, _copy_first_argument)
        self.judge("safe", _SAME_ARRAY)
        return True


def _numpy_names(module: cst.Module) -> set[str]:
    """The names NumPy is imported under: `np` for `import numpy as np`, `numpy` for `import numpy`."""
    names: set[str] = set()
    for line in module.body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for small in line.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    if dotted(alias.name) == "numpy":
                        asname = alias.asname.name if alias.asname else None
                        names.add(asname.value if isinstance(asname, cst.Name) else "numpy")
    return names


def _on_host(value: cst.BaseExpression) -> bool:
    """Already copied to the CPU: `.cpu()` or `.to("cpu")` somewhere in its method chain."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        method = value.func.attr.value
        if method == "cpu" or (
            method == "to"
            and value.args
            and isinstance(value.args[0].value, cst.SimpleString)
            and value.args[0].value.evaluated_value == "cpu"
        ):
            return True
        value = value.func.value
    return False


def _tensor(value: cst.BaseExpression, before: Before, depth: int = 3) -> bool:
    """Plainly a tensor: made by a torch function or on a device, returned by a tensor method or by a model
    that was moved, or a name bound to one of those."""
    if depth == 0 or literal(value):
        return False
    if isinstance(value, cst.Name):
        bound = before.binding(value.value)
        return bound is not None and bound.value is not None and _tensor(bound.value, before, depth - 1)
    if isinstance(value, cst.Call) and not makes_module(value) and before.device_of(value) is not None:
        return True  # `x.to(device)`, `torch.randn(..., device=d)`, the output of a model that was moved
    if isinstance(value, cst.Call):
        name = dotted(value.func) or ""
        if name.startswith(_TORCH_PREFIXES):
            return True
        return isinstance(value.func, cst.Attribute) and value.func.attr.value in _TENSOR_METHODS
    return False


def _to_host(value: cst.BaseExpression) -> cst.Call:
    """`value.detach().cpu()`, or `value.cpu()` when value already ends in `.detach()`."""
    if method_call(value, "detach") is None:
        value = cst.Call(func=cst.Attribute(value=value, attr=cst.Name("detach")))
    return cst.Call(func=cst.Attribute(value=value, attr=cst.Name("cpu")))


def _copy_receiver(node: cst.CSTNode) -> cst.CSTNode:
    assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
    return node.with_changes(func=node.func.with_changes(value=_to_host(node.func.value)))


def _copy_first_argument(node: cst.CSTNode) -> cst.CSTNode:
    assert isinstance(node, cst.Call)
    first, *rest = node.args
    return node.with_changes(args=[first.with_changes(value=_to_host(first.value)), *rest])


CODEMOD = InsertCpuBeforeNumpy
