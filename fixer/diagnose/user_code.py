"""The traceback probes: read the user's failing functions (never run them) for what the line hides.

A failing `x + mask` does not say that `mask = torch.zeros(n)` two lines up was made on the CPU, nor
that `nn.Linear` was built inside `forward`. The functions around the user's frames do, when the
files are on this machine. The stdlib `ast` reads them, so this costs no torch import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from fixer.diagnose.findings import Finding
from fixer.parse import Traceback
from fixer.patching.targets import user_files
from fixer.source import parse_source

# Factories that put a new tensor on the default device (the CPU) unless told otherwise; `*_like`
# ones follow their argument, so they are not here.
_FACTORIES = frozenset(
    {"zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange", "linspace", "logspace",
     "eye", "tensor", "as_tensor", "from_numpy", "Tensor", "FloatTensor", "LongTensor", "BoolTensor"}
)  # fmt: skip
_MOVES = frozenset({"to", "cuda", "type_as", "mps", "xpu"})
_HIDDEN_NAMES = ("h0", "c0", "hidden", "hx", "state")


def factory_findings(tb: Traceback) -> list[Finding]:
    """Tensor factories without `device=` (or with a bare "cuda") in the user's failing functions."""
    scopes = list(_failing_scopes(tb))
    probe = "user-frame-tensor-factories"
    if not scopes:
        return [Finding(probe, "could-not-check", "none of the traceback's own files are on this machine")]
    bare, default_cuda, hidden = [], [], []
    for where, node, aliases in scopes:
        for call, target in _calls(node):
            name = _torch_attr(call.func, aliases)
            if name in _FACTORIES and not _moved(call, node):
                device = next((k.value for k in call.keywords if k.arg == "device"), None)
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
    forwards = [(where, node, aliases) for where, node, aliases in _failing_scopes(tb) if node.name == "forward"]
    if not forwards:
        return [Finding(probe, "could-not-check", "no forward() of yours in the traceback is on this machine")]
    built = [
        f"{where}:{call.lineno} {layer}(...)"
        for where, node, aliases in forwards
        for call, _target in _calls(node)
        if (layer := _layer(call.func, aliases))
    ]
    entry = ("module-created-in-forward",)
    if built:
        return [Finding(probe, "confirms", f"layers built inside forward(): {'; '.join(built[:4])}", entry)]
    return [Finding(probe, "rules-out", "your failing forward() builds no layer", entry)]


_Scope = ast.FunctionDef | ast.AsyncFunctionDef


def _failing_scopes(tb: Traceback) -> Iterator[tuple[str, _Scope, dict[str, str]]]:
    """The innermost function around each user line, with the module's names for torch and torch.nn."""
    for path, lines in user_files(tb).items():
        parsed = parse_source(str(path))
        if parsed is None:
            continue
        tree = parsed[0]
        aliases = _aliases(tree)
        seen: set[int] = set()
        for line in lines:
            around = [
                node
                for node in ast.walk(tree)
                if isinstance(node, _Scope) and node.lineno <= line <= (node.end_lineno or node.lineno)
            ]
            if around:
                innermost = max(around, key=lambda node: node.lineno)
                if id(innermost) not in seen:
                    seen.add(id(innermost))
                    yield path.name, innermost, aliases


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> what it stands for: `torch`, `torch.nn`, or a layer class imported from torch.nn."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in ("torch", "torch.nn"):
                    names[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module in ("torch", "torch.nn"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                names[alias.asname or alias.name] = "torch.nn" if full == "torch.nn" else full
    return names


def _calls(scope: _Scope) -> Iterator[tuple[ast.Call, str | None]]:
    """Every call in the function, with the name it is assigned to, if any."""
    targets: dict[int, str] = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            targets[id(node.value)] = node.targets[0].id
    for node in ast.walk(scope):
        if isinstance(node, ast.Call):
            yield node, targets.get(id(node))


def _torch_attr(func: ast.expr, aliases: dict[str, str]) -> str | None:
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and aliases.get(func.value.id) == "torch":
        return func.attr
    if isinstance(func, ast.Name) and aliases.get(func.id, "").startswith("torch."):
        return aliases[func.id].removeprefix("torch.")
    return None


def _layer(func: ast.expr, aliases: dict[str, str]) -> str | None:
    """`nn.Linear`, `torch.nn.Linear` or a `Linear` imported from torch.nn: a layer class."""
    if isinstance(func, ast.Attribute) and func.attr[:1].isupper():
        owner = func.value
        if isinstance(owner, ast.Name) and aliases.get(owner.id) == "torch.nn":
            return f"{owner.id}.{func.attr}"
        if isinstance(owner, ast.Attribute) and owner.attr == "nn" and isinstance(owner.value, ast.Name):
            return f"torch.nn.{func.attr}" if aliases.get(owner.value.id) == "torch" else None
    if isinstance(func, ast.Name) and aliases.get(func.id, "").startswith("torch.nn.") and func.id[:1].isupper():
        return func.id
    return None


def _moved(call: ast.Call, scope: _Scope) -> bool:
    """`torch.zeros(n).to(x.device)`: made on the CPU, then moved on the spot."""
    return any(
        isinstance(node, ast.Attribute) and node.value is call and node.attr in _MOVES for node in ast.walk(scope)
    )
