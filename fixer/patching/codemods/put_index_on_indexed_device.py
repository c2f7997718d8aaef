"""index-on-other-device: an index or mask on one device used to pick from a tensor on another.

On the innermost line of the file that the traceback names, each indexing is read: a subscript
(`x[idx]`, `x[rows, cols]`, `x[(ys, xs)]`, `x[scores > t]`) and the index argument of `torch.gather`,
`torch.index_select` and `torch.take_along_dim`, in function or method form. Two rewrites:

- the indexed tensor is made right there by a torch factory without `device=` (`torch.eye(n)[labels]`):
  it is made on the index's device instead, `torch.eye(n, device=labels.device)[labels]`;
- otherwise the index follows the tensor it picks from, as the entry's fix says:
  `values[mask]` becomes `values[mask.to(values.device)]`.

Literals, slices, arithmetic, loop counters (`for i in range(n)`), `None` and `...` are never moved,
and neither is an indexed value this line computes with a call (`f(x)[i]`), whose device it cannot
name without running the call twice.
Only the file that holds the innermost frame is patched: an outer file merely called into the indexing.

Safety: either rewrite gives the same values and puts the result where the indexed tensor is, which
is what PyTorch before 1.13 did silently; the line could only raise otherwise. That holds when what
moves is a tensor on every run of the line: safe where the file shows it is one (made by torch or a
tensor method, a comparison of one, or a name bound to those), unsafe where only this run's message
says so. A parameter of the function (`__getitem__(self, item)`) may also be an int or a slice on
other calls: it moves only when it is a tensor, `item.to(d) if torch.is_tensor(item) else item`.
"""

from __future__ import annotations

from typing import cast

import libcst as cst
from libcst.metadata import PositionProvider

from fixer.patching.base import dotted, resolved, torch_names, walk
from fixer.patching.codemods.add_device_to_tensor_factory import MOVED_FACTORIES, factory, made_on
from fixer.patching.flow import Before, PlannedCodemod, literal, plainly_tensor

# Functions whose index argument must be on the input's device: name -> (position of the index among the
# positional arguments, the input first; its keyword).
_INDEXING = {"gather": (2, "index"), "index_select": (2, "index"), "take_along_dim": (1, "indices")}
_NOT_INDICES = frozenset({"None", "True", "False", "Ellipsis"})
_SAME_VALUES = "the same values, on the device PyTorch before 1.13 gave them"


class PutIndexOnIndexedDevice(PlannedCodemod):
    id = "put-index-on-indexed-device"
    summary = "put the index on the device of the tensor it picks from (or make that tensor where the index is)"
    innermost_only = True

    def plan(self, module: cst.Module) -> None:
        if not self.target.lines or not self.target.innermost:
            return  # an outer file only called into the line that indexed
        self._names = torch_names(module)
        self._torch = next((local for local, name in self._names.items() if name == "torch"), None)
        line = self.target.lines[-1]
        found = [
            (index, indexed, self.before(index))
            for node in walk(module)
            if isinstance(node, (cst.Subscript, cst.Call)) and self._spans(node, line)
            for index, indexed in self._indexings(node)
        ]
        counters = _counters(module)
        found = [
            (index, indexed, before)
            for index, indexed, before in found
            if not _bound_to_literal(index, before) and not (isinstance(index, cst.Name) and index.value in counters)
        ]
        # Where the file shows which indices are tensors, those are the ones on the other device; the rest
        # (a loop counter, an int key) stay as they are.
        tensors = [item for item in found if _tensor(item[0], item[2])]
        for index, indexed, before in tensors or found:
            self._fix(index, indexed, before)

    def _spans(self, node: cst.CSTNode, line: int) -> bool:
        span = self.get_metadata(PositionProvider, node)
        return span.start.line <= line <= span.end.line

    def _indexings(self, node: cst.Subscript | cst.Call) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
        """(index, the value it picks from) for a subscript or an indexing call."""
        if isinstance(node, cst.Subscript):
            found = []
            for element in node.slice:
                if isinstance(element.slice, cst.Index):
                    value = element.slice.value
                    parts = [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
                    found += [(part, node.value) for part in parts if _may_index(part)]
            return found
        name = resolved(node.func, self._names) or ""
        function = name.rsplit(".", 1)[-1]
        if function not in _INDEXING:
            return []
        position, word = _INDEXING[function]
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        if name.startswith("torch."):
            source = positional[0] if positional else None
        elif isinstance(node.func, cst.Attribute):
            source, position = node.func.value, position - 1
        else:
            return []
        keyed = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == word), None)
        index = keyed if keyed is not None else (positional[position] if len(positional) > position else None)
        if source is None or index is None or not _may_index(index):
            return []
        return [(index, source)]

    def _fix(self, index: cst.BaseExpression, indexed: cst.BaseExpression, before: Before) -> None:
        code = cst.Module([]).code_for_node
        made = factory(indexed, self._names) if isinstance(indexed, cst.Call) else None
        if made is not None:
            if not _readable(index):
                return
            device = _attr(index, "device")
            moved = made in MOVED_FACTORIES
            self.rewrite(indexed, lambda updated: made_on(cast(cst.Call, updated), device, moved=moved))
            self._judge(index, before, f"`{code(indexed)}` is made on `{code(device)}`, where its index is")
            return
        if not _readable(indexed):
            return
        device = _attr(indexed, "device")
        what = f"`{code(index)}` moves to `{code(device)}`, the device of the tensor it indexes"
        torch = self._torch
        if isinstance(index, cst.Name) and torch and self.received(index, before, index.value) is not None:
            # A parameter: callers may also pass an int or a slice, which stay as they are.
            self.rewrite(index, lambda updated: _moved_if_tensor(updated, device, torch))
            self.judge("safe", f"{what} when it is a tensor (an int or a slice stays): {_SAME_VALUES}")
            return
        self.rewrite(index, lambda updated: _moved(updated, device))
        self._judge(index, before, what)

    def _judge(self, index: cst.BaseExpression, before: Before, what: str) -> None:
        if _tensor(index, before):
            self.judge("safe", f"{what}: {_SAME_VALUES}")
        else:
            shown = cst.Module([]).code_for_node(index)
            self.judge(
                "unsafe",
                f"{what}; `{shown}` is a tensor in this run (the message says so), but if the line also runs "
                "with an int or a slice there, that has no `.device` or `.to`: guard it",
            )


