"""The extraction of PyTorch's messages, and of the libraries' built on it, on code shaped as each
writes its checks."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

import extract_messages as x

TENSOR_ITERATOR = """
void TensorIteratorBase::compute_types(const TensorIteratorConfig& config) {
  // Expected all tensors to be on the same device (a comment, not a message)
  TORCH_CHECK(op.device == common_device,
              "Expected all tensors to be on the same device, but "
              "found at least two devices, ", common_device, " and ", op.device, "!");
  TORCH_CHECK_VALUE(a.dim() == 2, "expected a matrix, got ", a.dim(), "-D tensor");
}
"""

STREAMED = """
void check(const Tensor& grad, size_t i) {
      std::stringstream ss;
      ss << "invalid gradient at index " << i << " - expected device ";
      ss << metadata.device() << " but got " << grad.device();
      TORCH_CHECK(false, format_error(ss.str()));
}
"""

PYTHON = """
def check_same_device(*args):
    for arg in args:
        if arg.device != device:
            msg = (
                "Tensor on device "
                + str(arg.device)
                + " is not on the expected device "
                + str(device)
                + "!"
            )
            raise RuntimeError(msg)

def stft(input, window):
    torch._check(
        window.device == input.device,
        lambda: f"stft input and window must be on the same device but got self on {input.device}"
        f" and window on {window.device}",
    )
    raise ValueError(f"expected a 2-D input, got {input.dim()}")
"""


def test_a_check_macro_joins_its_literals_and_marks_each_value() -> None:
    found = [f for f in x.cpp_messages(TENSOR_ITERATOR, "TensorIterator.cpp") if x.in_family(f.template)]
    assert [(f.template, f.raised) for f in found] == [
        (
            "Expected all tensors to be on the same device, but found at least two devices, "
            "{common_device} and {op.device}!",
            "RuntimeError",
        )
    ]
    assert found[0].where == "TensorIterator.cpp:4"
    assert found[0].key == "Expected all tensors to be on the same device, but found at least two devices, {} and {}!"


# An extension's helper macro, as flash-attn and mmcv define theirs: the argument's own text opens the
# message, and the definition runs over two lines.
EXTENSION = """
#define CHECK_DEVICE(x) TORCH_CHECK(x.is_cuda(), \\
                                    #x " must be on CUDA")
#define CHECK_SHAPE(x, ...) TORCH_CHECK(x.sizes() == torch::IntArrayRef({__VA_ARGS__}), #x " must have shape")
void mha_fwd(at::Tensor &q, at::Tensor &cu_seqlens_q) {
    CHECK_DEVICE(q); CHECK_DEVICE(cu_seqlens_q);
    STD_TORCH_CHECK(q.device() == cu_seqlens_q.device(), "q and cu_seqlens_q must be on the same device");
}
"""


def test_a_helper_macro_is_read_once_with_its_argument_as_a_value() -> None:
    found = [f for f in x.cpp_messages(EXTENSION, "flash_api.cpp") if x.in_family(f.template)]
    assert [(f.key, f.where) for f in found] == [
        ("{} must be on CUDA", "flash_api.cpp:2"),
        ("q and cu_seqlens_q must be on the same device", "flash_api.cpp:7"),
    ]
    assert found[0].template == "{x} must be on CUDA"


def test_a_bare_cpp_exception_is_read_as_its_python_class() -> None:
    """R's torch throws plain C++ exceptions from its CPU build where a CUDA call has no kernel."""
    code = (
        "void empty_cache() {\n"
        '  throw std::runtime_error(\n      "`cuda_empty_cache` is only supported on CUDA runtimes.");\n'
        "}\n"
    )
    found = [f for f in x.cpp_messages(code, "Cuda.cpp") if x.in_family(f.template)]
    assert [(f.key, f.raised, f.where) for f in found] == [
        ("`cuda_empty_cache` is only supported on CUDA runtimes.", "RuntimeError", "Cuda.cpp:2")
    ]
    assert not x.in_family("FlashAttention is only supported on CUDA 11.7 and above")


