"""Reading Python the way PyTorch code is written: what a name stands for, layers, factories, moves.

Shared by the detectors and the traceback probes; stdlib `ast` only, so explaining stays light.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator
from functools import lru_cache

# Factories that put a new tensor on the default device (the CPU) unless told otherwise: PyTorch's
# creation ops, its spectral windows and its random samplers; `*_like` ones follow their argument, so
# they are not here.
FACTORIES = frozenset(
    {"zeros", "ones", "empty", "empty_strided", "full", "rand", "randn", "randint", "randperm", "arange", "range",
     "linspace", "logspace", "eye", "normal", "tensor", "as_tensor", "asarray", "from_numpy", "frombuffer",
     "from_file", "sparse_coo_tensor", "sparse_csr_tensor", "tril_indices", "triu_indices", "hann_window",
     "hamming_window", "blackman_window", "bartlett_window", "kaiser_window", "Tensor", "FloatTensor",
     "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "BoolTensor", "ByteTensor"}
)  # fmt: skip
# Calls that place a tensor or module on a device, or take another tensor's device.
MOVES = frozenset({"to", "cuda", "type_as", "mps", "xpu", "to_empty"})
# Layers that own weights: built on the CPU, they must be moved to meet the model's device.
WEIGHTED_LAYERS = frozenset(
    {"Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
     "ConvTranspose3d", "LayerNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d",
     "InstanceNorm2d", "InstanceNorm3d", "Embedding", "EmbeddingBag", "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell",
     "RNNCell", "MultiheadAttention", "Sequential", "PReLU", "RMSNorm", "Transformer", "TransformerEncoderLayer",
     "TransformerDecoderLayer"}
)  # fmt: skip

Function = ast.FunctionDef | ast.AsyncFunctionDef


def dotted(node: ast.expr) -> str | None:
    """`torch.nn.Linear` for a Name/Attribute chain, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def root_name(node: ast.expr) -> str | None:
    """The name an expression reads from: `c2w` for `c2w[:3, :3].T`, `self` for `self.w.t()`; None for
    a literal, or a call of anything but a method of such a value."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute | ast.Subscript | ast.Starred):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        else:
            return None


def aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> what it stands for: `torch`, `torch.nn`, `torch.nn.functional`, or a class or
    function imported from them (`from torch.nn import Linear` -> `torch.nn.Linear`)."""
    names: dict[str, str] = {"torch": "torch"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "torch" or alias.name.startswith("torch."):
                    names[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and (node.module + ".").startswith("torch."):
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def resolve(node: ast.expr, names: dict[str, str]) -> str | None:
    """The full dotted name a callee stands for: `nn.Linear` -> `torch.nn.Linear` after `import torch.nn
    as nn`; names that come from nowhere known resolve to themselves."""
    return resolve_name(dotted(node), names)


def resolve_name(name: str | None, names: dict[str, str]) -> str | None:
    """`resolve` for a dotted name already read, from Python's AST or LibCST's."""
    if name is None:
        return None
    head, _, rest = name.partition(".")
    full = names.get(head)
    if full is None:
        return name
    return f"{full}.{rest}" if rest else full


def factory(call: ast.Call, names: dict[str, str]) -> str | None:
    """`zeros` for `torch.zeros(...)` (however torch was imported), else None."""
    full = resolve(call.func, names)
    if full and full.startswith("torch.") and full.count(".") == 1:
        attr = full.split(".", 1)[1]
        return attr if attr in FACTORIES else None
    return None


def layer(call: ast.Call, names: dict[str, str]) -> str | None:
    """`Linear` for `nn.Linear(...)`, `torch.nn.Linear(...)` or an imported `Linear(...)` that has weights."""
    full = resolve(call.func, names)
    if full and full.startswith("torch.nn.") and full.count(".") == 2:
        attr = full.rsplit(".", 1)[1]
        return attr if attr in WEIGHTED_LAYERS or attr.startswith("Lazy") else None
    return None


def constructs(call: ast.Call) -> bool:
    """`Head(...)`, `nn.Linear(...)`, `models.ResNet(...)`: a call of a capitalised callable."""
    name = dotted(call.func)
    return name is not None and name.rsplit(".", 1)[-1][:1].isupper()


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def is_move(node: ast.expr) -> bool:
    """`x.to(d)`, `Net().cuda()`, `x.float().to(d)`: a method-call chain with a move in it."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in MOVES:
            return True
        node = node.func.value
    return False


def moved(node: ast.expr) -> str | None:
    """The dotted name `x` when `node` is `x.to(...)`/`x.cuda()` (through other method calls:
    `x.float().to(d)`), else None."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in MOVES:
            inner = node.func.value
            while isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute):
                inner = inner.func.value
            return dotted(inner)
        node = node.func.value
    return None


def callee(call: ast.Call) -> str | None:
    """`model` for `model(x)`, `model.generate(x)` and `model.forward(x)`."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in ("generate", "forward"):
        func = func.value
    return dotted(func)


def base_name(node: ast.expr, modules: Collection[str] = ()) -> str | None:
    """The name a tensor expression starts from: `x` for `x`, `x.unsqueeze(1)`, `x[0].float()`; None when
    it is moved on the way (`x.to(d)`), starts from no name, or calls a function of one of `modules`
    (`torch.randn(...)` makes a tensor, it does not start from one)."""
    while True:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in MOVES:
                return None
            node = node.func.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            name = dotted(node)
            return None if name is None or name.split(".")[0] in modules else name


def placed(node: ast.AST, moves: Collection[str] = MOVES) -> bool:
    """The expression puts its result on a device: a move anywhere in its call chain, or `device=`."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            if isinstance(sub.func, ast.Attribute) and sub.func.attr in moves:
                return True
            if keyword(sub, "device") is not None:
                return True
    return False


def placed_on(call: ast.Call, moves: tuple[str, ...] = ("to",)) -> ast.expr | None:
    """The device a call places its result on: its `device=`, or the first argument of a move (`.to(d)`)."""
    device = keyword(call, "device")
    if device is None and isinstance(call.func, ast.Attribute) and call.func.attr in moves and call.args:
        device = call.args[0]
    return device


def copies_to_cpu(node: ast.expr) -> bool:
    """`x.cpu()`, `x.to("cpu")`, `x.to(torch.device("cpu"))`, `x.to(device="cpu")`."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if node.func.attr == "cpu":
        return True
    if node.func.attr != "to":
        return False
    where = placed_on(node)
    if isinstance(where, ast.Call) and dotted(where.func) in ("torch.device", "device") and where.args:
        where = where.args[0]
    return isinstance(where, ast.Constant) and isinstance(where.value, str) and where.value.startswith("cpu")


def tensor_sources(
    value: ast.expr, names: dict[str, str], *, stop: Collection[str] = (), bound: frozenset[str] = frozenset()
) -> Iterator[ast.expr]:
    """The value and the sub-expressions its tensor is computed from, and so takes its device from: torch
    functions' arguments, a method's receiver (`x.float()`), arithmetic, indexing, branches, a list's
    items, a comprehension's element. What another callable returns is whatever it makes: `Segments(faces)`
    is no tensor because `faces` is one. A method in `stop` (a move) ends the search there; a
    comprehension's own variables are left to it."""
    if isinstance(value, ast.Name) and value.id in bound:
        return
    yield value
    parts: list[ast.expr] = []
    if isinstance(value, ast.Call):
        if isinstance(value.func, ast.Attribute) and value.func.attr in stop:
            return
        if (resolve(value.func, names) or "").startswith("torch."):
            parts = [*value.args, *(k.value for k in value.keywords)]
        elif isinstance(value.func, ast.Attribute):
            parts = [value.func.value]
    elif isinstance(value, ast.BinOp):
        parts = [value.left, value.right]
    elif isinstance(value, ast.UnaryOp):
        parts = [value.operand]
    elif isinstance(value, ast.Subscript | ast.Starred):
        parts = [value.value]
    elif isinstance(value, ast.IfExp):
        parts = [value.body, value.orelse]
    elif isinstance(value, ast.List | ast.Tuple):
        parts = list(value.elts)
    elif isinstance(value, ast.ListComp | ast.GeneratorExp):
        bound = bound | {n.id for g in value.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        parts = [value.elt]
    for part in parts:
        yield from tensor_sources(part, names, stop=stop, bound=bound)


def moved_where_made(call: ast.Call, statement: ast.stmt) -> bool:
    """`torch.zeros(n).to(x.device)`, `nn.Linear(3, 4).cuda()`: moved in the statement that makes it."""
    return any(
        isinstance(node.func, ast.Attribute)
        and node.func.attr in MOVES
        and any(sub is call for sub in ast.walk(node.func.value))
        for node in calls(statement)
    )


@lru_cache(maxsize=1 << 14)
def calls(node: ast.AST) -> tuple[ast.Call, ...]:
    """Every call under `node`, once per node: the detectors ask it of the same statements and classes
    many times (trees are never changed, and nodes hash by identity)."""
    return tuple(sub for sub in ast.walk(node) if isinstance(sub, ast.Call))


def assigned_names(statement: ast.stmt) -> list[str]:
    """Dotted names a statement binds: `a = ...`, `self.x: T = ...`, `a, b = ...`, `a += ...`."""
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = list(statement.targets)
    elif isinstance(statement, ast.AnnAssign | ast.AugAssign):
        targets = [statement.target]
    names: list[str] = []
    for target in targets:
        elements = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
        names.extend(name for element in elements if (name := dotted(element)))
    return names


def value_of(statement: ast.stmt) -> ast.expr | None:
    if isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign):
        return statement.value
    return None


def statements(node: ast.AST) -> Iterator[ast.stmt]:
    """Every statement under `node`, in source order, nested bodies included; not into nested
    functions or classes, which run at another time."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt):
            yield child
            if not isinstance(child, Function | ast.ClassDef):
                yield from statements(child)
        elif isinstance(child, ast.excepthandler | ast.match_case):
            yield from statements(child)


@lru_cache(maxsize=1 << 12)
def all_statements(node: ast.AST) -> tuple[ast.stmt, ...]:
    """Every statement under `node`, methods of a class included, in source order (once per node, as
    `calls`)."""
    found = [sub for sub in ast.walk(node) if isinstance(sub, ast.stmt) and sub is not node]
    return tuple(sorted(found, key=lambda s: (s.lineno, s.col_offset)))


def parse_line(code: str) -> ast.AST | None:
    """One printed source line as a tree, when it is a statement or an expression on its own; a line
    that opens a block (`for x in y:`) or continues one (`else:`) parses with a body added."""
    text = code.strip()
    for candidate in (text, text + " pass", "if 1:\n " + text + " pass"):
        try:
            return ast.parse(candidate)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return None


# Bases no nn.Module has; any other base, imported from elsewhere, may be one.
_PLAIN_BASES = frozenset({"object", "dict", "list", "tuple", "set", "str", "int", "float", "Exception", "type"})


def may_be_module(cls: ast.ClassDef, module: ast.Module, within: frozenset[str] = frozenset()) -> bool:
    """False for a class with no base but plain ones, or whose every other base is a class of the same
    file that cannot be a module either (`class Segment(TimedText)`, `class TimedText:`)."""
    local = {node.name: node for node in module.body if isinstance(node, ast.ClassDef)}
    for base in cls.bases:
        name = dotted(base)
        if name in _PLAIN_BASES:
            continue
        defined = local.get(name) if name else None
        if defined is None or defined.name in within or may_be_module(defined, module, within | {cls.name}):
            return True
    return False
