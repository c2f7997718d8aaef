"""cpu-copy-meets-gpu-tensor: a tensor copied to the CPU on purpose meets one that stayed on the GPU.

Pattern, on the failing statement: an operation combines a CPU copy with a partner that is plainly a
tensor and holds no copy. The copy is a name the code filled with `.cpu()`/`.to("cpu")` copies above the
line (through the loops and lists the detector `failing-line-reads-cpu-copy` follows), or a copy the line
makes itself (`x.data.cpu().add_(-low)`). The partner reaches the operation through arithmetic, indexing,
torch functions and tensor methods only: a value passed through a model or a function of the user's is
left alone, since where it runs is not the copy's business. The patch sends the partner where the copy
is, at its use: `s * norm` becomes `s * norm.to(s.device)`, `torch.cat([s, extra])` becomes
`torch.cat([s, extra.to(s.device)])`, and `copy.add_(-low)` becomes `copy.add_(-low.cpu())`.

Safe: `.to(s.device)` returns the partner itself when it is already where `s` is, so a path on which `s`
is no copy (a CPU-only branch that skipped the `.cpu()`) computes as before, and on the path where the
two differ the line could only raise. A copy the line makes is on the CPU on every path, so `.cpu()` is
the same move there. Nothing changes when no operand beside the copy is plainly a tensor.
"""

from __future__ import annotations

import ast

import libcst as cst
from libcst.metadata import PositionProvider

from fixer.explain.detectors import syntax
from fixer.explain.detectors.code import Scope
from fixer.explain.detectors.copies import cpu_copies_read
from fixer.patching.base import dotted, method_call, torch_names, walk
from fixer.patching.flow import TENSOR_METHODS, PlannedCodemod, host_device, keyword, plainly_tensor

# nodes a tensor passes through unchanged in device: it stays the partner's on its way to the operation
_CARRIERS = (
    cst.Arg,
    cst.Attribute,
    cst.BinaryOperation,
    cst.Comparison,
    cst.ComparisonTarget,
    cst.Element,
    cst.Index,
    cst.List,
    cst.Subscript,
    cst.SubscriptElement,
    cst.Tuple,
    cst.UnaryOperation,
)
_VIEWS = frozenset({"data", "T", "mT", "real", "imag"})  # attributes that are the tensor itself, or a view
_MEETINGS = (cst.AugAssign, cst.BinaryOperation, cst.Call, cst.Comparison)


