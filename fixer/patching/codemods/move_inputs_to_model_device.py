"""inputs-not-moved: the model was sent to a device, the batch it is called with was not.

Pattern: on the failing line the code calls a model that an earlier statement moved (`model.to(d)`,
`model = Net().to(d)`, `model.cuda()`), or a loss/op with that model's output, and passes names that
nothing moved: a DataLoader batch, a tokenizer's output, labels. The patch rebinds each of those names to
its copy on the model's device right before the failing statement (`x = x.to(d)`; for `**batch`, every
tensor of the mapping), reusing the user's own device expression from the model's move. A bare
`x.to(d)` statement whose result was thrown away becomes `x = x.to(d)` instead.

Unsafe: values stay the same, but from that point the names refer to device tensors, so later code that
relies on them being on the CPU (`.numpy()`, Python-side indexing, logging) changes, and every call pays
a host-to-device copy. Arguments that are not plainly tensors (numbers, strings, containers, keyword
arguments whose origin the file does not show) are left alone, and nothing changes without a move of
the model in sight.
"""

from __future__ import annotations

import libcst as cst

from fixer.patching.base import dotted
from fixer.patching.flow import (
    Before,
    Device,
    PlannedCodemod,
    device_move,
    keyword,
    literal,
    makes_module,
    statement,
)

_MODEL_METHODS = ("generate", "forward")


class MoveInputsToModelDevice(PlannedCodemod):
    id = "move-inputs-to-model-device"
    safety = "unsafe"
    summary = "move the tensors passed to the failing call onto the model's device (rebinding their names)"

    def plan(self, module: cst.Module) -> None:
        for _line, calls in self.calls_on_target(module):
            for call in calls:
                if self._model_call(call):
                    return
            for call in calls:
                if self._call_with_model_output(call):
                    return

    def _model_call(self, call: cst.Call) -> bool:
        """`model(x)`, `model(**enc)`, `model.generate(ids)` with `model` moved before."""
        callee = dotted(call.func)
        if callee is None:
            return False
        before = self.before(call)
        head, _, method = callee.rpartition(".")
        owner = head if head and method in _MODEL_METHODS else callee
        device = before.moved(owner)
        return device is not None and self._move_arguments(call, before, device, skip=())

    def _call_with_model_output(self, call: cst.Call) -> bool:
        """`criterion(logits, labels)`: one argument is the output of a moved model, another stayed behind."""
        before = self.before(call)
        on_device = [
            arg.value for arg in call.args if before.device_of(arg.value) is not None and not _module(arg, before)
        ]
        if not on_device:
            return False
        device = before.device_of(on_device[0])
        assert device is not None
        return self._move_arguments(call, before, device, skip=tuple(on_device))

    def _move_arguments(
        self, call: cst.Call, before: Before, device: Device, skip: tuple[cst.BaseExpression, ...]
    ) -> bool:
        spot = before.statement
        if not isinstance(spot, cst.SimpleStatementLine) or before.in_expression_scope:
            return False
        moves: list[cst.BaseStatement] = []
        rebinds: list[tuple[cst.Expr, cst.Assign]] = []
        seen: set[str] = set()
        for arg in call.args:
            if any(arg.value is done for done in skip) or arg.star == "*" or not isinstance(arg.value, cst.Name):
                continue
            name = arg.value
            if name.value in seen:
                continue
            seen.add(name.value)
            bound = before.binding(name.value)
            if literal(name) or (bound is None and (arg.keyword is not None or arg.star)):
                continue
            if bound is not None and bound.value is not None:
                if before.device_of(bound.value) is not None or not _maybe_tensor(bound.value, arg.star == "**"):
                    continue
                if makes_module(bound.value):
                    continue
            discarded = [e for e in before.calls_on(name.value, bound.line if bound else 0) if _moves(e.value)]
            if discarded and isinstance(discarded[-1].small, cst.Expr) and isinstance(discarded[-1].value, cst.Call):
                # `x.to(d)` as a statement returns a copy and leaves x where it was: keep the copy
                rebinds.append(
                    (
                        discarded[-1].small,
                        cst.Assign(targets=[cst.AssignTarget(target=name)], value=discarded[-1].value),
                    )
                )
                continue
            if arg.star == "**" and not (
                device.method == "to" and bound is not None and _tokenizer_output(bound.value)
            ):
                moved: cst.BaseExpression = _each_value(name, device)
            else:
                moved = device.move(name)
            moves.append(statement(cst.Assign(targets=[cst.AssignTarget(target=name)], value=moved)))
        if not moves and not rebinds:
            return False
        for expr, assign in rebinds:
            self.replace(expr, assign)
        if moves:
            self.insert(("before", spot), *moves)
        return True


def _module(arg: cst.Arg, before: Before) -> bool:
    bound = before.binding(arg.value.value) if isinstance(arg.value, cst.Name) else None
    return bound is not None and bound.value is not None and makes_module(bound.value)


def _moves(call: cst.BaseExpression | None) -> bool:
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and device_move(call) is not None


def _maybe_tensor(value: cst.BaseExpression, mapping: bool) -> bool:
    """False for what is plainly not a tensor (or, after `**`, not a mapping of tensors)."""
    if mapping and isinstance(value, (cst.Dict, cst.DictComp)):
        return True
    return not literal(value) and not isinstance(value, (cst.Dict, cst.DictComp))


def _tokenizer_output(value: cst.BaseExpression | None) -> bool:
    """`tokenizer(texts, return_tensors="pt")`: a BatchEncoding, which has a `.to()` (but no `.cuda()`) of its own."""
    return isinstance(value, cst.Call) and keyword(value, "return_tensors") is not None


def _each_value(mapping: cst.Name, device: Device) -> cst.DictComp:
    """`{name: tensor.to(d) for name, tensor in batch.items()}`, with names that do not clash with the device's."""
    key, value = ("name", "tensor") if not {"name", "tensor"} & device.names else ("k", "v")
    return cst.DictComp(
        key=cst.Name(key),
        value=device.move(cst.Name(value)),
        for_in=cst.CompFor(
            target=cst.Tuple(
                elements=[
                    cst.Element(cst.Name(key), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                    cst.Element(cst.Name(value)),
                ],
                lpar=[],
                rpar=[],
            ),
            iter=cst.Call(func=cst.Attribute(value=mapping, attr=cst.Name("items"))),
        ),
    )


CODEMOD = MoveInputsToModelDevice