def test_a_library_tree_is_read_whole_but_its_tests() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "csrc").mkdir()
        (root / "csrc/api.cpp").write_text(EXTENSION)
        (root / "pkg/tests").mkdir(parents=True)
        (root / "pkg/ops.py").write_text(
            'def nms(boxes):\n    assert not boxes.is_cuda, "boxes must be a CPU tensor"\n'
        )
        (root / "pkg/tests/test_ops.py").write_text('raise RuntimeError("x must be on the same device as y")\n')
        found = x.read_library(root)
    assert {(f.key, f.raised, f.where) for f in found} == {
        ("{} must be on CUDA", "RuntimeError", "csrc/api.cpp:2"),
        ("q and cu_seqlens_q must be on the same device", "RuntimeError", "csrc/api.cpp:7"),
        ("boxes must be a CPU tensor", "AssertionError", "pkg/ops.py:2"),
    }


def test_a_librarys_messages_go_to_its_own_file_under_its_name(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib/ops.py").write_text(
        'raise ValueError("Input tensors should be on the same device. Got {a} and {b}")\n'
    )
    output = tmp_path / "kb/messages/somelib.yaml"
    assert x.main(["--library", "somelib", "--output", str(output), f"1.0={tmp_path / 'lib'}"]) == 0
    text = output.read_text(encoding="utf-8")
    assert text.startswith("# somelib's device-placement error messages")
    assert [(r.key, r.versions) for r in x.load(output)] == [
        ("Input tensors should be on the same device. Got {} and {}", ["1.0"])
    ]


def test_consecutive_stream_statements_make_one_message() -> None:
    templates = [f.template for f in x.cpp_messages(STREAMED, "engine.cpp")]
    assert "invalid gradient at index {i} - expected device {metadata.device()} but got {grad.device()}" in templates


# DGL's runtime (src/runtime/c_runtime_api.cc, include/dgl/aten/macro.h) checks with glog's macros.
GLOG = """
DeviceAPI* GetAPI(const std::string name, bool allow_missing) {
  if (f == nullptr) {
    CHECK(allow_missing)
        << "Device API " << name
        << " is not enabled. Please install the cuda version of dgl.";
  }
  LOG(INFO) << "the device " << name << " is on the same device as before";
  LOG(FATAL) << "Graph and source should be on the same device, got " << ctx;
}
#define CHECK_SAME_CONTEXT(VAR1, VAR2)                                    \\
  CHECK((VAR1)->ctx == (VAR2)->ctx)                                       \\
      << "Expected " << (#VAR2) << " to have the same device context as " \\
      << (#VAR1) << "(" << (VAR1)->ctx << ")"                             \\
      << ". But got " << (VAR2)->ctx << ".";
"""


def test_a_message_streamed_into_a_failed_glog_check_is_read_whole() -> None:
    found = {f.key: f.where for f in x.cpp_messages(GLOG, "c_runtime_api.cc") if x.in_family(f.template)}
    assert found == {
        "Device API {} is not enabled. Please install the cuda version of dgl.": "c_runtime_api.cc:4",
        "Graph and source should be on the same device, got {}": "c_runtime_api.cc:9",
        "Expected {} to have the same device context as {}({}). But got {}.": "c_runtime_api.cc:12",
    }


def test_python_messages_from_raise_a_message_variable_and_torch_check() -> None:
    keys = {f.key for f in x.py_messages(PYTHON, "x.py") if x.in_family(f.template)}
    assert keys == {
        "Tensor on device {} is not on the expected device {}!",
        "stft input and window must be on the same device but got self on {} and window on {}",
    }


