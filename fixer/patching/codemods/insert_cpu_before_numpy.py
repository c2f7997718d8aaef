"""numpy-on-cuda-tensor: a tensor on the GPU handed to NumPy, which can only read host memory.

Patterns, on the failing lines: `t.numpy()` where `t` is not already copied with `.cpu()` (and no
`force=True`), and any NumPy function (`np.asarray(t)`, `np.equal(t, v)`) given an argument that is
plainly a tensor: the result of a torch function, of a tensor method such as `.argmax()`/`.softmax()`,
or a name bound to one. The patch copies the tensor to host memory first: `t.numpy()` becomes
`t.detach().cpu().numpy()` (`.cpu()` alone after an existing `.detach()`), and `np.asarray(t)` becomes
`np.asarray(t.detach().cpu())`, so NumPy's own call and its arguments stay as they were.

Safe: for a tensor already on the CPU that does not require grad, `.detach()` and `.cpu()` return the same
data without copying, so the array is the same one as before, memory sharing included; for a tensor on
the GPU or one that requires grad, the original line could only raise. Arguments that might not be
tensors (containers, names whose origin the file does not show) are left alone, since `.detach()` would
fail on them.

When the innermost failing line converts nothing itself, the conversion happened inside a function it
calls (a CPU-only library, or frames the paste cut off). If exactly one call on that line, other than
torch's own functions, tensor methods and models or layers (`self.conv(x)`, `model(x)`), is handed a
plain tensor, that argument gets `.cpu()`. Unsafe:
what the call returns is then on the CPU too, where the code after it may expect the GPU.
"""

from __future__ import annotations

import libcst as cst

from fixer.patching.base import dotted, method_call
from fixer.patching.flow import (
    TENSOR_METHODS,
    TORCH_PREFIXES,
    Before,
    PlannedCodemod,
    keyword,
    makes_module,
    plainly_tensor,
)

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
        if self.target.innermost:
            self._handed_to_a_call(module)

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
        """`np.asarray(t)` -> `np.asarray(t.detach().cpu())`, `np.equal(t, v)` -> `np.equal(t.detach().cpu(),
        v)`: each argument of a NumPy function that is plainly a tensor."""
        name = dotted(call.func)
        head = name.rpartition(".")[0] if name else None
        if head not in numpy:
            return False
        before = self.before(call)
        tensors = [
            n
            for n, arg in enumerate(call.args)
            if arg.keyword is None and not arg.star and not _on_host(arg.value) and plainly_tensor(arg.value, before)
        ]
        if not tensors:
            return False
        self.rewrite(call, lambda node: _copy_arguments(node, tensors))
        self.judge("safe", _SAME_ARRAY)
        return True

    def _handed_to_a_call(self, module: cst.Module) -> None:
        """The failing line converts nothing itself, so the conversion happened inside a function it calls
        (a CPU-only library's, or one whose frames the paste cut): the one call on the innermost line that
        is handed a tensor gets a host copy of it, `enhance(model, wave.unsqueeze(0))` ->
        `enhance(model, wave.unsqueeze(0).cpu())`."""
        innermost = self.target.lines[-1:]
        found = next((calls for line, calls in self.calls_on_target(module) if list(innermost) == [line]), [])
        handed = []
        for call in found:
            name = dotted(call.func) or ""
            if name.startswith((*TORCH_PREFIXES, "self.")) or (
                isinstance(call.func, cst.Attribute) and call.func.attr.value in TENSOR_METHODS
            ):
                continue  # torch's own functions, tensor methods and the module's own layers take GPU tensors
            before = self.before(call)
            if isinstance(call.func, cst.Name) and _a_module(call.func.value, before):
                continue  # `model(batch)`: a model runs where its weights are
            tensors = [
                n
                for n, arg in enumerate(call.args)
                if not arg.star and not _on_host(arg.value) and plainly_tensor(arg.value, before)
            ]
            if tensors:
                handed.append((call, tensors))
        if len(handed) != 1:
            return  # none, or several calls that could each be the one converting
        call, tensors = handed[0]
        self.rewrite(call, lambda node: _copy_arguments(node, tensors, detach=False))
        shown = dotted(call.func) or "the call"
        self.judge(
            "unsafe",
            f"`{shown}` now gets a copy in host memory: what it returns is on the CPU too, where the code after "
            "it may expect the GPU",
        )


def _a_module(name: str, before: Before) -> bool:
    """A name bound to a module: built by a layer constructor or `from_pretrained`, or moved like one."""
    bound = before.binding(name)
    return before.moved(name) is not None or (
        bound is not None and bound.value is not None and makes_module(bound.value)
    )


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


def _to_host(value: cst.BaseExpression) -> cst.Call:
    """`value.detach().cpu()`, or `value.cpu()` when value already ends in `.detach()`."""
    if method_call(value, "detach") is None:
        value = cst.Call(func=cst.Attribute(value=value, attr=cst.Name("detach")))
    return cst.Call(func=cst.Attribute(value=value, attr=cst.Name("cpu")))


def _copy_receiver(node: cst.CSTNode) -> cst.CSTNode:
    assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
    return node.with_changes(func=node.func.with_changes(value=_to_host(node.func.value)))


def _copy_arguments(node: cst.CSTNode, positions: list[int], *, detach: bool = True) -> cst.CSTNode:
    """The call with its arguments at `positions` copied to host memory (`.detach().cpu()`, or `.cpu()`)."""
    assert isinstance(node, cst.Call)
    args = list(node.args)
    for n in positions:
        value = args[n].value
        copied = _to_host(value) if detach else cst.Call(func=cst.Attribute(value=value, attr=cst.Name("cpu")))
        args[n] = args[n].with_changes(value=copied)
    return node.with_changes(args=args)


CODEMOD = InsertCpuBeforeNumpy
