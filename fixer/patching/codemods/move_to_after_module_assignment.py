"""submodule-replaced-after-to: a module assigned onto a model after the model was moved.

`model.to(device)` moves what the model holds at that moment; `model.out_head = nn.Linear(...)`
afterwards creates the new head on the CPU. The fix moves the new module to where the model is, so
both end up together. Meaning is kept: the model was meant to live on that device, and the new module
is part of it.

The move may be written anywhere that runs before the assignment in the same function (or at the
top level): in the same block, then the new module is moved the same way, reusing the user's own
device expression; or in a branch (`if cuda: model.to("cuda") else: ...`), a loop, or a helper of
this file that moves the model it is given (`prepare(model)`), then the new module is moved to the
model's own device, `next(model.parameters()).device`, which is right whichever way the model went.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider

from fixer.patching.base import Codemod, Target, chain_to, dotted, method_call, module_constructor, walk

_SAME = "the new layer goes where its model already is, the device it serves"


@dataclass(frozen=True)
class _Move:
    owner: str  # the moved module's name, as written at the assignment (`model`, `self.net`)
    line: int
    call: cst.Call | None  # the `.to(...)`/`.cuda(...)` itself; None for a helper that moves it
    block: cst.CSTNode  # the block holding the move's statement


class MoveToAfterModuleAssignment(Codemod):
    id = "move-to-after-module-assignment"
    summary = "move a module assigned after the model's .to()/.cuda() to the model's device"
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self._moves: list[_Move] = []
        self._helpers: dict[str, int] = {}  # function of this file -> the index of the parameter it moves

    def visit_Module(self, node: cst.Module) -> None:
        for function in (n for n in walk(node) if isinstance(n, cst.FunctionDef)):
            params = [p.name.value for p in function.params.params]
            for statement in walk(function.body):
                moved = _moved_name(statement)
                if moved in params:
                    self._helpers[function.name.value] = params.index(moved)
        for statement in walk(node):
            owner = _moved_name(statement)
            call = _move_call(statement) if owner else None
            if owner is None and isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call):
                owner, call = self._helper_argument(statement.value), None
            if owner is not None:
                self._moves.append(_Move(owner, self.line_of(statement), call, self._block_of(statement)))

    def _helper_argument(self, call: cst.Call) -> str | None:
        """`prepare(model)` where `prepare` moves its parameter: the name passed in that place."""
        index = self._helpers.get(dotted(call.func) or "")
        if index is None or index >= len(call.args) or call.args[index].keyword is not None:
            return None
        return dotted(call.args[index].value)

    def _block_of(self, node: cst.CSTNode) -> cst.CSTNode:
        while not isinstance(node, (cst.IndentedBlock, cst.Module)):
            node = self.get_metadata(ParentNodeProvider, node)
        return node

    def _scope_of(self, node: cst.CSTNode) -> cst.CSTNode:
        while not isinstance(node, (cst.FunctionDef, cst.Module)):
            node = self.get_metadata(ParentNodeProvider, node)
        return node

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        if len(original_node.targets) != 1 or not module_constructor(original_node.value):
            return updated_node
        target = dotted(original_node.targets[0].target) or ""
        line, scope = self.line_of(original_node), self._scope_of(original_node)
        earlier = [
            m
            for m in self._moves
            if target.startswith(m.owner + ".") and m.line < line and self._scope_of(m.block) is scope
        ]
        if not earlier:
            return updated_node
        last = earlier[-1]
        self.judge("safe", _SAME)
        if last.call is not None and last.block is self._block_of(original_node):
            return updated_node.with_changes(value=chain_to(updated_node.value, last.call))
        device = cst.parse_expression(f"next({last.owner}.parameters()).device")
        moved = cst.Call(func=cst.Attribute(value=updated_node.value, attr=cst.Name("to")), args=[cst.Arg(device)])
        return updated_node.with_changes(value=moved)


def _move_call(statement: cst.CSTNode) -> cst.Call | None:
    """`model.to(d)` / `model.cuda()` as a statement, or the call in `model = model.to(d)`."""
    if isinstance(statement, cst.Expr):
        return method_call(statement.value, "to", "cuda")
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        return method_call(statement.value, "to", "cuda")
    return None


def _moved_name(statement: cst.CSTNode) -> str | None:
    """The module a statement moves: `model.to(d)`, `model.cuda()`, `model = model.to(d)`, `m = M().to(d)`."""
    call = _move_call(statement)
    if call is None or not isinstance(call.func, cst.Attribute):
        return None
    if isinstance(statement, cst.Assign):
        return dotted(statement.targets[0].target)
    return dotted(call.func.value)


CODEMOD = MoveToAfterModuleAssignment
