"""Facts about tensors the code copied to the CPU on purpose, and then used beside GPU tensors.

Post-processing, metrics and saving copy results to host memory (`.cpu()`, `.detach().cpu()`,
`.to("cpu")`); a statistic or a target that stayed on the GPU then meets the copy. The copy is followed
back from the failing line through the names, loops and lists it was computed from, in the order the
code ran them."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from fixer.explain.detectors import detector, syntax
from fixer.explain.detectors.code import Code, Scope

_DEPTH = 4  # names followed back from the failing line: a copy is made a few lines above its use
_FILLING = frozenset({"append", "extend", "insert"})
_PLACING = syntax.MOVES | {"cpu"}  # a move is where a tensor's device comes from: the search stops there


@detector(
    "failing-line-reads-cpu-copy",
    reads="your files or the code pasted",
    finds="the failing statement reads a tensor the code copied to the CPU (.cpu(), .to('cpu')), directly or "
    "through the names, loops and lists it was computed from",
)
def failing_line_reads_cpu_copy(code: Code) -> Iterator[str]:
    for scope in (*code.showing, *code.library):
        copies = cpu_copies_read(scope)
        if scope.failing is not None and copies:
            name, copied = next(iter(copies.items()))
            yield f"{scope.where(scope.failing)}: `{name}` holds a CPU copy made at line {copied}"


def holds_cpu_copy(scope: Scope, name: str) -> bool:
    """`name` holds, at the failing line, a tensor the code copied to the CPU: sent there on purpose."""
    return scope.failing is not None and _Trail(scope).copy_behind(name, scope.failing.lineno, _DEPTH) is not None


def cpu_copies_read(scope: Scope) -> dict[str, int]:
    """The names the failing statement reads that hold a CPU copy, by name, with the line each copy was
    made on: what the statement's other tensors meet, and where a patch sends them."""
    if scope.failing is None:
        return {}
    trail = _Trail(scope)
    found = {}
    for name in sorted(_loaded_names(scope.failing)):
        copied = trail.copy_behind(name, scope.failing.lineno, _DEPTH)
        if copied is not None:
            found[name] = copied
    return found


def _loaded_names(statement: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


class _Trail:
    """The scope's bindings by name, read once, and each question answered once: a generated script whose
    every line reads twenty names bound the same way would otherwise be followed down every path."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.bindings: dict[str, list[tuple[ast.stmt, ast.expr, bool]]] = {}
        for statement in scope.statements:
            for name, value, replaces in _bindings(statement):
                self.bindings.setdefault(name, []).append((statement, value, replaces))
        self.answers: dict[tuple[str, int, int], int | None] = {}

    def copy_behind(self, name: str, line: int, depth: int) -> int | None:
        """The line of the CPU copy that `name` holds at `line`, by its bindings before it, latest first. A
        binding under a condition the line does not share may not have run, so the one before it is read
        too; one that surely ran hides those before it. Filling a list (`chunks.append(x.cpu())`) adds
        to what it holds."""
        key = (name, line, depth)
        if key not in self.answers:  # each step goes to an earlier line, so no question waits on itself
            self.answers[key] = self._copy_behind(name, line, depth)
        return self.answers[key]

    def _copy_behind(self, name: str, line: int, depth: int) -> int | None:
        for statement, value, replaces in reversed(self.bindings.get(name, [])):
            if statement.lineno >= line:
                continue
            copied = self._copy_in(value, statement.lineno, depth)
            if copied is not None:
                return copied
            if replaces and id(statement) not in self.scope.conditional:
                return None
        return None

    def _copy_in(self, value: ast.expr, line: int, depth: int) -> int | None:
        """Where `value`'s tensor was copied to the CPU, following the names it is computed from."""
        for part in syntax.tensor_sources(value, self.scope.names, stop=_PLACING):
            if syntax.copies_to_cpu(part):
                return getattr(part, "lineno", line)
            if isinstance(part, ast.Name) and depth > 0:
                copied = self.copy_behind(part.id, line, depth - 1)
                if copied is not None:
                    return copied
        return None


def _bindings(statement: ast.stmt) -> Iterator[tuple[str, ast.expr, bool]]:
    """Each name `statement` binds, what to, and whether that replaces what the name held before: an
    assignment does; a loop binds each element of what it iterates; a list grows by what is appended."""
    if isinstance(statement, ast.For | ast.AsyncFor):
        for target in ast.walk(statement.target):
            if isinstance(target, ast.Name):
                yield target.id, statement.iter, True
    elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        filled = syntax.dotted(func.value) if isinstance(func, ast.Attribute) and func.attr in _FILLING else None
        if filled:
            yield filled, ast.List(elts=list(statement.value.args)), False
    else:
        value = syntax.value_of(statement)
        if value is not None:
            for name in syntax.assigned_names(statement):
                yield name, value, not isinstance(statement, ast.AugAssign)
