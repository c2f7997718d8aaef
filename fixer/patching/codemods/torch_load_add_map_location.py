"""torch-load-without-map-location and torch-load-missing-ordinal: `torch.load` restoring tensors to a
GPU that this process does not have.

Pattern: a `torch.load(f)` call (through any import alias) on a line the traceback passes through,
with neither a `map_location=` keyword nor a second positional argument (nor `*args`/`**kwargs` that
might carry one). Change: add `map_location=`, naming where the tensors should go:

- the user's own device when one is in scope before the call: a function parameter such as
  `device`, a variable such as `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`,
  or a device expression the code already passed to `.to(...)` (`args.device`);
- otherwise `"cpu"`, which exists on every machine.

A variable bound to a hard-coded accelerator literal (`device = "cuda"`, `torch.device("cuda:1")`) is
not reused: on the machine that raised this error that device is missing or has another number, and
mapping onto it would fail the same way. `"cpu"` is used instead.

Safety, per patch: `load_state_dict` copies loaded tensors into parameters wherever those live, so
when everything loaded goes only into `load_state_dict(...)` calls, nothing but the loading changes:
safe. Tensors the code uses straight from the checkpoint would now start on the mapped device rather
than the one they were saved from, which changes behaviour on the machine that has that GPU: unsafe.
"""

from __future__ import annotations

import re

import libcst as cst
from libcst.metadata import PositionProvider, QualifiedNameProvider

from fixer.patching.base import Codemod, Target, children, dotted, method_call, walk

_DEVICE_NAME = re.compile(r"^(?:dev|device|\w+_device|device_\w+)$")
_MAP_LOCATION_POSITION = 1  # torch.load(f, map_location=None, pickle_module=None, *, ...)


