"""inputs-not-moved: the model was sent to a device, the batch it is called with was not.

Pattern: on the failing line the code calls a model that an earlier statement moved (`model.to(d)`,
`model = Net().to(d)`, `model.cuda()`), or a loss/op with that model's output, and passes names that
nothing moved: a DataLoader batch, a tokenizer's output, labels. The patch rebinds each of those names to
its copy on the model's device right before the failing statement (`x = x.to(d)`; for `**batch`, every
tensor of the mapping), reusing the user's own device expression from the model's move. A bare
`x.to(d)` statement whose result was thrown away becomes `x = x.to(d)` instead. A batch is moved whole:
the names unpacked beside a moved one (`for features, target in loader`) move too when later code hands
them to a call with the model's output (`l1_loss(pred, target)`), or the next line would fail instead.
An entry taken from a batch by a literal key or position (`criterion(logits, batch["label"])`) moves
where the call reads it (`batch["label"].to(d)`), and the batch itself stays as it was.

An eval or predict function that receives the model (`def evaluate(model, loader)`) has no device in
sight: the model's own device is used, `next(model.parameters()).device`, when the parameter is
plainly a module (annotated as one, used as one with `.eval()`/`.parameters()`/..., or named so).

Safety, per patch: the values stay the same and only their placement changes, so a patch is safe when
nothing after the failing statement reads the rebound names (other than a moved half of the batch
meeting the model's output); when something does, it now reads the
device copy (`.numpy()`, Python-side indexing, logging change), and the patch says which name.
Arguments that are not plainly tensors (numbers, strings, containers, keyword arguments whose origin
the file does not show) are left alone, and nothing changes without a model whose device is known.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst
from libcst.metadata import PositionProvider

from fixer.patching.base import dotted, walk
from fixer.patching.flow import (
    Before,
    Device,
    Event,
    PlannedCodemod,
    device_move,
    free_names,
    keyword,
    literal,
    makes_module,
    statement,
)

_MODEL_METHODS = ("generate", "forward")
# What only a module does: a parameter used this way in the function is the model it receives.
_MODULE_METHODS = frozenset({"eval", "train", "parameters", "named_parameters", "state_dict", "modules", "generate"})
_MODULE_NAME = re.compile(r"(?:^|_)(?:model|net|network|module|classifier|encoder|decoder)$")


class MoveInputsToModelDevice(PlannedCodemod):
    id = "move-inputs-to-model-device"
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
        if device is not None:
            return self._move_arguments(call, before, device, skip=())
        asked = self._received_model(call, before, owner)
        if asked is None:
            return False
        function = self.enclosing(call, cst.FunctionDef)
        assert function is not None  # a received model is a parameter of one
        used = {node.value for node in walk(function) if isinstance(node, cst.Name)}
        name = next(n for n in ("device", f"{owner}_device", f"_{owner}_device") if n not in used)
        ask = statement(cst.Assign(targets=[cst.AssignTarget(target=cst.Name(name))], value=asked))
        device = Device("to", (cst.Arg(value=cst.Name(name)),))
        return self._move_arguments(call, before, device, skip=(), prelude=(ask,))

    def _received_model(self, call: cst.Call, before: Before, owner: str) -> cst.BaseExpression | None:
        """`next(model.parameters()).device` for a module the enclosing function receives and never rebinds."""
        param = self.received(call, before, owner)
        function = self.enclosing(call, cst.FunctionDef)
        if param is None or function is None:
            return None
        if not (_annotated_module(param) or _used_as_module(function, owner) or _MODULE_NAME.search(owner)):
            return None
        return cst.parse_expression(f"next({owner}.parameters()).device")

    def _read_later(self, names: set[str], statement: cst.BaseStatement, expected: set[int]) -> str | None:
        """A rebound name that code after the failing statement reads, in its function (or module), other
        than the reads in `expected` (node ids), which want the device copy."""
        for node in self._following(statement):
            if isinstance(node, cst.Name) and node.value in names and id(node) not in expected:
                return node.value
        return None

    def _following(self, statement: cst.BaseStatement) -> Iterator[cst.CSTNode]:
        """The nodes of the failing statement's function (or module) that come after it, in source order."""
        scope: cst.CSTNode = self.enclosing(statement, cst.FunctionDef) or self._module_of(statement)
        end = self.get_metadata(PositionProvider, statement).end.line
        return (node for node in walk(scope) if self.line_of(node) > end)

    def _unpacked_with(self, name: str, before: Before, paired: set[str], seen: set[str]) -> list[cst.Name]:
        """The names unpacked beside `name` from one batch (`for features, target in loader`, `x, y = batch`)
        that code after the failing statement passes to a call together with the model's output: the
        other half of the batch, which would fail on the next line. Names that meet the output only
        elsewhere (file names printed, an enumerate index) stay where they are."""
        bound = before.binding(name)
        if bound is None or bound.value is not None:
            return []
        packed = _tuple_holding(name, self._unpacking_target(bound))
        if packed is None:
            return []
        return [
            sibling
            for sibling in packed
            if sibling.value not in seen and sibling.value in paired and _same(before.binding(sibling.value), bound)
        ]

    def _unpacking_target(self, bound: Event) -> cst.BaseExpression | None:
        if bound.opens is not None:
            header = self.parents.get(id(bound.opens))
            return header.target if isinstance(header, cst.For) else None
        if isinstance(bound.small, cst.Assign) and len(bound.small.targets) == 1:
            return bound.small.targets[0].target
        return None

    def _paired(self, spot: cst.BaseStatement) -> Iterator[cst.Name]:
        """Bare names passed to a call after the failing statement beside an argument that reads what the
        failing statement computed (`loss_fn(pred, target)` after `pred = model(features)`), directly or
        through names assigned from it."""
        outputs = _assigned(spot)
        for node in self._following(spot):
            if isinstance(node, cst.Assign) and free_names(node.value) & outputs:
                outputs |= {n for target in node.targets for n in _names_in(target.target)}
            elif isinstance(node, cst.Call) and outputs:
                reads = [free_names(arg.value) for arg in node.args]
                for arg, read in zip(node.args, reads, strict=True):
                    others = set().union(*(r for r in reads if r is not read))
                    if isinstance(arg.value, cst.Name) and others & outputs:
                        yield arg.value

    def _module_of(self, node: cst.CSTNode) -> cst.CSTNode:
        while (parent := self.parents.get(id(node))) is not None:
            node = parent
        return node

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
        self,
        call: cst.Call,
        before: Before,
        device: Device,
        skip: tuple[cst.BaseExpression, ...],
        prelude: tuple[cst.BaseStatement, ...] = (),
    ) -> bool:
        """Move the call's tensor arguments; `prelude` (what defines the device) goes first when any moves."""
        spot = before.statement
        if not isinstance(spot, cst.SimpleStatementLine) or before.in_expression_scope:
            return False
        moves: list[cst.BaseStatement] = []
        rebinds: list[tuple[cst.Expr, cst.Assign]] = []
        seen: set[str] = set()
        paired = list(self._paired(spot))  # names later code hands to a call with the model's output
        taken: list[cst.Subscript] = []  # `batch["label"]`: moved where the call reads it, the batch kept
        for arg in call.args:
            if any(arg.value is done for done in skip) or arg.star == "*":
                continue
            if not arg.star and _taken_by_key(arg.value):
                assert isinstance(arg.value, cst.Subscript)
                taken.append(arg.value)
                continue
            if not isinstance(arg.value, cst.Name):
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
            for sibling in self._unpacked_with(name.value, before, {node.value for node in paired}, seen):
                seen.add(sibling.value)
                moved_too = cst.Assign(targets=[cst.AssignTarget(target=sibling)], value=device.move(sibling))
                moves.append(statement(moved_too))
        if not moves and not rebinds and not taken:
            return False
        for expr, assign in rebinds:
            self.replace(expr, assign)
        for value in taken:
            self.replace(value, device.move(value))
        if moves:
            self.insert(("before", spot), *prelude, *moves)
        later = self._read_later(seen, spot, {id(node) for node in paired})
        if later is None:
            self.judge("safe", "only where the inputs live changes, and nothing after the call reads the moved names")
        else:
            self.judge("unsafe", f"code after the call reads `{later}`, which is now the copy on the model's device")
        return True


