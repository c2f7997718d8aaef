"""cuda-requested-without-gpu and torch-not-compiled-with-cuda: code that asks for CUDA unconditionally.

A script written on a GPU machine calls `.cuda()`, `.to("cuda")` and `torch.cuda.set_device(...)` as if a
GPU were always there; on a laptop, a CPU build or a container started without GPUs, the first of them
raises. The patch lets the machine decide, once: it binds
`device = torch.device("cuda" if torch.cuda.is_available() else "cpu")` after the file's imports (or
reuses a module-level `device` the file already has), turns every argument-less `.cuda()` and every
`.to("cuda")` of the file into `.to(device)` (an explicit `.cuda(1)` only on the failing line), and runs
a `torch.cuda.set_device(...)` statement only `if torch.cuda.is_available()`. Functions that bind a
`device` of their own are left alone, since the name would mean theirs there.

Only when the failing line is one of these requests: a line that fails for another reason (a CUDA
checkpoint loaded without `map_location`, a library's own `.cuda()`) is another entry's fix.

Unsafe: on a machine without a usable GPU the program now runs on the CPU, far slower, and code that
only CUDA has (custom kernels, `torch.cuda.*` memory calls, a GPU count) still fails there; an explicit
GPU number on the failing line is dropped for the first visible GPU.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from fixer.patching.base import dotted, walk
from fixer.patching.flow import PlannedCodemod, Spot

_CUDA_STRINGS = frozenset({"cuda", "cuda:0"})
_WHY = (
    "where no GPU is usable the program now runs on the CPU, far slower; code only CUDA has (custom kernels, "
    "torch.cuda memory calls) still needs one, and a GPU number on the failing line becomes the first GPU"
)


class ChooseDeviceAtRunTime(PlannedCodemod):
    id = "choose-device-at-run-time"
    summary = "let the machine choose the device once (CUDA if available, else the CPU) and use it for every .cuda()"
    innermost_only = True

    def plan(self, module: cst.Module) -> None:
        if not self.target.lines or not self.target.innermost:
            return
        torch = _torch_imported_as(module)
        spot = _after_imports(module)
        if torch is None or spot is None:
            return  # the file cannot name torch.device and torch.cuda at its top without an import added
        failing = self.target.lines[-1]
        nodes = list(walk(module))
        own = {id(node) for node in nodes if self._on(node, failing)}
        requests = [node for node in nodes if isinstance(node, cst.Call) and self._request(node, own)]
        bodies = [module.body, *(node.body for node in nodes if isinstance(node, cst.IndentedBlock))]
        guards = [line for body in bodies for line in body if self._set_device(line, torch)]
        if not any(id(n) in own for n in (*requests, *guards)):
            return  # the failing line asks for CUDA in no way this rewrites
        shadowed = {id(n) for function in _functions_binding_device(module) for n in walk(function)}
        device = cst.Name("device")
        moved = [call for call in requests if id(call) not in shadowed]
        if moved and not _module_binds(module, "device"):
            chosen = cst.parse_statement(f'device = {torch}.device("cuda" if {torch}.cuda.is_available() else "cpu")\n')
            self.insert(spot, chosen.with_changes(leading_lines=[cst.EmptyLine()]))
        for call in moved:
            self.rewrite(call, lambda node: _to_device(node, device))
        for guarded in guards:
            self.rewrite(guarded, lambda node: _if_available(node, torch))
        self.judge("unsafe", _WHY)

    def _on(self, node: cst.CSTNode, line: int) -> bool:
        if not isinstance(node, (cst.Call, cst.SimpleStatementLine)):
            return False
        span = self.get_metadata(PositionProvider, node)
        return span.start.line <= line <= span.end.line

    @staticmethod
    def _request(call: cst.Call, own: set[int]) -> bool:
        """`x.cuda()`, `x.to("cuda")`; `x.cuda(1)` only on the failing line."""
        if not isinstance(call.func, cst.Attribute):
            return False
        method = call.func.attr.value
        if method == "cuda":
            return not call.args or id(call) in own
        if method == "to" and len(call.args) == 1 and call.args[0].keyword is None:
            value = call.args[0].value
            return isinstance(value, cst.SimpleString) and value.evaluated_value in _CUDA_STRINGS
        return False

    @staticmethod
    def _set_device(node: cst.CSTNode, torch: str) -> bool:
        """A statement that is only `torch.cuda.set_device(...)`."""
        if not isinstance(node, cst.SimpleStatementLine) or len(node.body) != 1:
            return False
        expr = node.body[0]
        return (
            isinstance(expr, cst.Expr)
            and isinstance(expr.value, cst.Call)
            and dotted(expr.value.func) == f"{torch}.cuda.set_device"
        )


def _to_device(node: cst.CSTNode, device: cst.Name) -> cst.CSTNode:
    assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
    return node.with_changes(func=node.func.with_changes(attr=cst.Name("to")), args=[cst.Arg(device)])


def _if_available(node: cst.CSTNode, torch: str) -> cst.CSTNode:
    assert isinstance(node, cst.SimpleStatementLine)
    test = cst.parse_expression(f"{torch}.cuda.is_available()")
    body = cst.IndentedBlock(body=[node.with_changes(leading_lines=())])
    return cst.If(test=test, body=body, leading_lines=node.leading_lines)


def _functions_binding_device(module: cst.Module) -> list[cst.FunctionDef]:
    """Functions with a `device` of their own: a parameter or an assignment in their body."""
    found = []
    for node in walk(module):
        if not isinstance(node, cst.FunctionDef):
            continue
        params = node.params
        names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
        assigned = any(
            isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Name) and n.target.value == "device"
            for n in walk(node.body)
        )
        if "device" in names or assigned:
            found.append(node)
    return found


def _module_binds(module: cst.Module, name: str) -> bool:
    for line in module.body:
        if isinstance(line, cst.SimpleStatementLine):
            for small in line.body:
                if isinstance(small, cst.Assign) and any(
                    isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets
                ):
                    return True
    return False


def _torch_imported_as(module: cst.Module) -> str | None:
    """The name a top-level `import torch` (`import torch as th`, `import torch.nn`) binds, if any."""
    for line in module.body:
        for small in line.body if isinstance(line, cst.SimpleStatementLine) else ():
            if not isinstance(small, cst.Import):
                continue
            for alias in small.names:
                name = dotted(alias.name) or ""
                if name == "torch" and alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    return alias.asname.name.value
                if name == "torch" or (name.startswith("torch.") and alias.asname is None):
                    return "torch"
    return None


def _after_imports(module: cst.Module) -> Spot | None:
    """Right after the last top-level import, where every later line can read the new name."""
    last = None
    for line in module.body:
        if isinstance(line, cst.SimpleStatementLine) and any(
            isinstance(s, (cst.Import, cst.ImportFrom)) for s in line.body
        ):
            last = line
    return ("after", last) if last is not None else None


CODEMOD = ChooseDeviceAtRunTime
