"""Facts about how the model is loaded and placed: device maps, quantization, offloading, programs."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from fixer.explain.detectors import detector, syntax
from fixer.explain.detectors.code import Code, Scope

_SPREADING_MAPS = frozenset({"auto", "balanced", "balanced_low_0", "sequential"})
_DISPATCHERS = frozenset({"load_checkpoint_and_dispatch", "dispatch_model", "infer_auto_device_map"})
# Callables that capture or load a program whose graph may hold devices as constants.
_CAPTURES = frozenset(
    {"torch.export.load", "torch.export.export", "torch.jit.load", "torch.jit.trace", "torch.jit.script",
     "torch.jit.freeze", "torch._export.aot_load"}
)  # fmt: skip
# Words in a user's code that say placement is managed by a library (accelerate, transformers, Lightning).
_PLACEMENT_WORDS = (
    "accelerate", "device_map", "from_pretrained", "offload", "init_empty_weights", "dispatch_model", "bitsandbytes",
    "load_in_4bit", "load_in_8bit", "quantization_config", "Trainer", "Lightning", "pipeline",
)  # fmt: skip


def _calls_around(code: Code) -> Iterator[tuple[Scope, ast.Call]]:
    for scope in code.scopes:
        for call in scope.calls_around:
            yield scope, call


def _name(call: ast.Call) -> str:
    return (syntax.dotted(call.func) or "").rsplit(".", 1)[-1]


@detector("device-map-loading", reads="your files", finds="the model is loaded or dispatched with a device map")
def device_map_loading(code: Code) -> Iterator[str]:
    for scope, call in _calls_around(code):
        device_map = syntax.keyword(call, "device_map")
        if (device_map is not None and not _is_none(device_map)) or _name(call) in _DISPATCHERS:
            yield f"{scope.where(call)}: `{_name(call)}(..., device_map=...)`"


@detector(
    "device-map-spreads-model",
    reads="your files",
    finds="the model is loaded with a device map that spreads it over the GPUs (auto, balanced, max_memory=)",
)
def device_map_spreads_model(code: Code) -> Iterator[str]:
    for scope, call in _calls_around(code):
        device_map = syntax.keyword(call, "device_map")
        spreads = isinstance(device_map, ast.Constant) and device_map.value in _SPREADING_MAPS
        if spreads or syntax.keyword(call, "max_memory") is not None or _name(call) in _DISPATCHERS:
            yield f"{scope.where(call)}: `{_name(call)}(...)` spreads the model over the GPUs"


@detector("bitsandbytes-loading", reads="your files", finds="the model is loaded quantized with bitsandbytes")
def bitsandbytes_loading(code: Code) -> Iterator[str]:
    for scope, call in _calls_around(code):
        quantized = any(
            (k.arg in ("load_in_4bit", "load_in_8bit") and not _is_false(k.value))
            or (k.arg or "").startswith("bnb_4bit")
            for k in call.keywords
        )
        if quantized or _name(call) == "BitsAndBytesConfig":
            yield f"{scope.where(call)}: `{_name(call)}(...)` loads 4/8-bit weights"


@detector("fsdp-cpu-offload", reads="your files", finds="FSDP parameter offloading to the CPU is turned on")
def fsdp_cpu_offload(code: Code) -> Iterator[str]:
    for scope, call in _calls_around(code):
        offloads = _name(call) == "CPUOffload" and _is_true(syntax.keyword(call, "offload_params"))
        if offloads or _name(call) == "CPUOffloadPolicy" or _is_true(syntax.keyword(call, "cpu_offload")):
            yield f"{scope.where(call)}: `{_name(call)}(...)` offloads parameters to the CPU"


@detector(
    "program-moved-after-capture",
    reads="your files",
    finds="a program captured or loaded with torch.export/torch.jit is then moved with .to()/.cuda()",
)
def program_moved_after_capture(code: Code) -> Iterator[str]:
    for scope in code.scopes:
        programs: dict[str, int] = {}
        for statement in scope.statements_around:
            value = syntax.value_of(statement)
            if value is not None and _captures(value, scope) and not syntax.is_move(value):
                for target in syntax.assigned_names(statement):
                    programs[target] = statement.lineno
            for call in syntax.calls(statement):
                helper = _helper_that_moves_a_program(call, scope)
                if helper is not None:
                    yield f"{scope.where(call)}: `{helper}()` loads a captured program and moves it"
                if not isinstance(call.func, ast.Attribute) or call.func.attr not in ("to", "cuda"):
                    continue
                receiver = call.func.value
                name = syntax.dotted(receiver)
                if name in programs:
                    yield f"{scope.where(call)}: `{name}`, captured at line {programs[name]}, is moved"
                elif isinstance(receiver, ast.Call) and _captures(receiver, scope):
                    yield f"{scope.where(call)}: a captured program is moved as it is loaded"


def _helper_that_moves_a_program(call: ast.Call, scope: Scope) -> str | None:
    """`load_exported(path, device)`, a function of this file whose return value is a captured program
    moved with .to()/.cuda(): the move happens outside the frames the traceback shows."""
    if not isinstance(call.func, ast.Name):
        return None
    function = next((n for n in scope.module.body if isinstance(n, ast.FunctionDef) and n.name == call.func.id), None)
    if function is None:
        return None
    for node in ast.walk(function):
        value = node.value if isinstance(node, ast.Return) else None
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in ("to", "cuda")
            and _captures(value.func.value, scope)
        ):
            return function.name
    return None


def _captures(value: ast.expr, scope: Scope) -> bool:
    """A torch.export/torch.jit capture or load (without map_location), or `.module()` of one."""
    if not isinstance(value, ast.Call):
        return False
    if isinstance(value.func, ast.Attribute) and value.func.attr == "module" and not value.args:
        return True
    return syntax.resolve(value.func, scope.names) in _CAPTURES and syntax.keyword(value, "map_location") is None


@detector(
    "no-placement-library",
    reads="your files",
    finds="the code around the failing lines uses no accelerate, device_map, offloading or quantized loading",
)
def no_placement_library(code: Code) -> Iterator[str]:
    if not code.scopes:
        return
    for scope in code.scopes:
        for node in (*scope.around, *(s for s in scope.module.body if isinstance(s, ast.Import | ast.ImportFrom))):
            if any(word in name for name in _identifiers(node) for word in _PLACEMENT_WORDS):
                return
    files = ", ".join(dict.fromkeys(scope.file for scope in code.scopes))
    yield f"{files}: no accelerate, device_map, offloading or quantized loading around the failing lines"


def _identifiers(node: ast.AST) -> Iterator[str]:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            yield sub.id
        elif isinstance(sub, ast.Attribute):
            yield sub.attr
        elif isinstance(sub, ast.keyword) and sub.arg:
            yield sub.arg
        elif isinstance(sub, ast.alias):
            yield sub.name
        elif isinstance(sub, ast.ImportFrom) and sub.module:
            yield sub.module


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _is_false(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value in (False, None)
