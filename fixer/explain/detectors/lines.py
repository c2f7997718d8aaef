"""Facts the printed failing lines show, from any machine: what a traceback quotes of the code.

A line is read as a tree when it parses on its own (`Line.tree`); a line that does not (the first
line of a multi-line call, a line cut in the paste) is read as Python tokens, which never fail.
Lines of PyTorch and the standard library are left out: the code that matters is the user's, or a
third-party library's, where the same mistakes are made.
"""

from __future__ import annotations

import ast
import re
import tokenize
from collections.abc import Callable, Iterator

from fixer.explain.detectors import detector, syntax
from fixer.explain.detectors.code import Code, Line

_OPTIMIZER_STATE = frozenset(
    {"exp_avg", "exp_avgs", "exp_avg_sq", "exp_avg_sqs", "max_exp_avg_sq", "max_exp_avg_sqs", "momentum_buffer",
     "momentum_buffer_list", "state_steps", "state_step", "step_t"}
)  # fmt: skip
_OPTIMIZER_WORDS = re.compile(r"(?:\w+\.)*(?:optimizer|optim|opt)\w*")
_STATE_KEY = re.compile(r"""\[\s*["'](?:step|exp_avg\w*|momentum_buffer)["']\s*\]""")
_HIDDEN = frozenset({"h0", "c0", "h_0", "c_0", "hx", "cx", "hidden", "hc", "init_state", "initial_state", "prev_state"})
_RANK = frozenset({"local_rank", "rank", "gpu", "gpu_id", "device_id", "local_process_index", "process_index"})
# Attributes that are numbers or flags, not tensors, however they are used.
_NOT_TENSORS = re.compile(
    r"training|device|dtype|\w*(?:dim|size|len|num|count|steps?|epoch|rate|eps|ratio)s?|num_\w*|n_\w*"
)
_TENSOR_OPS = frozenset({"matmul", "mm", "bmm", "mul", "add", "sub", "div", "where", "cat", "stack", "einsum"})
_COLLECTIVES = frozenset(
    {"all_reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce", "reduce_scatter", "gather",
     "scatter", "all_to_all", "send", "recv", "isend", "irecv"}
)  # fmt: skip
_INDEXING = frozenset(
    {"gather", "scatter", "scatter_", "scatter_add", "scatter_add_", "index_select", "index_add", "index_add_",
     "index_copy", "index_copy_", "index_fill", "index_fill_", "index_put", "index_put_", "masked_select", "take",
     "take_along_dim"}
)  # fmt: skip
# Words people name these things by, in every project: not one project's names.
_RECURRENT = re.compile(r"(?i)lstm|gru|rnn|recurrent|encoder|decoder")
_INDEX_WORDS = re.compile(r"\w*(?:mask|idx|index|indices|inds|ids|keep|sel|select|pos|valid)\w*")
_MODEL_WORDS = re.compile(r"(?:self\.)?(?:model|net|network|classifier|encoder|decoder|backbone)\w*")
_LOSS_WORDS = re.compile(r"(?i)(?:self\.)?(?:loss|criterion|crit|metric|accuracy|acc|score)\w*")
_LAYER_WORDS = re.compile(
    r"(?:layer|block|blk|conv\w*|linear|lin|fc|head|branch|module|mod|op|stage|expert|decoder_layer|encoder_layer"
    r"|cell|mlp|layer_?norm|norm|ln|bn|batch_?norm|group_?norm|down_?pool|up_?conv|proj\w*|embed\w*|lstm|gru|rnn"
    r"|attn)\d*"
)
_MASK_MAKER = re.compile(r"[\w.]*(?:create|make|build|get|generate)_?\w*masks?\w*")
_INPUT_WORDS = frozenset({"src", "trg", "tgt", "input", "inputs", "input_ids", "batch", "x", "tokens", "ids"})
_FACTORY_CALL = re.compile(r"(?<![\w.])torch\.(?:" + "|".join(sorted(syntax.FACTORIES)) + r")\(")
_TORCH_NAMES = {"torch": "torch", "nn": "torch.nn", "F": "torch.nn.functional"}


def _lines(code: Code, *, libraries: bool = False) -> Iterator[Line]:
    """The printed lines to read: the user's, and with `libraries`, third-party code's too."""
    return (line for line in code.lines if line.user or (libraries and line.third_party))


def _strings(line: Line) -> Iterator[str]:
    for token in line.tokens:
        if token.type == tokenize.STRING:
            try:
                value = ast.literal_eval(token.string)
            except (ValueError, SyntaxError):
                continue
            if isinstance(value, str):
                yield value