class TorchLoadAddMapLocation(Codemod):
    id = "torch-load-add-map-location"
    summary = 'pass map_location= to torch.load (the script\'s own device in scope, else "cpu")'
    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider)

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        # One frame per function being visited (the module first): device expressions bound so far.
        self._scopes: list[dict[str, cst.BaseExpression | None]] = [{}]

    # -- what is in scope, in source order ---------------------------------------------------------

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        frame: dict[str, cst.BaseExpression | None] = {}
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if _DEVICE_NAME.match(param.name.value):
                frame[param.name.value] = None  # chosen by the caller: reusable
        self._scopes.append(frame)

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self._scopes.pop()
        return updated_node

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._scopes.append({})  # a class body's names are not visible inside its methods

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        self._scopes.pop()
        return updated_node

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._scopes.append({})

    def leave_Lambda(self, original_node: cst.Lambda, updated_node: cst.Lambda) -> cst.Lambda:
        self._scopes.pop()
        return updated_node

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        for target in original_node.targets:
            self._bind(target.target, original_node.value)
        return updated_node

    def leave_AnnAssign(self, original_node: cst.AnnAssign, updated_node: cst.AnnAssign) -> cst.AnnAssign:
        if original_node.value is not None:
            self._bind(original_node.target, original_node.value)
        return updated_node

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name) and _DEVICE_NAME.match(target.value):
            frame = self._scopes[-1]
            frame.pop(target.value, None)  # keep source order: the latest binding last
            frame[target.value] = value

    def visit_Call(self, node: cst.Call) -> None:
        """`model.to(args.device)`: a device expression the code already uses."""
        move = method_call(node, "to", "cuda")
        if move is None or len(move.args) != 1 or move.args[0].keyword or move.args[0].star:
            return
        name = dotted(move.args[0].value)
        if name and "." in name and _DEVICE_NAME.match(name.rsplit(".", 1)[-1]):
            frame = self._scopes[-1]
            frame.pop(name, None)
            frame[name] = None

    # -- the change --------------------------------------------------------------------------------

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if not self.spans_target(original_node) or not self._is_torch_load(original_node):
            return updated_node
        args = updated_node.args
        if any(arg.star for arg in args) or any(arg.keyword and arg.keyword.value == "map_location" for arg in args):
            return updated_node
        positional = [arg for arg in args if arg.keyword is None]
        if len(positional) != _MAP_LOCATION_POSITION:
            return updated_node
        location = self._location()
        if self._only_restored(original_node):
            self.judge("safe", "what is loaded only goes into load_state_dict, which copies it where the model is")
        else:
            where = cst.Module([]).code_for_node(location)
            self.judge("unsafe", f"tensors used straight from the checkpoint now start on {where}")
        return updated_node.with_changes(args=_append_keyword(updated_node, "map_location", location))

    def visit_Module(self, node: cst.Module) -> None:
        self._module = node

    def _only_restored(self, load: cst.Call) -> bool:
        """The load's result reaches nothing but `.load_state_dict(...)` arguments (whole or indexed)."""
        parents = {id(child): parent for parent in walk(self._module) for child in children(parent)}
        node: cst.CSTNode = load
        while (parent := parents.get(id(node))) is not None and isinstance(parent, cst.Arg | cst.Call):
            if isinstance(parent, cst.Call) and method_call(parent, "load_state_dict") is parent:
                return True
            node = parent
        assign = parents.get(id(load))
        if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1):
            return False
        target = assign.targets[0].target
        if not isinstance(target, cst.Name):
            return False
        uses = [n for n in walk(self._module) if isinstance(n, cst.Name) and n.value == target.value]
        return all(n is target or _restores(n, parents) for n in uses)

    def _is_torch_load(self, call: cst.Call) -> bool:
        names = self.get_metadata(QualifiedNameProvider, call.func, set())
        return any(q.name == "torch.load" for q in names)

    def _location(self) -> cst.BaseExpression:
        """The innermost, latest device in scope that is not a hard-coded accelerator, else "cpu"."""
        frames = [self._scopes[-1], self._scopes[0]] if len(self._scopes) > 1 else [self._scopes[0]]
        for frame in frames:
            for name, value in reversed(frame.items()):
                if value is None or not self._hard_coded_accelerator(value):
                    return cst.parse_expression(name)
        return cst.SimpleString('"cpu"')

    def _hard_coded_accelerator(self, value: cst.BaseExpression) -> bool:
        """`"cuda"`, `"cuda:1"`, `torch.device("cuda", 1)`: a literal device other than the CPU."""
        if isinstance(value, cst.Call) and value.args:
            names = self.get_metadata(QualifiedNameProvider, value.func, set())
            if any(q.name == "torch.device" for q in names):
                value = value.args[0].value
        if isinstance(value, cst.SimpleString):
            text = value.evaluated_value
            return isinstance(text, str) and not text.startswith("cpu")
        return False


def _append_keyword(call: cst.Call, keyword: str, value: cst.BaseExpression) -> list[cst.Arg]:
    """The call's arguments plus `keyword=value`, keeping a multi-line call multi-line."""
    args = list(call.args)
    new = cst.Arg(
        keyword=cst.Name(keyword),
        value=value,
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    last = args[-1]
    if isinstance(last.comma, cst.Comma):  # a trailing comma: one argument per line, or `f(x, )`
        args[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=_between_arguments(call)))
        new = new.with_changes(comma=last.comma)
    return [*args, new]


def _between_arguments(call: cst.Call) -> cst.BaseParenthesizableWhitespace:
    """The whitespace the call puts between two arguments: a line break and indent, or a space."""
    for arg in call.args[:-1]:
        if isinstance(arg.comma, cst.Comma):
            return arg.comma.whitespace_after
    opening = call.whitespace_before_args
    if isinstance(opening, cst.ParenthesizedWhitespace):  # `f(  # comment` + newline: drop the comment
        return opening.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=())
    return cst.SimpleWhitespace(" ")


def _restores(name: cst.Name, parents: dict[int, cst.CSTNode]) -> bool:
    """`model.load_state_dict(ckpt)` or `...load_state_dict(ckpt["model"])`: the name read only to restore."""
    node: cst.CSTNode = name
    while (parent := parents.get(id(node))) is not None and isinstance(
        parent, cst.Subscript | cst.SubscriptElement | cst.Index | cst.Arg
    ):
        node = parent
    return isinstance(parent, cst.Call) and method_call(parent, "load_state_dict") is parent and node in parent.args


CODEMOD = TorchLoadAddMapLocation
