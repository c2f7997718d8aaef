"""model-not-moved: the batch was sent to a device, the model it is fed to never was.

Pattern: on the failing line the code calls a model (`model(x)`, `model.generate(...)`) that an
earlier statement built (`model = Net()`, `AutoModel.from_pretrained(...)`, `torch.load(...)`) and
nothing moved since, while an argument of that call is on a device in a way the file shows:
`model(x.to(device))`, `x = batch.to(device)`, `x = torch.randn(..., device=device)`. The patch inserts
`model.to(<that device>)` once the model is built and set up (after its last `model.load_state_dict(...)`
or `model.eval()`) and the device expression exists, before the failing statement.

Safety, per patch: `Module.to()` moves the weights in place and keeps every Parameter object, so the
model computes the same function where its inputs already are, and a model placed by `device_map=`
or `device=` is never touched. It is unsafe when something took the model's parameters before the
move (an optimizer, a copy of the state dict): what that holder made from them before, such as
optimizer state, stays on the CPU. Nothing changes when the file does not show where the model was made, when it
was moved (or dispatched with `device_map=`) already, or when no argument's device is visible.
"""

from __future__ import annotations

import libcst as cst

from fixer.patching.base import dotted, walk
from fixer.patching.flow import Before, Device, Event, PlannedCodemod, device_move, keyword, statement

_MODEL_METHODS = ("generate", "forward")
_PLACED = ("device", "device_map")


class MoveModelToDevice(PlannedCodemod):
    id = "move-model-to-device"
    summary = "move the model called on the failing line to the device its inputs are on"

    def fix_call(self, call: cst.Call) -> bool:
        callee = dotted(call.func)
        if callee is None:
            return False
        head, _, method = callee.rpartition(".")
        model = head if head and method in _MODEL_METHODS else callee
        before = self.before(call)
        if before.statement is None or before.moved(model) is not None:
            return False
        built = before.binding(model)
        if built is None or not _builds_model(built.value):
            return False
        device = _device_of_inputs(call, before)
        if device is None:
            return False
        events: list[Event] = [built, *before.calls_on(model, built.line)]
        for name in device.names:
            bound = before.binding(name)
            if bound is not None:
                events.append(bound)
        spot = before.spot_after(events)
        if spot is None:
            return False
        self.insert(spot, statement(cst.Expr(device.move(cst.parse_expression(model)))))
        holder = _takes_parameters(before, model, built.line)
        if holder is None:
            self.judge("safe", "Module.to moves the weights in place to where the inputs already are; same function")
        else:
            self.judge(
                "unsafe", f"`{holder}` took {model}'s parameters before the move; what it made from them stays put"
            )
        return True


def _builds_model(value: cst.BaseExpression | None) -> bool:
    """A call that makes the model on the CPU: not already moved, not placed by `device=`/`device_map=`."""
    if not isinstance(value, cst.Call) or device_move(value) is not None:
        return False
    current: cst.BaseExpression = value
    while isinstance(current, cst.Call):
        if keyword(current, *_PLACED) is not None:
            return False
        if not isinstance(current.func, cst.Attribute):
            break
        current = current.func.value
    return True


def _takes_parameters(before: Before, model: str, since: int) -> str | None:
    """The name bound, after the model was built, to something made from its parameters or state."""
    readers = {f"{model}.{method}" for method in ("parameters", "named_parameters", "state_dict")}
    for event in before.events:
        if event.kind != "bind" or event.line <= since or event.value is None:
            continue
        if any(isinstance(n, cst.Call) and dotted(n.func) in readers for n in walk(event.value)):
            return event.name
    return None


def _device_of_inputs(call: cst.Call, before: Before) -> Device | None:
    """The device one of the call's arguments is on, as the user wrote it."""
    for arg in call.args:
        device = before.device_of(arg.value)
        if device is not None:
            return device
    return None


CODEMOD = MoveModelToDevice
