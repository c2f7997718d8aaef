"""submodule-replaced-after-to: a module assigned onto a model after the model was moved.

`model.to(device)` moves what the model holds at that moment; `model.out_head = nn.Linear(...)`
afterwards creates the new head on the CPU. The fix moves the new module the same way the model was
moved, reusing the user's own device expression, so both end up together. Meaning is kept: the
model was meant to live on that device, and the new module is part of it.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from fixer.patching.base import Codemod, chain_to, dotted, method_call, module_constructor


class MoveToAfterModuleAssignment(Codemod):
    id = "move-to-after-module-assignment"
    summary = "move a module assigned after the model's .to()/.cuda() to the model's device"

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return updated_node.with_changes(body=self._fix_block(updated_node.body))

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        return updated_node.with_changes(body=self._fix_block(updated_node.body))

    def _fix_block(self, body: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
        moved: dict[str, cst.Call] = {}  # object name -> the call that moved it
        fixed: list[cst.BaseStatement] = []
        for statement in body:
            if isinstance(statement, cst.SimpleStatementLine):
                parts = []
                for small in statement.body:
                    attached = _attach_move(small, moved)
                    if attached is not small:
                        self.judge(
                            "safe", "the new layer moves exactly as its model was moved, to the device it serves"
                        )
                    small = attached
                    _record_move(small, moved)
                    parts.append(small)
                statement = statement.with_changes(body=parts)
            fixed.append(statement)
        return fixed


def _record_move(small: cst.BaseSmallStatement, moved: dict[str, cst.Call]) -> None:
    """`model.to(d)` / `model.cuda()` as a statement, or `model = model.to(d)` / `model = M().to(d)`."""
    if isinstance(small, cst.Expr):
        call = method_call(small.value, "to", "cuda")
        if call is not None and isinstance(call.func, cst.Attribute) and (name := dotted(call.func.value)):
            moved[name] = call
    elif isinstance(small, cst.Assign) and len(small.targets) == 1:
        name = dotted(small.targets[0].target)
        call = method_call(small.value, "to", "cuda")
        if name and call is not None:
            moved[name] = call


def _attach_move(small: cst.BaseSmallStatement, moved: dict[str, cst.Call]) -> cst.BaseSmallStatement:
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and module_constructor(small.value)):
        return small
    target = dotted(small.targets[0].target)
    owner = next((name for name in moved if target and target.startswith(name + ".")), None)
    if owner is None:
        return small
    return small.with_changes(value=chain_to(small.value, moved[owner]))


CODEMOD = MoveToAfterModuleAssignment
