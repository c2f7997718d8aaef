"""Evidence from real message lines (sources in shared/MESSAGES.md and the dev corpus)."""

from __future__ import annotations

import pytest

from fixer.explain.evidence import device_kind, extract, normalise_op
from fixer.explain.parse import parse


def facts(line: str):
    tb = parse(line)
    assert tb is not None, line
    return extract(tb)


@pytest.mark.parametrize(
    ("line", "devices", "offending", "argument", "op"),
    [
        # TI-modern, https://github.com/syuu1987/geekTime-semantic-segmentation/issues/1
        (
            "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
            "cuda:0 and cpu!",
            ("cuda:0", "cpu"),
            "cpu",
            None,
            None,
        ),
        # W-1.10, https://github.com/FoundationVision/VAR/issues/127
        (
            "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
            "cuda:0 and cpu! (when checking argument for argument state_steps in method "
            "wrapper_CUDA___fused_adamw_)",
            ("cuda:0", "cpu"),
            "cpu",
            "state_steps",
            "fused_adamw_",
        ),
        # Cut before the clause's closing parenthesis, https://github.com/HumanCompatibleAI/imitation/issues/820
        (
            "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
            "cuda:0 and cpu! (when checking argument for argument index in method wrapper_CUDA_gather",
            ("cuda:0", "cpu"),
            "cpu",
            "index",
            "gather",
        ),
        # W-2.8 flips the order: the offending device comes first.
        # https://github.com/pytorch/pytorch/pull/150750
        (
            "RuntimeError: Expected all tensors to be on the same device, but got weight is on cpu, "
            "different from other tensors on cuda:0 (when checking argument in method "
            "wrapper_CUDA_nll_loss_forward)",
            ("cuda:0", "cpu"),
            "cpu",
            "weight",
            "nll_loss_forward",
        ),
        # RNN, https://github.com/MarWaltz/TUD_RL/issues/21
        (
            "RuntimeError: Input and parameter tensors are not at the same device, found input tensor at "
            "cpu and parameter tensor at cuda:0",
            ("cpu", "cuda:0"),
            "cuda:0",
            "parameter",
            None,
        ),
        # conv, https://github.com/sksq96/pytorch-summary/issues/16
        (
            "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same",
            ("cuda", "cpu"),
            "cpu",
            "weight",
            None,
        ),
        # legacy TH, https://github.com/diegoalejogm/gans/issues/12
        (
            "RuntimeError: Expected object of device type cuda but got device type cpu for argument #2 "
            "'mat1' in call to _th_addmm",
            ("cuda", "cpu"),
            "cpu",
            "mat1",
            "addmm",
        ),
        # FakeTensor propagation, https://github.com/pytorch/pytorch/issues/153056
        (
            "RuntimeError: Unhandled FakeTensor Device Propagation for aten.embedding.default, found two "
            "different devices cpu, cuda:0",
            ("cpu", "cuda:0"),
            "cuda:0",
            None,
            "embedding",
        ),
        # TI-1.2 and TI-2018 (shared/MESSAGES.md §1a): the wording names the first operand's device as the
        # expected one, so either side may be odd; the CPU one is taken for it, whichever side it is on.
        # https://github.com/qfgaohao/pytorch-ssd/issues/78
        (
            "RuntimeError: expected device cpu and dtype Float but got device cuda:0 and dtype Float",
            ("cuda", "cpu"),
            "cpu",
            None,
            None,
        ),
        # https://github.com/BindsNET/bindsnet/issues/238
        (
            "RuntimeError: expected type torch.cuda.FloatTensor but got torch.FloatTensor",
            ("cuda", "cpu"),
            "cpu",
            None,
            None,
        ),
        # https://github.com/sgrvinod/a-PyTorch-Tutorial-to-Object-Detection/issues/26
        ("RuntimeError: expected device cuda:0 but got device cpu", ("cuda:0", "cpu"), "cpu", None, None),
        # A legacy CPU constructor given a GPU tensor, wrapped as the page shows it:
        # https://github.com/hpcaitech/ColossalAI/issues/2409
        (
            "TypeError: expected TensorOptions(dtype=float, device=cpu, layout=Strided,\n"
            "requires_grad=false (default), pinned_memory=false (default),\n"
            "memory_format=(nullopt)) (got TensorOptions(dtype=c10::Half, device=cuda:7,\n"
            "layout=Strided, requires_grad=false (default), pinned_memory=false (default),\n"
            "memory_format=(nullopt)))",
            ("cpu", "cuda:7"),
            "cuda:7",
            None,
            None,
        ),
    ],
)
def test_device_facts_from_each_message_shape(line, devices, offending, argument, op):
    ev = facts(line)
    assert ev.devices == devices
    assert ev.offending == offending
    assert ev.argument == argument
    assert ev.op == op
    assert not ev.dtype_only