def _taken_by_key(value: cst.BaseExpression) -> bool:
    """`batch["label"]`, `batch[1]`, `data.y["mask"]`: one entry of a batch, by a literal key or position."""
    if not isinstance(value, cst.Subscript) or len(value.slice) != 1 or dotted(value.value) is None:
        return False
    index = value.slice[0].slice
    return isinstance(index, cst.Index) and isinstance(index.value, (cst.SimpleString, cst.Integer))


def _same(binding: Event | None, unpacking: Event) -> bool:
    """The name still holds what the unpacking gave it: nothing rebound it since."""
    return binding is not None and binding.line == unpacking.line and binding.small is unpacking.small


def _tuple_holding(name: str, target: cst.BaseExpression | None) -> list[cst.Name] | None:
    """The other plain names of the innermost tuple whose element is `name`: `(features, target)` in
    `step, (features, target)`, not `step`."""
    if not isinstance(target, (cst.Tuple, cst.List)):
        return None
    names = [e.value for e in target.elements if isinstance(e.value, cst.Name)]
    if any(n.value == name for n in names):
        return [n for n in names if n.value != name]
    for element in target.elements:
        found = _tuple_holding(name, element.value)
        if found is not None:
            return found
    return None


def _assigned(spot: cst.BaseStatement) -> set[str]:
    """Names the failing statement binds, when it is an assignment (`pred = model(features)`)."""
    if not isinstance(spot, cst.SimpleStatementLine):
        return set()
    return {
        name
        for small in spot.body
        if isinstance(small, (cst.Assign, cst.AnnAssign))
        for target in (small.targets if isinstance(small, cst.Assign) else [small])
        for name in _names_in(target.target)
    }


def _names_in(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return {name for element in target.elements for name in _names_in(element.value)}
    return {target.value} if isinstance(target, cst.Name) else set()


def _annotated_module(param: cst.Param) -> bool:
    annotation = dotted(param.annotation.annotation) if param.annotation is not None else None
    return annotation is not None and (annotation.endswith("Module") or annotation.endswith("PreTrainedModel"))


def _used_as_module(function: cst.FunctionDef, name: str) -> bool:
    return any(
        isinstance(node, cst.Attribute) and dotted(node.value) == name and node.attr.value in _MODULE_METHODS
        for node in walk(function)
    )


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
    """`{name: tensor.to(d) if hasattr(tensor, "to") else tensor for name, tensor in batch.items()}`: every
    tensor of a dict or BatchEncoding moves, the strings and lists beside them stay; the names chosen do
    not clash with the device's."""
    key, value = ("name", "tensor") if not {"name", "tensor"} & device.names else ("k", "v")
    movable = cst.Call(
        func=cst.Name("hasattr"),
        args=[
            cst.Arg(cst.Name(value), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            cst.Arg(cst.SimpleString(f'"{device.method}"')),
        ],
    )
    return cst.DictComp(
        key=cst.Name(key),
        value=cst.IfExp(test=movable, body=device.move(cst.Name(value)), orelse=cst.Name(value)),
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
