"""exported-program-hardcoded-device: a torch.export program moved with `.to()` / `.cuda()`.

`torch.export` writes the device of every tensor the forward creates (`arange`, `zeros`, masks) into
the graph as a literal argument. `ep.module().to(device)` moves the parameters and buffers but not
those literals, so the program mixes the two devices when it runs. `move_to_device_pass` rewrites the
literals and moves the state together.

Pattern, where `ep` is `torch.export.load(...)` / `torch.export.export(...)`, a name the file binds to
one of them, or a name that says it is an exported program (`ep`, `exported`, `program`, `*_ep`):

- `ep.module().to(device)` / `ep.module().cuda()`
  -> `move_to_device_pass(ep, device).module()`;
- `m = ep.module()` and later in the same block `m.to(device)` (or `m = m.to(device)`)
  -> `m = move_to_device_pass(ep, device).module()` in place of the move.

The device is the user's own argument to `.to()` (a string, `torch.device(...)`, a variable such as
`device`, or `x.device`); `.cuda()` becomes `"cuda"`. A conversion that may not be a device (a
dtype, extra arguments) is left alone, and so are TorchScript programs (`torch.jit.trace/script/load`),
which have no such pass: they need a re-trace on the target device. The import
`from torch.export.passes import move_to_device_pass` is added when missing. Nothing changes when the
installed PyTorch does not ship the pass.

Unsafe, every patch: the pass moves the ExportedProgram itself, in place (later `ep.module()` calls give modules
on the new device), and in the two-statement form `m` names a new module afterwards; any other
reference to the old module still sees it on the old device.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import libcst as cst
from libcst.metadata import PositionProvider, QualifiedNameProvider

from fixer.patching.base import Codemod, Target, dotted, method_call

PASS = "move_to_device_pass"
_EXPORTERS = {"torch.export.load", "torch.export.export", "torch.export.export_for_training"}
_PROGRAM_NAME = re.compile(r"^(?:ep|\w+_ep|exported(?:_\w+)?|\w+_exported|program|\w+_program)$")
_PROGRAM_MOVES = "the pass moves the program itself: every later ep.module() is on the new device"
_DEVICE_NAME = re.compile(r"^(?:dev|device|\w+_device|device_\w+)$")


class ExportedProgramMoveToDevicePass(Codemod):
    id = "exported-program-move-to-device-pass"
    summary = "move an exported program with torch.export.passes.move_to_device_pass instead of .to()"
    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider)

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self._programs: set[str] = set()  # names bound to torch.export.load/export
        self._others: set[str] = set()  # names bound to anything else (torch.jit.trace, ...)
        self._changed = False

    def visit_Assign(self, node: cst.Assign) -> None:
        program = self._exports(node.value)
        for target in node.targets:
            if name := dotted(target.target):
                (self._programs if program else self._others).add(name)

    def _exports(self, node: cst.BaseExpression) -> bool:
        if not isinstance(node, cst.Call):
            return False
        return any(q.name in _EXPORTERS for q in self.get_metadata(QualifiedNameProvider, node.func, set()))

    def _program(self, node: cst.BaseExpression) -> bool:
        """An expression that is an ExportedProgram: a torch.export call, or a name for one."""
        if self._exports(node):
            return True
        name = dotted(node)
        if name is None:
            return False
        return name in self._programs or (
            name not in self._others and bool(_PROGRAM_NAME.match(name.rsplit(".", 1)[-1]))
        )

    # -- `ep.module().to(device)` ------------------------------------------------------------------

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        device = _device_of(original_node)
        if device is None or not isinstance(original_node.func, cst.Attribute):
            return updated_node
        module = method_call(original_node.func.value, "module")
        if module is None or module.args or not isinstance(module.func, cst.Attribute):
            return updated_node
        if not self._program(module.func.value):
            return updated_node
        assert isinstance(updated_node.func, cst.Attribute)
        inner = method_call(updated_node.func.value, "module")
        assert inner is not None and isinstance(inner.func, cst.Attribute)
        self._changed = True
        self.judge("unsafe", _PROGRAM_MOVES)
        return _pass_then_module(inner.func.value, device)

    # -- `m = ep.module()` ... `m.to(device)` ------------------------------------------------------

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        return updated_node.with_changes(body=self._fix_block(updated_node.body))

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = self._fix_block(updated_node.body)
        if not self._changed or not _pass_available():
            return original_node
        if not _imports_pass(body):
            body = _add_import(body)
        return updated_node.with_changes(body=body)

    def _fix_block(self, body: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
        unpacked: dict[str, cst.BaseExpression] = {}  # module name -> the program it came from
        fixed: list[cst.BaseStatement] = []
        for statement in body:
            if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
                small = statement.body[0]
                moved = _moved(small)
                if moved is not None and moved[0] in unpacked:
                    name, device = moved
                    target = cst.parse_expression(name)
                    assert isinstance(target, (cst.Name, cst.Attribute))  # a dotted name
                    assign = cst.Assign(
                        targets=[cst.AssignTarget(target=target)],
                        value=_pass_then_module(unpacked.pop(name), device),
                    )
                    statement = statement.with_changes(body=[assign])
                    self._changed = True
                    self.judge("unsafe", _PROGRAM_MOVES)
                elif isinstance(small, cst.Assign):
                    self._track(small, unpacked)
            else:
                unpacked.clear()  # control flow: which binding holds is no longer plain
            fixed.append(statement)
        return fixed

    def _track(self, assign: cst.Assign, unpacked: dict[str, cst.BaseExpression]) -> None:
        targets = [dotted(t.target) for t in assign.targets]
        for name in list(unpacked):  # a rebinding of the module or of its program ends the pattern
            program = dotted(unpacked[name])
            if name in targets or (program and program in targets):
                del unpacked[name]
        module = method_call(assign.value, "module")
        if (
            module is not None
            and not module.args
            and isinstance(module.func, cst.Attribute)
            and len(targets) == 1
            and targets[0]
            and isinstance(module.func.value, (cst.Name, cst.Attribute))
            and self._program_name(module.func.value)
        ):
            unpacked[targets[0]] = module.func.value

    def _program_name(self, node: cst.BaseExpression) -> bool:
        name = dotted(node)
        return name is not None and (
            name in self._programs or (name not in self._others and bool(_PROGRAM_NAME.match(name.rsplit(".", 1)[-1])))
        )


def _device_of(call: cst.Call) -> cst.BaseExpression | None:
    """The device of `x.to(device)`, `x.to(device=device)` or `x.cuda()`; None when unsure it is one."""
    move = method_call(call, "to", "cuda")
    if move is None or not isinstance(move.func, cst.Attribute):
        return None
    if move.func.attr.value == "cuda":
        return cst.SimpleString('"cuda"') if not move.args else None
    if len(move.args) != 1 or move.args[0].star or (move.args[0].keyword and move.args[0].keyword.value != "device"):
        return None
    value = move.args[0].value
    if isinstance(value, (cst.SimpleString, cst.FormattedString)):
        return value
    if isinstance(value, cst.Call) and (dotted(value.func) or "").rsplit(".", 1)[-1] == "device":
        return value  # torch.device(...)
    name = dotted(value)
    if name and _DEVICE_NAME.match(name.rsplit(".", 1)[-1]):
        return value  # device, args.device, x.device
    return None


def _moved(small: cst.BaseSmallStatement) -> tuple[str, cst.BaseExpression] | None:
    """`m.to(device)` / `m.cuda()` as a statement, or `m = m.to(device)`: (m, device)."""
    targets: list[str | None]
    if isinstance(small, cst.Expr):
        call, targets = small.value, [None]
    elif isinstance(small, cst.Assign):
        call, targets = small.value, [dotted(t.target) for t in small.targets]
    else:
        return None
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
        return None
    device = _device_of(call)
    name = dotted(call.func.value)
    if device is None or name is None or (targets != [None] and targets != [name]):
        return None
    return name, device


def _pass_then_module(program: cst.BaseExpression, device: cst.BaseExpression) -> cst.Call:
    """`move_to_device_pass(program, device).module()`."""
    moved = cst.Call(func=cst.Name(PASS), args=[cst.Arg(program), cst.Arg(device)])
    return cst.Call(func=cst.Attribute(value=moved, attr=cst.Name("module")))


def _imports_pass(body: Sequence[cst.BaseStatement]) -> bool:
    for statement in body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if (
                isinstance(small, cst.ImportFrom)
                and not isinstance(small.names, cst.ImportStar)
                and any(alias.evaluated_alias is None and alias.evaluated_name == PASS for alias in small.names)
            ):
                return True
    return False


def _add_import(body: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """`from torch.export.passes import move_to_device_pass` after the file's leading imports."""
    line = cst.parse_statement(f"from torch.export.passes import {PASS}")
    last = -1
    for i, statement in enumerate(body):
        is_import = isinstance(statement, cst.SimpleStatementLine) and all(
            isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
        )
        is_docstring = i == 0 and isinstance(statement, cst.SimpleStatementLine) and _is_string(statement)
        if is_import:
            last = i
        elif not is_docstring:
            break
    return [*body[: last + 1], line, *body[last + 1 :]]


def _is_string(statement: cst.SimpleStatementLine) -> bool:
    return (
        len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


@lru_cache(maxsize=1)
def _pass_available() -> bool:
    """Whether the installed PyTorch ships `torch.export.passes.move_to_device_pass` (read, not imported)."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return False
    if spec is None or not spec.submodule_search_locations:
        return False
    for location in spec.submodule_search_locations:
        passes = Path(location) / "export" / "passes" / "__init__.py"
        try:
            if f"def {PASS}(" in passes.read_text(encoding="utf-8"):
                return True
        except OSError:
            continue
    return False


CODEMOD = ExportedProgramMoveToDevicePass
