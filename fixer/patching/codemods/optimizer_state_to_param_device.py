"""optimizer-state-after-resume: optimizer state restored before the model was moved to its device.

`optimizer.load_state_dict(...)` places each restored state tensor (`exp_avg`, `momentum_buffer`, ...)
on the device its parameter has *at that moment*. When the model is moved afterwards
(`model.to(device)`), the parameters move and the state stays behind, and the first
`optimizer.step()` mixes the two.

Pattern: in one block, a statement that restores an optimizer (`<optimizer>.load_state_dict(...)`,
directly or nested in an `if resume:`/`try:`), followed in that block by a statement that moves a
model (`model.to(...)`, `model.cuda()`, `model = model.to(...)`) before any `<optimizer>.step`; when
the file builds the optimizer from `model.parameters()`, only a move of that model counts. The
receiver counts as an optimizer when the file binds it to a `torch.optim` optimizer, or when its name
says so (`optimizer`, `optim`, `opt`, `d_optimizer`, `self.optimizer`); `torch.optim.lr_scheduler`
objects never do. Change: after the last such move, insert a loop that moves every state tensor onto
its own parameter's device, with `load_state_dict`'s rule for `step` (moved only for fused or
capturable optimizers). Nothing else moves; a block that already touches `<optimizer>.state` after
the restore is left alone.

A restore in a file that moves no model at all (a trainer's `load_state_dict` helper, as in VAR,
whose model was placed elsewhere before it) gets the loop right after the restore: the state then
follows wherever the parameters are at that point. Before PyTorch 2.1, `load_state_dict` left a
fused or capturable optimizer's `step` counters on the CPU even then (pytorch#103256); on later
releases the loop finds everything in place and moves nothing.

Safety, per patch: for an optimizer the file binds to a `torch.optim` class the loop does what
`load_state_dict` would have done had the model been moved first, so training continues with the
same values: safe. An optimizer recognised only by its name could be one that keeps its state on
another device on purpose (CPU-offloading optimizers), and the loop would undo that: unsafe.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import libcst as cst
from libcst.metadata import PositionProvider, QualifiedNameProvider

from fixer.patching.base import Codemod, Target, dotted, method_call

_OPTIMIZER_NAME = re.compile(r"^(?:\w+_)?(?:optimizer|optim|opt)(?:_\w+)?$|^optimizer\w*$")
_NOT_OPTIMIZERS = ("torch.optim.lr_scheduler.", "torch.optim.swa_utils.")
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)

_LOOP = """\
for {group} in {opt}.param_groups:
    {moves_step} = {group}.get("fused") or {group}.get("capturable")
    for {param} in {group}["params"]:
        {param_state} = {opt}.state.get({param}, {{}})
        for {key}, {value} in {param_state}.items():
            if isinstance({value}, {torch}.Tensor) and ({key} != "step" or {moves_step}):
                {param_state}[{key}] = {value}.to({param}.device)
