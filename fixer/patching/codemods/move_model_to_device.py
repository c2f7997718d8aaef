"""model-not-moved: the batch was sent to a device, the model it is fed to never was.

Pattern: on the failing line the code calls a model (`model(x)`, `model.generate(...)`) that an
earlier statement built (`model = Net()`, `AutoModel.from_pretrained(...)`, `torch.load(...)`) and
nothing moved since, while an argument of that call is on a device in a way the file shows:
`model(x.to(device))`, `x = batch.to(device)`, `x = torch.randn(..., device=device)`. The patch inserts
`model.to(<that device>)` once the model is built and set up (after its last `model.load_state_dict(...)`
or `model.eval()`) and the device expression exists, before the failing statement. The model may also
be a plain object's attribute (`self.featurizer(chunk)`, `self.featurizer.frames(chunk)`) that `__init__`
built and the class never moves: the move goes right after it is built when the inputs' device can be
named there, else just before the failing statement.

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
from fixer.patching.flow import Before, Device, Event, PlannedCodemod, Spot, device_move, keyword, statement

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
        if built is None and callee.startswith("self.") and callee.count(".") <= 2:
            return self._fix_attribute(call, ".".join(callee.split(".")[:2]), before)
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

    def _fix_attribute(self, call: cst.Call, attribute: str, before: Before) -> bool:
        """`self.featurizer.frames(chunk)` in a plain class (not a module, which moves its attributes with
        it), whose `__init__` built `self.featurizer` and which never moves it: the move goes right after
        it is built when the inputs' device can be named there (`self.encoder.weight.device`), else just
        before the failing statement."""
        owner = self.enclosing(call, cst.ClassDef)
        if owner is None or any(dotted(base.value) != "object" for base in owner.bases):
            return False
        assigned = [
            node
            for node in walk(owner)
            if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign))
            and any(dotted(target) == attribute for target in _targets(node))
        ]
        moves = [
            node for node in walk(owner) if isinstance(node, cst.Call) and device_move(node) and _moves(node, attribute)
        ]
        if len(assigned) != 1 or moves or not isinstance(assigned[0], cst.Assign):
            return False
        built = assigned[0]
        init = self.enclosing(built, cst.FunctionDef)
        device = _device_of_inputs(call, before)
        if init is None or init.name.value != "__init__" or not _builds_model(built.value) or device is None:
            return False
        at_build = self.before(built)
        needed = _self_attributes(device) | (device.names - {"self"})
        failing = before.statement
        assert failing is not None  # fix_call returns before asking when there is none
        spot: Spot = ("before", failing)
        if at_build.statement is not None and all(at_build.binding(name) is not None for name in needed):
            spot = ("after", at_build.statement)
        self.insert(spot, statement(cst.Expr(device.move(cst.parse_expression(attribute)))))
        self.judge("safe", f"Module.to moves {attribute}'s weights in place to where its inputs are; same function")
        return True


def _targets(node: cst.Assign | cst.AnnAssign | cst.AugAssign) -> list[cst.BaseExpression]:
    if isinstance(node, cst.Assign):
        return [target.target for target in node.targets]
    return [node.target]


def _moves(call: cst.Call, attribute: str) -> bool:
    """`self.x.to(d)`, `self.x.cuda()`, `self.x = self.x.to(d)`: a move of the attribute somewhere in the class."""
    return isinstance(call.func, cst.Attribute) and dotted(call.func.value) == attribute


def _self_attributes(device: Device) -> set[str]:
    """`self.encoder` for `self.encoder.weight.device`: the attributes a device expression needs set."""
    return {
        f"self.{node.attr.value}"
        for arg in device.args
        for node in walk(arg.value)
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"
    }


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
