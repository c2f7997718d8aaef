"""loss-weight-on-cpu: a loss built with a tensor of its own (class weights) that stayed on the CPU.

Pattern: on the failing line the code calls a loss object (`loss = criterion(logits, labels)`) that an
earlier statement built with a tensor of its own, `nn.CrossEntropyLoss(weight=w)`,
`nn.BCEWithLogitsLoss(pos_weight=p)` or a class-weight tensor passed positionally, and nothing moved;
at the same time an argument of the call is on a device in a way the file shows (moved with
`.to(device)`, made with `device=`, or the output of a model that was moved). The loss stores that
tensor as a buffer, so the patch moves the loss object: `.to(<that device>)` is appended to its
construction when the device expression already exists there, otherwise `criterion.to(<device>)` is
inserted once both exist, before the failing statement.

A loss the failing function receives as a parameter (`def evaluate(model, criterion, ...)`), built by
a caller it cannot see, is moved in place with `criterion.to(<device of its inputs>)` right before the
failing statement.

Safe: only where the loss's own tensor lives changes, to the device the failing call already feeds it
from, so the loss computes the same values; a loss with CPU weights cannot be applied to those inputs
at all. Nothing changes when the loss holds no tensor, when it (or its weight) was moved or created on
a device already, or when no argument's device is visible.
"""

from __future__ import annotations

import libcst as cst

from fixer.patching.base import dotted, module_constructor
from fixer.patching.flow import Before, Device, PlannedCodemod, device_move, keyword, literal, statement

_WEIGHTS = ("weight", "pos_weight")
# losses whose first positional parameter is the class-weight tensor
_WEIGHT_FIRST = frozenset(
    {"CrossEntropyLoss", "NLLLoss", "NLLLoss2d", "BCELoss", "BCEWithLogitsLoss", "MultiLabelSoftMarginLoss"}
)


_SAME_LOSS = "only the loss's own weights move, to the device its inputs are already on: the same values"


class MoveLossToDevice(PlannedCodemod):
    id = "move-loss-to-device"
    summary = "move a loss that holds class weights (weight=/pos_weight=) to the device of its inputs"

    def fix_call(self, call: cst.Call) -> bool:
        loss = dotted(call.func)
        if loss is None:
            return False
        before = self.before(call)
        if before.statement is not None and self.received(call, before, loss) is not None:
            return self._move_received(call, before, loss)
        built = before.binding(loss)
        if before.statement is None or built is None or before.moved(loss) is not None:
            return False
        weight = _own_tensor(built.value)
        if weight is None or before.device_of(weight) is not None:
            return False
        device = next((found for arg in call.args if (found := before.device_of(arg.value)) is not None), None)
        if device is None:
            return False
        names = [before.binding(name) for name in device.names]
        if isinstance(built.small, cst.Assign) and all(bound is None or bound.line < built.line for bound in names):
            assert isinstance(built.value, cst.Call)
            self.rewrite(built.value, lambda made: _moved(made, device))
            self.judge("safe", _SAME_LOSS)
            return True
        spot = before.spot_after([built, *(bound for bound in names if bound is not None)])
        if spot is None:
            return False
        self.insert(spot, statement(cst.Expr(device.move(cst.parse_expression(loss)))))
        self.judge("safe", _SAME_LOSS)
        return True

    def _move_received(self, call: cst.Call, before: Before, loss: str) -> bool:
        """A loss the function receives (`def evaluate(model, criterion, ...)`), built by its caller:
        moved in place where its inputs are, right before the failing statement. For a loss without
        tensors of its own `.to()` moves nothing."""
        device = next((found for arg in call.args if (found := before.device_of(arg.value)) is not None), None)
        if device is None or before.statement is None:
            return False
        self.insert(("before", before.statement), statement(cst.Expr(device.move(cst.parse_expression(loss)))))
        self.judge("safe", _SAME_LOSS)
        return True


def _own_tensor(value: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """The tensor a loss constructor call stores (`weight=`, `pos_weight=`, or a leading class-weight argument)."""
    if not isinstance(value, cst.Call) or not module_constructor(value) or device_move(value) is not None:
        return None
    given = keyword(value, *_WEIGHTS)
    if given is not None:
        return None if literal(given.value) else given.value
    name = dotted(value.func) or ""
    first = value.args[0] if value.args else None
    if name.rsplit(".", 1)[-1] in _WEIGHT_FIRST and first is not None and first.keyword is None and not first.star:
        return None if literal(first.value) else first.value
    return None


def _moved(made: cst.CSTNode, device: Device) -> cst.CSTNode:
    assert isinstance(made, cst.BaseExpression)
    return device.move(made)


CODEMOD = MoveLossToDevice