class MovePartnerToCpuCopy(PlannedCodemod):
    id = "move-partner-to-cpu-copy"
    summary = "send the tensor the failing line combines with a CPU copy to where the copy is"

    def plan(self, module: cst.Module) -> None:
        try:
            tree = ast.parse(module.code)
        except SyntaxError:
            return
        torch = torch_names(module)
        for line in reversed(self.target.lines):
            statement = self._statement_at(module, line)
            if statement is None:
                continue
            copies = set(cpu_copies_read(Scope("", line, tree, syntax.aliases(tree))))
            if self._send_partners(statement, copies, torch):
                return

    def _statement_at(self, module: cst.Module, line: int) -> cst.SimpleStatementLine | None:
        for node in walk(module):
            if isinstance(node, cst.SimpleStatementLine):
                span = self.get_metadata(PositionProvider, node)
                if span.start.line <= line <= span.end.line:
                    return node
        return None

    def _send_partners(self, statement: cst.SimpleStatementLine, copies: set[str], torch: dict[str, str]) -> bool:
        read = _reads(statement)
        held = [n for n in read if n.value in copies]
        made = [n for n in walk(statement) if isinstance(n, cst.Call) and _copies_to_host(n)]
        if not held and not made:
            return False
        holding = {id(a) for copy in (*held, *made) for a in self.ancestors(copy)}
        named = {id(n) for n in held}
        moved = []
        for name in read:
            if name.value in copies or not plainly_tensor(name, self.before(name)):
                continue
            meeting = self._meeting(name, holding, {id(c) for c in made}, torch)
            if meeting is None:
                continue
            beside = next((n for n in walk(meeting) if isinstance(n, cst.Name) and id(n) in named), None)
            self.replace(name, _moved_beside(name, beside))
            moved.append(f"`{name.value}`")
        if not moved:
            return False
        self.judge(
            "safe",
            f"{', '.join(dict.fromkeys(moved))} now goes where the CPU copy is, a no-op where it is there already; "
            "where it was not, the line could only raise",
        )
        return True

    def _method_or_view(self, attribute: cst.Attribute) -> bool:
        call = self.parents.get(id(attribute))
        return attribute.attr.value in _VIEWS or (isinstance(call, cst.Call) and call.func is attribute)

    def _meeting(
        self, partner: cst.Name, holding: set[int], made: set[int], torch: dict[str, str]
    ) -> cst.CSTNode | None:
        """The operation where `partner` meets a copy, reached through nodes that keep its device; None when
        the way there passes through a call that may run elsewhere (a model, a function of the user's)."""
        node: cst.CSTNode = partner
        while (parent := self.parents.get(id(node))) is not None and id(parent) not in made:
            if isinstance(parent, cst.Call) and not _keeps_device(parent, node, torch):
                return None
            if isinstance(parent, cst.Attribute) and not self._method_or_view(parent):
                return None  # `norm.shape[0]`: a size, not the tensor
            if id(parent) in holding and isinstance(parent, _MEETINGS):
                return parent  # a list that holds both (`[s, norm]`) leads on to the call that joins them
            if not isinstance(parent, (*_CARRIERS, cst.Call)):
                return None
            node = parent
        return None


def _reads(statement: cst.SimpleStatementLine) -> list[cst.Name]:
    """The names the statement reads, in order: not the names it assigns, attributes or keywords."""
    found: list[cst.Name] = []

    class Reader(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
            return False

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_Name(self, node: cst.Name) -> None:
            found.append(node)

    statement.visit(Reader())
    return found


def _copies_to_host(call: cst.Call) -> bool:
    """`x.cpu()`, `x.to("cpu")`, `x.to(device=torch.device("cpu"))`."""
    if method_call(call, "cpu") is not None:
        return True
    if method_call(call, "to") is None:
        return False
    given = keyword(call, "device") or (call.args[0] if call.args and call.args[0].keyword is None else None)
    return given is not None and host_device(given.value)


def _keeps_device(call: cst.Call, via: cst.CSTNode, torch: dict[str, str]) -> bool:
    """A torch function or a tensor method, whose result is where its tensors are; a method called on the
    partner itself counts too (`norm.abs()`), since it is a tensor, unless it places it (`.to()`, `.cuda()`):
    then the code chose where the partner goes."""
    if via is call.func:  # the partner's own method, not the partner called as a function
        return isinstance(via, cst.Attribute) and method_call(call, *syntax.MOVES, "cpu") is None
    callee = dotted(call.func)
    head = callee.split(".")[0] if callee else None
    if head is not None and torch.get(head, "").startswith("torch"):
        return True
    return isinstance(call.func, cst.Attribute) and (
        call.func.attr.value in TENSOR_METHODS or call.func.attr.value.endswith("_")
    )


def _moved_beside(partner: cst.Name, copy: cst.Name | None) -> cst.Call:
    """`partner.to(copy.device)` beside a named copy; `partner.cpu()` beside one the line makes."""
    if copy is None:
        return cst.Call(func=cst.Attribute(value=partner, attr=cst.Name("cpu")))
    device = cst.Attribute(value=cst.Name(copy.value), attr=cst.Name("device"))
    return cst.Call(func=cst.Attribute(value=partner, attr=cst.Name("to")), args=[cst.Arg(value=device)])


CODEMOD = MovePartnerToCpuCopy