def _tensor(value: cst.BaseExpression, before: Before) -> bool:
    """A tensor on every run, as the file shows: what `plainly_tensor` says, or an elementwise comparison
    of one (`scores > t`, also through a name bound to it), which is a mask."""
    if isinstance(value, cst.Name):
        bound = before.binding(value.value)
        if bound is not None and isinstance(bound.value, cst.Comparison):
            value = bound.value
    if isinstance(value, cst.Comparison):
        sides = [value.left, *(c.comparator for c in value.comparisons)]
        return any(plainly_tensor(side, before) for side in sides)
    return plainly_tensor(value, before)


def _counters(module: cst.Module) -> set[str]:
    """Names a loop counts with, `i` in `for i in range(n)` or `for i, x in enumerate(xs)`: ints, never a
    tensor index on another device."""
    found: set[str] = set()
    for node in walk(module):
        if not isinstance(node, cst.For) or not isinstance(node.iter, cst.Call):
            continue
        function = dotted(node.iter.func)
        target: cst.BaseExpression = node.target
        if function == "enumerate" and isinstance(target, cst.Tuple) and target.elements:
            target = target.elements[0].value
        if function in ("range", "enumerate") and isinstance(target, cst.Name):
            found.add(target.value)
    return found


def _bound_to_literal(value: cst.BaseExpression, before: Before) -> bool:
    """A name last bound to a number or a string: an int index, not a tensor."""
    if not isinstance(value, cst.Name):
        return False
    bound = before.binding(value.value)
    made = bound.value if bound is not None else None
    return made is not None and literal(made) and not isinstance(made, cst.Comparison)


def _readable(value: cst.BaseExpression) -> bool:
    """A value whose `.device` can be read again without running anything: a name, an attribute or an item
    of one, not a slice of it (`x[a:b]` lives where `x` does, but reads no better)."""
    for node in walk(value):
        if isinstance(node, (cst.Call, cst.Slice, cst.BinaryOperation, cst.Comparison, cst.UnaryOperation)):
            return False
    root = value
    while isinstance(root, (cst.Subscript, cst.Attribute)):
        root = root.value
    return isinstance(root, cst.Name) and root.value not in ("torch", "np", "numpy")


def _may_index(value: cst.BaseExpression) -> bool:
    """Could be a tensor index: not a number, string, slice, None or `...` (a comparison is a mask)."""
    if isinstance(value, cst.Comparison):
        return True
    if literal(value) or isinstance(value, (cst.Ellipsis, cst.UnaryOperation, cst.BinaryOperation)):
        return False  # arithmetic in an index is almost always on ints (`i % n`, `j + 1`)
    return not (isinstance(value, cst.Name) and value.value in _NOT_INDICES)


def _moved(index: cst.CSTNode, device: cst.BaseExpression) -> cst.CSTNode:
    """`index.to(device)`, with brackets round an index that needs them (`(scores > t).to(d)`)."""
    assert isinstance(index, cst.BaseExpression)
    inner = index
    if not isinstance(inner, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and not inner.lpar:
        inner = inner.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(func=cst.Attribute(value=inner, attr=cst.Name("to")), args=[cst.Arg(device)])


def _moved_if_tensor(index: cst.CSTNode, device: cst.BaseExpression, torch: str) -> cst.CSTNode:
    """`index.to(device) if torch.is_tensor(index) else index`."""
    assert isinstance(index, cst.BaseExpression)
    test = cst.parse_expression(f"{torch}.is_tensor({cst.Module([]).code_for_node(index)})")
    return cst.IfExp(test=test, body=cast(cst.BaseExpression, _moved(index, device)), orelse=index)


def _attr(value: cst.BaseExpression, attr: str) -> cst.Attribute:
    return cst.Attribute(value=value.deep_clone(), attr=cst.Name(attr))


CODEMOD = PutIndexOnIndexedDevice
