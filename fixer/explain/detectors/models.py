"""Facts about the model a failing line calls: was it ever moved?"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from fixer.explain.detectors import detector, syntax
from fixer.explain.detectors.code import Code, Scope

# Values that build or load a model: a class (`Net(...)`), a factory named like one, a loader.
_MODEL_MAKER = re.compile(r"(?:[\w.]*\.)?(?:[A-Z]\w*|\w*(?:model|Model|net|Net)\w*|from_pretrained|load)")
# Values that already take care of placement, or are not models at all.
_PLACES_ITSELF = re.compile(
    r"device|cuda|prepare|Parallel|DDP|FSDP|fully_shard|wrap|compile|peft|jit|export|Loss\b|[Ll]oss\b"
)
_DEFAULT_DEVICE = frozenset({"set_default_device", "set_default_tensor_type"})


@detector(
    "model-never-moved",
    reads="your files",
    finds="the code moves data to a device, but the model the failing line calls is never moved",
)
def model_never_moved(code: Code) -> Iterator[str]:
    for scope in code.scopes:
        if not _moves_something(scope) or _sets_a_default_device(scope):
            continue
        moved = scope.moved_before
        for call in scope.failing_calls:
            model = syntax.callee(call)
            if model is None or model in moved or not (call.args or call.keywords):
                continue
            made = _made_as_model(scope, model)
            if made is not None:
                yield f"{scope.where(made)}: `{model}` is built here and never moved with .to()/.cuda()"


def _moves_something(scope: Scope) -> bool:
    """Some statement before the failing line places something on a device."""
    return any(syntax.placed(statement) for statement in scope.before)


def _sets_a_default_device(scope: Scope) -> bool:
    """`torch.set_default_device(...)` or `with torch.device(...)` in the code around the line: then a
    model built there is on the device without a move."""
    for node in (*scope.statements_around, *scope.calls_around):
        if isinstance(node, ast.Call) and (syntax.dotted(node.func) or "").rsplit(".", 1)[-1] in _DEFAULT_DEVICE:
            return True
        if isinstance(node, ast.With) and any(
            isinstance(item.context_expr, ast.Call) and syntax.dotted(item.context_expr.func) == "torch.device"
            for item in node.items
        ):
            return True
    return False


def _made_as_model(scope: Scope, name: str) -> ast.stmt | None:
    """The one statement that binds `name` before the failing line, when it builds or loads a model."""
    bound = [s for s in scope.before if name in syntax.assigned_names(s)]
    if len(bound) != 1:
        return None
    value = syntax.value_of(bound[0])
    if not isinstance(value, ast.Call):
        return None
    callee = syntax.dotted(value.func) or ""
    if not _MODEL_MAKER.fullmatch(callee) or _PLACES_ITSELF.search(ast.unparse(value)):
        return None
    return bound[0]


@detector(
    "failing-model-moved",
    reads="your files",
    finds="the model called on the failing line was moved with .to()/.cuda() before the call",
)
def failing_model_moved(code: Code) -> Iterator[str]:
    for scope in code.scopes:
        moved = scope.moved_before
        for call in scope.failing_calls:
            model = syntax.callee(call)
            if model in moved and (call.args or call.keywords):
                yield f"{scope.where(call)}: `{model}` was moved at line {moved[model]}"
