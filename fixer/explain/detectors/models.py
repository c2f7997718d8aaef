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
    """The model is a local name built in the function, or passed down to it, or a plain object's
    attribute (`self.audio2mel.get_features(chunk)`); in an installed library's failing line too, whose
    author made the same mistake the user would."""
    for scope in (*code.scopes, *code.library):
        for call in scope.failing_calls:
            found = _attribute_left_behind(scope, call)
            if found is not None:
                yield found
    for index, scope in enumerate(code.scopes):
        for call in scope.failing_calls:
            model = syntax.callee(call)
            if model is None or not (call.args or call.keywords):
                continue
            if _left_behind(scope, model):
                made = _made_as_model(scope, model)
                if made is not None:
                    yield f"{scope.where(made)}: `{model}` is built here and never moved with .to()/.cuda()"
                    continue
            if not _inside_a_loss(code):
                yield from _passed_down_unmoved(code.scopes, index, model, scope.where(call))


def _attribute_left_behind(scope: Scope, call: ast.Call) -> str | None:
    """`self.x.method(data)` or `self.x(data)` in a method of a plain class, where `data` was moved to a
    device before the call, and `self.x` was built from a constructor in the class and is moved nowhere
    in it. An nn.Module's attribute is left out: it moves whenever its owner does."""
    cls = scope.cls
    name = syntax.dotted(call.func) or ""
    owner = name if name.count(".") == 1 else name.rsplit(".", 1)[0]
    if cls is None or not owner.startswith("self.") or owner.count(".") != 1 or syntax.may_be_module(cls, scope.module):
        return None
    arguments = [syntax.dotted(a) for a in (*call.args, *(k.value for k in call.keywords))]
    if not any(a in scope.moved_before for a in arguments if a) or _sets_a_default_device(scope):
        return None
    built = [s for s in syntax.all_statements(cls) if owner in syntax.assigned_names(s)]
    if len(built) != 1 or not _builds_a_model(built[0]) or _moved_in(cls, owner):
        return None
    called = scope.where(call)
    return f"{scope.where(built[0])}: `{owner}` is built here, never moved, and called on moved data at {called}"


def _builds_a_model(statement: ast.stmt) -> bool:
    value = syntax.value_of(statement)
    return (
        isinstance(value, ast.Call)
        and bool(_MODEL_MAKER.fullmatch(syntax.dotted(value.func) or ""))
        and not _PLACES_ITSELF.search(ast.unparse(value))
    )


def _moved_in(node: ast.AST, name: str) -> bool:
    """`name.to(d)`, `name.cuda()` or `name = ....to(d)` anywhere under `node`, or `name` handed to a
    call that may place it (`accelerator.prepare(name)`)."""
    for statement in syntax.all_statements(node):
        value = syntax.value_of(statement)
        if name in syntax.assigned_names(statement) and value is not None and syntax.is_move(value):
            return True
    return any(
        syntax.moved(call) == name
        or (any(syntax.dotted(a) == name for a in call.args) and _PLACES_ITSELF.search(syntax.dotted(call.func) or ""))
        for call in syntax.calls(node)
    )


def _inside_a_loss(code: Code) -> bool:
    """The error is raised inside torch's loss modules: what the failing line calls is a loss, not a model."""
    return any(
        line.library and line.library.startswith("torch") and line.where.startswith("loss.py:") for line in code.lines
    )


def _passed_down_unmoved(scopes: tuple[Scope, ...], index: int, name: str, called_at: str) -> Iterator[str]:
    """The model the failing line calls is a parameter: follow it out through the frames that passed
    it (`soft_targets(teacher, images)` ← `distill(student, teacher, ...)`) to where it was built, and
    report it when it was never moved there while other things were."""
    while index + 1 < len(scopes):
        function = scopes[index].function
        argument = _passed_for(scopes[index + 1], function, name) if function is not None else None
        if argument is None:
            return
        name, index = argument, index + 1
        outer = scopes[index]
        if name in outer.maybe_moved_before:
            return
        if any(name in syntax.assigned_names(s) for s in outer.before):  # built here, not passed in
            made = _made_as_model(outer, name, named_like_one=False)
            if made is not None and _left_behind(outer, name):
                yield f"{outer.where(made)}: `{name}` is built here, never moved, and called at {called_at}"
            return


def _passed_for(caller: Scope, function: syntax.Function, parameter: str) -> str | None:
    """The name the caller's failing line passes for `parameter` of `function`, if it calls it."""
    params = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
    if parameter not in params and parameter not in {a.arg for a in function.args.kwonlyargs}:
        return None
    for call in caller.failing_calls:
        callee = syntax.dotted(call.func) or ""
        if callee.rsplit(".", 1)[-1] != function.name:
            continue
        offset = 1 if "." in callee and params[:1] == ["self"] else 0
        for keyword in call.keywords:
            if keyword.arg == parameter:
                return syntax.dotted(keyword.value)
        position = params.index(parameter) - offset if parameter in params else -1
        if 0 <= position < len(call.args):
            return syntax.dotted(call.args[position])
    return None


def _left_behind(scope: Scope, name: str) -> bool:
    """The code around the line moves something to a device, but not `name`, and sets no default device."""
    return _moves_something(scope) and not _sets_a_default_device(scope) and name not in scope.maybe_moved_before


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


def _made_as_model(scope: Scope, name: str, *, named_like_one: bool = True) -> ast.stmt | None:
    """The one statement that binds `name` before the failing line, when it builds or loads a model.
    `named_like_one=False` takes any call that does not place what it makes: a model the frames show
    being called needs no name to be one."""
    bound = [s for s in scope.before if name in syntax.assigned_names(s)]
    if len(bound) != 1:
        return None
    value = syntax.value_of(bound[0])
    if not isinstance(value, ast.Call):
        return None
    callee = syntax.dotted(value.func) or ""
    if (named_like_one and not _MODEL_MAKER.fullmatch(callee)) or _PLACES_ITSELF.search(ast.unparse(value)):
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
