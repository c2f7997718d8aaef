"""The traceback probes: read the user's failing functions (never run them) for what the line hides.

A failing `x + mask` does not say that `mask = torch.zeros(n)` two lines up was made on the CPU, nor
that `nn.Linear` was built inside `forward`. The functions around the user's frames do, when the
files are on this machine. The stdlib `ast` reads them, so this costs no torch import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from fixer.diagnose.findings import Finding
from fixer.explain.detectors import Code, syntax
from fixer.explain.parse import Traceback

_HIDDEN_NAMES = ("h0", "c0", "hidden", "hx", "state")


def factory_findings(tb: Traceback) -> list[Finding]:
    """Tensor factories without `device=` (or with a bare "cuda") in the user's failing functions."""
    scopes = list(_failing_functions(tb))
    probe = "user-frame-tensor-factories"
    if not scopes:
        return [Finding(probe, "could-not-check", "none of the traceback's own files are on this machine")]
    bare, default_cuda, hidden = [], [], []
    for where, node, names in scopes:
        for call, target in _calls(node):
            name = syntax.factory(call, names)
            if name is not None and not syntax.moved_where_made(call, node):
                device = syntax.keyword(call, "device")
                if device is None:
                    bare.append(f"{where}:{call.lineno} torch.{name}(...)")
                    if target and any(h in target.lower() for h in _HIDDEN_NAMES):
                        hidden.append(f"{where}:{call.lineno} {target}")
                elif isinstance(device, ast.Constant) and device.value == "cuda":
                    default_cuda.append(f"{where}:{call.lineno} torch.{name}(..., device='cuda')")
            elif isinstance(call.func, ast.Attribute) and call.func.attr == "cuda" and not call.args:
                default_cuda.append(f"{where}:{call.lineno} .cuda()")
    findings = []
    if bare:
        why = f"tensors made without device=, so on the CPU: {'; '.join(bare[:4])}"
        findings.append(Finding(probe, "confirms", why, ("tensor-created-without-device",), {"calls": bare}))
    else:
        why = "every tensor your failing functions create is given a device"
        findings.append(Finding(probe, "rules-out", why, ("tensor-created-without-device",)))
    if hidden:
        why = f"an RNN state made on the CPU: {'; '.join(hidden[:4])}"
        findings.append(Finding(probe, "confirms", why, ("rnn-hidden-state-on-cpu",), {"calls": hidden}))
    if default_cuda:
        why = f"'cuda' without an index means the current GPU, not your model's: {'; '.join(default_cuda[:4])}"
        findings.append(Finding(probe, "confirms", why, ("default-cuda-vs-cuda-n",), {"calls": default_cuda}))
    return findings


def constructor_findings(tb: Traceback) -> list[Finding]:
    """Layers built inside `forward`: made on the CPU at every call, after `model.to(device)` ran."""
    probe = "user-frame-module-constructors"
    forwards = [(where, node, names) for where, node, names in _failing_functions(tb) if node.name == "forward"]
    if not forwards:
        return [Finding(probe, "could-not-check", "no forward() of yours in the traceback is on this machine")]
    built = [
        f"{where}:{call.lineno} {ast.unparse(call.func)}(...)"
        for where, node, names in forwards
        for call, _target in _calls(node)
        if syntax.layer(call, names)
    ]
    entry = ("module-created-in-forward",)
    if built:
        return [Finding(probe, "confirms", f"layers built inside forward(): {'; '.join(built[:4])}", entry)]
    return [Finding(probe, "rules-out", "your failing forward() builds no layer", entry)]


def _failing_functions(tb: Traceback) -> Iterator[tuple[str, syntax.Function, dict[str, str]]]:
    """The innermost function around each user line, once, with what the module's names stand for."""
    seen: set[int] = set()
    for scope in Code.of(tb.all_frames).scopes:
        function = scope.function
        if function is not None and id(function) not in seen:
            seen.add(id(function))
            yield scope.file, function, scope.names


def _calls(scope: syntax.Function) -> Iterator[tuple[ast.Call, str | None]]:
    """Every call in the function, with the name it is assigned to, if any."""
    targets: dict[int, str] = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            targets[id(node.value)] = node.targets[0].id
    for node in ast.walk(scope):
        if isinstance(node, ast.Call):
            yield node, targets.get(id(node))