"""
_AFTER_MOVE = "# the optimizer state was restored before the move: put it on each parameter's device"
_AFTER_RESTORE = (
    "# put the restored state on each parameter's device (before torch 2.1, fused step counters stayed behind)"
)


class OptimizerStateToParamDevice(Codemod):
    id = "optimizer-state-to-param-device"
    summary = "after a resume, move the restored optimizer state to each parameter's device"
    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider)

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self._survey = _Survey(self.optimizer_kind)

    def visit_Module(self, node: cst.Module) -> None:
        node.visit(self._survey)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return updated_node.with_changes(body=self._fix_block(updated_node.body))

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        return updated_node.with_changes(body=self._fix_block(updated_node.body))

    def optimizer_kind(self, value: cst.BaseExpression) -> bool | None:
        """True for `torch.optim.AdamW(...)`, False for `torch.optim.lr_scheduler.StepLR(...)`, else None."""
        if not isinstance(value, cst.Call):
            return None
        for qualified in self.get_metadata(QualifiedNameProvider, value.func, set()):
            if qualified.name.startswith(_NOT_OPTIMIZERS):
                return False
            if qualified.name.startswith("torch.optim.") and qualified.name.rsplit(".", 1)[-1][:1].isupper():
                return True
        return None

    def _is_optimizer(self, name: str) -> bool:
        if name in self._survey.optimizers:
            return True
        return name not in self._survey.others and bool(_OPTIMIZER_NAME.match(name.rsplit(".", 1)[-1]))

    def _fix_block(self, body: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
        if self._survey.torch is None:
            return list(body)
        after: dict[int, list[cst.BaseStatement]] = {}
        for i, statement in enumerate(body):
            for optimizer in _restored(statement, self._is_optimizer):
                j, comment = _last_move(body, i, optimizer, self._survey.models.get(optimizer, set())), _AFTER_MOVE
                if j is None and not self._survey.moves_a_model and not _handled(body, i, optimizer):
                    j, comment = i, _AFTER_RESTORE  # a file that places no model: follow the parameters now
                if j is not None:
                    after.setdefault(j, []).append(self._loop(optimizer, comment))
                    self._judge_optimizer(optimizer)
        fixed: list[cst.BaseStatement] = []
        for i, statement in enumerate(body):
            fixed.append(statement)
            fixed.extend(after.get(i, []))
        return fixed

    def _judge_optimizer(self, optimizer: str) -> None:
        if optimizer in self._survey.optimizers:
            self.judge("safe", f"the state goes where `{optimizer}.load_state_dict` puts it when the model moves first")
        else:
            self.judge(
                "unsafe", f"`{optimizer}` is taken for an optimizer by its name; one may keep its state elsewhere"
            )

    def _loop(self, optimizer: str, comment: str) -> cst.BaseStatement:
        names = {n: self._fresh(n) for n in ("group", "moves_step", "param", "param_state", "key", "value")}
        loop = cst.parse_statement(_LOOP.format(opt=optimizer, torch=self._survey.torch, **names))
        return loop.with_changes(leading_lines=[cst.EmptyLine(comment=cst.Comment(comment))])

    def _fresh(self, name: str) -> str:
        while name in self._survey.names:
            name += "_"
        return name


class _Survey(cst.CSTVisitor):
    """What the file binds: optimizers, other torch.optim objects, every name, and torch itself."""

    def __init__(self, kind: Callable[[cst.BaseExpression], bool | None]) -> None:
        super().__init__()
        self.kind = kind
        self.optimizers: set[str] = set()
        self.models: dict[str, set[str]] = {}  # optimizer -> the models whose .parameters() it was given
        self.others: set[str] = set()
        self.names: set[str] = set()
        self.torch: str | None = None
        self.moves_a_model = False  # any statement of the file moves a module with .to()/.cuda()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.moves_a_model = self.moves_a_model or _moved_model(node) is not None

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            module = dotted(alias.name) or ""
            if alias.asname is None and (module == "torch" or module.startswith("torch.")):
                self.torch = "torch"  # `import torch.nn` binds `torch` too
            elif module == "torch" and alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.torch = alias.asname.name.value

    def visit_Assign(self, node: cst.Assign) -> None:
        kind = self.kind(node.value)
        if kind is None:
            return
        models = _models_of(node.value) if kind else set()
        for target in node.targets:
            if name := dotted(target.target):
                (self.optimizers if kind else self.others).add(name)
                if models:
                    self.models.setdefault(name, set()).update(models)


def _models_of(call: cst.BaseExpression) -> set[str]:
    """`torch.optim.AdamW(model.parameters(), ...)` -> {"model"}; empty when the code does not say."""
    if not isinstance(call, cst.Call) or not call.args or call.args[0].keyword:
        return set()
    found: set[str] = set()

    class Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            params = method_call(node, "parameters", "named_parameters")
            if params is not None and isinstance(params.func, cst.Attribute) and (name := dotted(params.func.value)):
                found.add(name)

    call.args[0].value.visit(Finder())
    return found


def _restored(statement: cst.BaseStatement, is_optimizer: Callable[[str], bool]) -> list[str]:
    """The optimizers whose state this statement restores (`opt.load_state_dict(...)`, nested too)."""
    found: list[str] = []

    class Finder(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_Call(self, node: cst.Call) -> None:
            call = method_call(node, "load_state_dict")
            if call is not None and isinstance(call.func, cst.Attribute):
                name = dotted(call.func.value)
                if name and is_optimizer(name) and name not in found:
                    found.append(name)

    if not isinstance(statement, _SCOPES):
        statement.visit(Finder())
    return found


def _handled(body: Sequence[cst.BaseStatement], restore: int, optimizer: str) -> bool:
    """The code already moves `optimizer.state` itself after the restore."""
    return any(_uses(statement, optimizer, "state") for statement in body[restore:])


def _last_move(body: Sequence[cst.BaseStatement], restore: int, optimizer: str, models: set[str]) -> int | None:
    """Index of the last statement after `restore` that moves a model (one of `models`, when the code
    says which models the optimizer updates), before `optimizer.step`; None when there is none, or
    when the code already handles `optimizer.state` after the restore."""
    if _uses(body[restore], optimizer, "state"):
        return None
    last = None
    for j in range(restore + 1, len(body)):
        statement = body[j]
        if _uses(statement, optimizer, "state"):
            return None
        if _uses(statement, optimizer, "step"):
            break
        moved = _moved_model(statement)
        if moved is not None and moved != optimizer and (not models or any(_related(moved, m) for m in models)):
            last = j
    return last


def _moved_model(statement: cst.BaseStatement) -> str | None:
    """`model.to(device)`, `model.cuda()`, `model = model.to(device)`: the module moved in place."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return None
    for small in statement.body:
        value = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
        call = method_call(value, "to", "cuda") if value is not None else None
        if call is None or not isinstance(call.func, cst.Attribute) or not (moved := dotted(call.func.value)):
            continue
        if isinstance(small, cst.Expr) or (
            isinstance(small, cst.Assign) and any(dotted(t.target) == moved for t in small.targets)
        ):
            return moved
    return None


def _related(moved: str, model: str) -> bool:
    """`model` and `model`, `model` and `model.module`, `self.model` and `self.model.backbone`."""
    return moved == model or moved.startswith(model + ".") or model.startswith(moved + ".")


def _uses(statement: cst.BaseStatement, owner: str, attribute: str) -> bool:
    """Whether the statement mentions `owner.attribute` anywhere."""
    found = False

    class Finder(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            nonlocal found
            if node.attr.value == attribute and dotted(node.value) == owner:
                found = True

    statement.visit(Finder())
    return found


CODEMOD = OptimizerStateToParamDevice