def _callee(call: ast.Call) -> str:
    return syntax.dotted(call.func) or ""


def _last(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _moves(line: Line) -> bool:
    return bool(re.search(r"\.(?:to|cuda|type_as)\(", line.code))


def _said(line: Line) -> str:
    return f"{line.where}: `{line.code.strip()}`"


def _line_detector(
    id: str, *, finds: str, libraries: bool = False
) -> Callable[[Callable[[Line], bool]], Callable[[Line], bool]]:
    """Registers a fact about one printed line as a detector that names each line it holds on."""

    def register(holds: Callable[[Line], bool]) -> Callable[[Line], bool]:
        def run(code: Code) -> Iterator[str]:
            return (_said(line) for line in _lines(code, libraries=libraries) if holds(line))

        detector(id, reads="failing lines", finds=finds)(run)
        return holds

    return register


@_line_detector(
    "optimizer-state-on-line",
    finds="a printed line works on optimizer state (exp_avg, momentum_buffer, state_steps) or steps an optimizer",
    libraries=True,
)
def optimizer_state_on_line(line: Line) -> bool:
    """`optimizer.step()`, or a step that takes the optimizer (`scaler.step(optimizer)`, as AMP does)."""
    steps = any(
        _last(_callee(c)) == "step"
        and any(
            _OPTIMIZER_WORDS.fullmatch(name)
            for name in (_callee(c).removesuffix(".step"), *(syntax.dotted(a) or "" for a in c.args))
        )
        for c in line.calls
    )
    return bool(line.names & _OPTIMIZER_STATE or steps or _STATE_KEY.search(line.code))


@_line_detector(
    "rnn-state-passed-on-line", finds="a printed line passes an explicit initial state to a recurrent layer"
)
def rnn_state_passed_on_line(line: Line) -> bool:
    for call in line.calls:
        if not _RECURRENT.search(_last(_callee(call))) or len(call.args) < 2:
            continue
        state = call.args[1]
        parts = state.elts if isinstance(state, ast.Tuple) else [state]
        if any(_last(syntax.dotted(p) or "") in _HIDDEN | {"h", "state", "states"} for p in parts):
            return True
    return False


@_line_detector(
    "rnn-state-made-on-line", finds="a printed line makes an initial hidden state with a torch factory and no device="
)
def rnn_state_made_on_line(line: Line) -> bool:
    made_here = isinstance(line.tree, ast.Module) and any(
        set(map(_last, syntax.assigned_names(s))) & _HIDDEN
        and any(syntax.factory(c, _TORCH_NAMES) and syntax.keyword(c, "device") is None for c in syntax.calls(s))
        for s in line.tree.body
    )
    return made_here or any(re.fullmatch(r"(?i)init_?hidden\w*", _last(_callee(c))) for c in line.calls)


@_line_detector(
    "tensor-attribute-in-arithmetic-on-line",
    finds="a printed line computes with a tensor attribute of a module (self.anchors + x), not a layer call",
    libraries=True,
)
def tensor_attribute_in_arithmetic_on_line(line: Line) -> bool:
    if line.tree is None or _moves(line) or "device" in line.names:
        return False
    operands: list[ast.expr] = []
    for node in ast.walk(line.tree):
        if isinstance(node, ast.BinOp):
            operands += [node.left, node.right]
        elif isinstance(node, ast.AugAssign):
            operands.append(node.value)
        elif isinstance(node, ast.Call) and _callee(node) in {f"torch.{op}" for op in _TENSOR_OPS}:
            operands += list(node.args)
    return any(_plain_attribute(operand) for operand in operands)


def _plain_attribute(node: ast.expr) -> bool:
    """`self.lim` or a slice of it (`self.table[:n]`), not `self.lim(...)`, `self.lim[0]`, `self.lim.weight`
    nor `self.dim`: an index may pick from a list, a slice of a table keeps it a tensor."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        node = node.value
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and not _NOT_TENSORS.fullmatch(node.attr)
    )


@_line_detector(
    "set-device-from-rank-on-line",
    finds="a printed line picks the GPU from the process's rank (set_device(local_rank))",
)
def set_device_from_rank_on_line(line: Line) -> bool:
    return any(_last(_callee(c)) == "set_device" and c.args and _rank_like(c.args[0]) for c in line.calls)


def _rank_like(node: ast.expr) -> bool:
    if isinstance(node, ast.Call) and syntax.dotted(node.func) == "int" and node.args:
        node = node.args[0]
    if isinstance(node, ast.Subscript):  # os.environ["LOCAL_RANK"]
        key = node.slice
        return isinstance(key, ast.Constant) and str(key.value).upper() in ("LOCAL_RANK", "RANK")
    return _last(syntax.dotted(node) or "") in _RANK


@_line_detector(
    "fixed-gpu-on-line",
    finds="a printed line names a fixed GPU other than 0, or takes it from a configured list (gpu_ids[0])",
)
def fixed_gpu_on_line(line: Line) -> bool:
    fixed = any(re.fullmatch(r"cuda:[1-9]\d*", s) for s in _strings(line))
    for call in line.calls:
        name, first = _last(_callee(call)), call.args[0] if call.args else None
        if name in ("cuda", "to") and isinstance(first, ast.Constant) and isinstance(first.value, int):
            fixed |= first.value >= 1
        if name == "set_device" and first is not None and not _rank_like(first):
            fixed |= isinstance(first, ast.Constant | ast.Subscript)
        ids = syntax.keyword(call, "device_ids")
        fixed |= isinstance(ids, ast.List) and len(ids.elts) > 1
    return fixed


@_line_detector(
    "bare-cuda-on-line", finds='a printed line asks for "cuda" or .cuda() without an index, which means the current GPU'
)
def bare_cuda_on_line(line: Line) -> bool:
    bare = any(
        (isinstance(c.func, ast.Attribute) and c.func.attr == "cuda" and not c.args and not c.keywords)
        or any(isinstance(a, ast.Constant) and a.value == "cuda" for a in (*c.args, *(k.value for k in c.keywords)))
        for c in line.calls
    )  # fmt: skip
    return bare or (line.tree is None and bool(re.search(r"""\.cuda\(\s*\)|["']cuda["']""", line.code)))


@_line_detector(
    "factory-without-device-on-line",
    finds="a printed line, yours or a library's, makes a tensor with a torch factory and no device=",
    libraries=True,
)
def factory_without_device_on_line(line: Line) -> bool:
    if "device" in line.names or _moves(line):
        return False
    return any(syntax.factory(c, _TORCH_NAMES) for c in line.calls) or (
        line.tree is None and bool(_FACTORY_CALL.search(line.code))
    )


@_line_detector(
    "layer-built-and-called-on-line",
    finds="a printed line builds a layer and calls it at once (nn.Linear(...)(x)): new weights, on the CPU",
)
def layer_built_and_called_on_line(line: Line) -> bool:
    return any(isinstance(c.func, ast.Call) and _is_layer_class(_callee(c.func)) for c in line.calls)


def _is_layer_class(name: str) -> bool:
    return bool(re.fullmatch(r"(?:torch\.)?nn\.[A-Z]\w*", name))


@_line_detector("layer-built-on-line", finds="a printed line builds a layer that has weights")
def layer_built_on_line(line: Line) -> bool:
    return any(_is_layer_class(_callee(c)) and _last(_callee(c)) in syntax.WEIGHTED_LAYERS for c in line.calls)


@_line_detector(
    "layer-from-container-on-line",
    finds="a printed line calls a layer taken out of a container attribute (self.layers[i](x))",
)
def layer_from_container_on_line(line: Line) -> bool:
    return any(
        isinstance(c.func, ast.Subscript) and (syntax.dotted(c.func.value) or "").startswith("self.")
        for c in line.calls
    )


@_line_detector(
    "local-layer-called-on-line",
    finds="a printed line calls a layer held in a local (loop) variable, not in a registered attribute",
)
def local_layer_called_on_line(line: Line) -> bool:
    return any(isinstance(c.func, ast.Name) and _LAYER_WORDS.fullmatch(c.func.id) and c.args for c in line.calls)


@_line_detector(
    "model-called-on-line", finds="a printed line calls the model on its data without moving that data there"
)
def model_called_on_line(line: Line) -> bool:
    return not _moves(line) and any(_MODEL_WORDS.fullmatch(syntax.callee(c) or "") for c in line.calls)


@_line_detector(
    "argument-placed-at-call-on-line",
    finds="a printed line moves an argument to the device (or makes it there) right at the call",
)
def argument_placed_at_call_on_line(line: Line) -> bool:
    return any(
        syntax.is_move(a) or syntax.keyword(a, "device") is not None
        for call in line.calls
        for a in call.args
        if isinstance(a, ast.Call)
    )


@_line_detector(
    "mask-built-from-inputs-on-line",
    finds="a printed line builds a mask from the inputs with a helper (make_mask(src)), on the inputs' device",
)
def mask_built_from_inputs_on_line(line: Line) -> bool:
    return any(
        _MASK_MAKER.fullmatch(_callee(c)) and any(_last(syntax.dotted(a) or "") in _INPUT_WORDS for a in c.args)
        for c in line.calls
    )


@_line_detector("numpy-method-on-line", finds="a printed line calls .numpy() on a tensor")
def numpy_method_on_line(line: Line) -> bool:
    return bool(re.search(r"\.numpy\(\s*\)", line.code))


@_line_detector("numpy-function-on-line", finds="a printed line passes tensors to a NumPy function")
def numpy_function_on_line(line: Line) -> bool:
    return any(_callee(c).split(".")[0] in ("np", "numpy") for c in line.calls) or (
        line.tree is None and bool(re.search(r"(?<![\w.])(?:np|numpy)\.\w+\(", line.code))
    )


@_line_detector(
    "cpu-copy-combined-on-line",
    finds="a printed line copies a tensor to the CPU (.cpu(), .to('cpu')) and computes with the copy and another value",
    libraries=True,
)
def cpu_copy_combined_on_line(line: Line) -> bool:
    """`x.data.cpu().add_(-low)`, `s.cpu() * norm`, `torch.cat([a.cpu(), b])`: the copy meets a value the line
    does not copy, which may still be on the GPU. A copy only converted (`.numpy()`, `.item()`) or moved
    again meets nothing."""
    if line.tree is None:
        return False
    parents = {id(child): node for node in ast.walk(line.tree) for child in ast.iter_child_nodes(node)}
    return any(_copy_meets_another(call, parents) for call in line.calls if syntax.copies_to_cpu(call))


_LEAVES_TORCH = frozenset({"numpy", "tolist", "item", "__array__"})


def _copy_meets_another(copy: ast.Call, parents: dict[int, ast.AST]) -> bool:
    node: ast.expr = copy
    while True:
        parent = parents.get(id(node))
        method = parents.get(id(parent)) if isinstance(parent, ast.Attribute) else None
        if not (isinstance(parent, ast.Attribute) and isinstance(method, ast.Call) and method.func is parent):
            break
        if parent.attr in _LEAVES_TORCH or parent.attr in syntax.MOVES:
            return False
        if any(not isinstance(a, ast.Constant) for a in method.args):
            return True  # `copy.add_(other)`
        node = method
    if isinstance(parent, ast.BinOp | ast.Compare):
        sides = [parent.left, parent.right] if isinstance(parent, ast.BinOp) else [parent.left, *parent.comparators]
        return any(side is not node and not isinstance(side, ast.Constant) for side in sides)
    if isinstance(parent, ast.List | ast.Tuple):
        others = [e for e in parent.elts if e is not node and not isinstance(e, ast.Constant)]
        return isinstance(parents.get(id(parent)), ast.Call) and bool(others)
    return False


@_line_detector("torch-load-without-map-location-on-line", finds="a printed line calls torch.load without map_location")
def torch_load_without_map_location_on_line(line: Line) -> bool:
    return bool(re.search(r"torch\.load\((?![^)]*map_location)", line.code))


@_line_detector("map-location-to-gpu-n-on-line", finds="a printed line maps a checkpoint onto a GPU other than 0")
def map_location_to_gpu_n_on_line(line: Line) -> bool:
    return bool(re.search(r"""map_location\s*=\s*(?:torch\.device\()?["']cuda:[1-9]""", line.code))


_INDEXING_CALL = re.compile(r"\.(?:" + "|".join(sorted(_INDEXING, key=len, reverse=True)) + r")\(")


_PRODUCTS = frozenset({"matmul", "mm", "bmm", "einsum"})
_WEIGHT_NAMES = re.compile(rf"(?i){_MODEL_WORDS.pattern}|w\d*|weights?\w*|kernel\w*|params?|parameters")


@detector(
    "failing-line-multiplies-tensors",
    reads="failing lines",
    finds="the line that failed multiplies tensors of its own (`a @ b`, torch.matmul), none a module's attribute",
)
def failing_line_multiplies_tensors(code: Code) -> Iterator[str]:
    """Where the innermost printed line is user or library code that multiplies local tensors, `mat2` is
    the right-hand one of them, not the weight of a layer the message's wording suggests. An operand
    read from `self`, or named as a model or its weights (`x @ model`, `x @ W`), may be just that, and
    says nothing either way."""
    line = code.lines[0] if code.lines else None
    if line is None or code.cut or not (line.user or line.third_party) or line.tree is None:
        return
    operands: list[ast.expr] = []
    for node in ast.walk(line.tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            operands += [node.left, node.right]
        elif isinstance(node, ast.Call) and _last(_callee(node)) in _PRODUCTS:
            func = node.func
            receiver = (
                [func.value] if isinstance(func, ast.Attribute) and _callee(node).split(".")[0] != "torch" else []
            )
            operands += [*receiver, *node.args]
    roots = [syntax.root_name(operand) for operand in operands if not isinstance(operand, ast.Constant)]
    if roots and all(root is not None and root != "self" and not _WEIGHT_NAMES.fullmatch(root) for root in roots):
        yield _said(line)


@_line_detector(
    "indexing-op-on-line",
    finds="a printed line calls an explicit indexing op (gather, index_select, scatter, take)",
)
def indexing_op_on_line(line: Line) -> bool:
    return bool(_INDEXING_CALL.search(line.code))


@_line_detector(
    "indexing-with-index-on-line",
    finds="a printed line indexes a tensor with a mask or index tensor (x[mask], x[idx])",
)
def indexing_with_index_on_line(line: Line) -> bool:
    subscripts = [n for n in ast.walk(line.tree) if isinstance(n, ast.Subscript)] if line.tree else []
    return any(
        isinstance(name, ast.Name) and _INDEX_WORDS.fullmatch(name.id)
        for node in subscripts
        for name in ast.walk(node.slice)
    )


@_line_detector("loss-called-on-line", finds="a printed line calls a loss or metric object")
def loss_called_on_line(line: Line) -> bool:
    return any(_LOSS_WORDS.fullmatch(_callee(c) or "") and c.args for c in line.calls)


@_line_detector("collective-on-line", finds="a printed line calls a collective on a tensor it built")
def collective_on_line(line: Line) -> bool:
    names = [_callee(c) for c in line.calls]
    return any(name.split(".")[0] in ("dist", "distributed") and _last(name) in _COLLECTIVES for name in names)


@_line_detector("ddp-wrap-on-line", finds="a printed line wraps the model in DistributedDataParallel")
def ddp_wrap_on_line(line: Line) -> bool:
    return any(_last(_callee(c)) in ("DistributedDataParallel", "DDP") for c in line.calls)


@_line_detector("move-on-line", finds="a printed line moves something with .to() or .cuda()")
def move_on_line(line: Line) -> bool:
    return bool(re.search(r"\.(?:to|cuda)\(", line.code))


@_line_detector("gpu-generator-on-line", finds="a printed line makes a random generator on a GPU")
def gpu_generator_on_line(line: Line) -> bool:
    return any(
        _last(_callee(c)) == "Generator"
        and isinstance(device := syntax.keyword(c, "device"), ast.Constant)
        and str(device.value).startswith(("cuda", "mps"))
        for c in line.calls
    )


@_line_detector(
    "layer-assigned-into-wrapped-module-on-line",
    finds="a printed line assigns a new layer into a wrapped model's .module",
)
def layer_assigned_into_wrapped_module_on_line(line: Line) -> bool:
    statements = line.tree.body if isinstance(line.tree, ast.Module) else []
    return any(
        isinstance(value := syntax.value_of(statement), ast.Call)
        and _is_layer_class(_callee(value))
        and any(".module." in t for t in syntax.assigned_names(statement))
        for statement in statements
    )


@_line_detector("cuda-asked-on-line", finds="a printed line asks for CUDA explicitly")
def cuda_asked_on_line(line: Line) -> bool:
    return bool(re.search(r"""\.cuda\(|["']cuda(?::\d+)?["']|torch\.cuda\.""", line.code))


@detector(
    "outside-optimizer-step",
    reads="failing lines",
    finds="the traceback shows code lines down to the failing one, and none of them is an optimizer step or works "
    "on optimizer state",
)
def outside_optimizer_step(code: Code) -> Iterator[str]:
    if code.cut or not code.lines or any(line.library == "torch.optim" for line in code.lines):
        return
    if not any(optimizer_state_on_line(line) for line in _lines(code, libraries=True)):
        innermost = code.lines[0]
        yield f"{innermost.where}: `{innermost.code.strip()}` and the lines above it"