@pytest.mark.parametrize(
    "message",
    [
        "Input type ({}) and weight type ({}) should be the same",
        "can't convert {} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
        "Expected a '{}' device type for generator but found '{}'",
        "Torch not compiled with CUDA enabled",
        "Placeholder storage has not been allocated on MPS device!",
    ],
)
def test_family_messages_are_kept(message: str) -> None:
    assert x.in_family(message)


@pytest.mark.parametrize(
    "message",
    [
        "CUDA error: device-side assert triggered",
        "expected scalar type Float but found Half",
        "MPS device does not support mm for non-float inputs",
        "Device string must not be empty",
        "is on CPU,",
    ],
)
def test_look_alikes_and_fragments_are_left_out(message: str) -> None:
    assert not x.in_family(message)


def test_a_rerun_keeps_the_causes_a_person_assigned_and_adds_new_versions() -> None:
    before = [x.Record("Tensor on device {} is not on the expected device {}!", "t", "RuntimeError", "a.py:1",
                       ["2.6.0"], ["compile-fake-tensor-device"])]  # fmt: skip
    found = [x.Found("Tensor on device {d} is not on the expected device {e}!", "RuntimeError", "b.py:9")]
    merged = x.merge(before, [("2.6.0", found, {}), ("2.13.0", found, {})])
    assert [(r.versions, r.entries, r.where) for r in merged] == [
        (["2.6.0", "2.13.0"], ["compile-fake-tensor-device"], "b.py:9")
    ]


def test_a_binary_rebuilds_a_message_from_the_pieces_before_its_source_file() -> None:
    laid_out = (
        b"\x00Support for autograd has not been loaded\x00Expected all tensors to be on the same device, but got "
        b"\x00, different from other tensors on \x00 (when checking argument in method "
        b"\x00/__w/pytorch/pytorch/aten/src/ATen/core/adaption.cpp\x00"
    )
    rebuilt = dict(x._assembled(laid_out))
    assert rebuilt["Expected all tensors to be on the same device, but got "] == (
        "Expected all tensors to be on the same device, but got {}, different from other tensors on {} "
        "(when checking argument in method {}"
    )
    assert rebuilt["Support for autograd has not been loaded"] == "Support for autograd has not been loaded"


def test_a_binary_dates_a_source_message_and_adds_what_only_it_holds() -> None:
    found = [x.Found("Expected all tensors to be on the same device, but found at least two devices, {a} and {b}!",
                     "RuntimeError", "TensorIterator.cpp:4")]  # fmt: skip
    strings = {
        "Expected all tensors to be on the same device, but found at least two devices, ": "libtorch_cpu.so",
        "Expected all tensors to be on the same device, but got ": "libtorch_cpu.so",
        "_ZN3c1013GeneratorImpl6deviceEv": "libc10.so",
    }
    merged = x.merge([], [("2.6.0", found, {}), ("2.13.0", [], strings)])
    old, new = "but found at least two devices, {} and {}!", "but got {}"
    assert {r.key: r.versions for r in merged} == {
        f"Expected all tensors to be on the same device, {old}": ["2.6.0", "2.13.0"],
        f"Expected all tensors to be on the same device, {new}": ["2.13.0"],
    }


def test_the_written_file_reads_back_as_it_was_written(tmp_path: Path) -> None:
    records = x.merge([], [("2.6.0", [x.Found("stft input and window must be on the same device {a}", "RuntimeError",
                                              "r.py:3")], {})])  # fmt: skip
    records[0].outside = "only for this test, a reason"
    path = tmp_path / "m.yaml"
    path.write_text(x.dump(records), encoding="utf-8")
    assert x.load(path) == records


@pytest.mark.parametrize("path", sorted(x.OUTPUT.parent.glob("*.yaml")), ids=lambda p: p.stem)
def test_the_catalogue_in_the_kb_is_what_the_script_writes(path: Path) -> None:
    """Rewritten through the script's own dump, each file does not change: hand edits keep its shape."""
    assert x.dump(x.load(path), path.stem) == path.read_text(encoding="utf-8")