def test_wrapped_message_across_a_line_break_still_yields_devices():
    # https://github.com/huggingface/accelerate/issues/767 (the page wraps the line)
    ev = facts(
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices,\nmeta and cpu!"
    )
    assert ev.devices == ("meta", "cpu")


@pytest.mark.parametrize(
    "line",
    [
        # same device, different dtype: https://github.com/baaivision/See3D/issues/11
        "RuntimeError: Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor) should be the same",
        # scalar-type names only (MESSAGES.md §3)
        "RuntimeError: Input type (c10::Half) and bias type (float) should be the same",
        # TI-1.1 with equal backends (MESSAGES.md §2 note)
        "RuntimeError: expected backend CPU and dtype Double but got backend CPU and dtype Float",
        # a legacy constructor given a tensor of another dtype on its own device:
        # https://github.com/BGU-CS-VIL/DeepDPM/issues/20
        "TypeError: expected TensorOptions(dtype=float, device=cpu, layout=Strided, requires_grad=false (default), "
        "pinned_memory=false (default), memory_format=(nullopt)) (got TensorOptions(dtype=unsigned char, device=cpu, "
        "layout=Strided, requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt)))",
    ],
)
def test_dtype_only_mismatch_is_recognised(line):
    assert facts(line).dtype_only


@pytest.mark.parametrize(
    ("raw", "op"),
    [
        ("wrapper_CUDA__index_select", "index_select"),
        ("wrapper__index_select", "index_select"),
        ("wrapper_index_select", "index_select"),
        ("wrapper___cat", "cat"),
        ("wrapper_CUDA___fused_adamw_", "fused_adamw_"),
        ("wrapper_NPU__index_select", "index_select"),
        ("_th_addmm", "addmm"),
        ("aten.native_layer_norm", "native_layer_norm"),
        (None, None),
    ],
)
def test_op_names_normalise_across_versions(raw, op):
    assert normalise_op(raw) == op


@pytest.mark.parametrize(
    ("device", "kind"),
    [
        ("cuda:3", "cuda"),
        ("torch.cuda.HalfTensor", "cuda"),
        ("torch.FloatTensor", "cpu"),
        ("mps:0", "mps"),
        ("MPSFloatType", "mps"),
        ("meta", "meta"),
        ("CUDA", "cuda"),
        ("c10::Half", "dtype"),
    ],
)
def test_device_kind(device, kind):
    assert device_kind(device) == kind


def test_frame_facts_separate_user_code_from_libraries(catalog):
    # https://github.com/microsoft/Cream/issues/2
    text = catalog.get("optimizer-state-after-resume").examples[1].traceback
    ev = facts(text)
    assert "torch.optim" in ev.libraries
    assert any(line.endswith("train.py:train_epoch: optimizer.step()") for line in ev.frame_lines)
    assert any(
        line.endswith("sgd.py:step: buf.mul_(momentum).add_(d_p, alpha=1 - dampening)") for line in ev.frame_lines
    )
