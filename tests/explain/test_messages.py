"""Every wording of the family, from PyTorch 1.0 to 2.13 and the third-party wrappers, is recognised.

Each line is a real one quoted in shared/MESSAGES.md (its source is given beside it). `want` is the
set of entries any of which is a right first answer for the line alone.
"""

from __future__ import annotations

import pytest
import yaml
from conftest import ROOT

CENSUS_SOURCES = {
    item["id"]: item["source"]
    for item in yaml.safe_load((ROOT / "benchmarks/census/census.yaml").read_text(encoding="utf-8"))
}

VARIANTS = [
    # §1a TensorIterator, 1.0 / 1.1 / 1.2 / 1.3 / modern
    (
        "TI-2018",
        "RuntimeError: expected type torch.cuda.FloatTensor but got torch.FloatTensor",
        "https://github.com/BindsNET/bindsnet/issues/238",
        None,
    ),
    (
        "TI-1.1",
        "RuntimeError: expected backend CUDA and dtype Float but got backend CPU and dtype Float",
        "https://github.com/yunjey/pytorch-tutorial/issues/180",
        None,
    ),
    (
        "autograd-engine-1.0",  # the engine's grad_outputs check before it named devices
        "RuntimeError: invalid gradient at index 0 - expected type torch.cuda.FloatTensor but got torch.FloatTensor",
        "https://github.com/MisaOgura/flashtorch/issues/2",
        {"tensor-created-without-device"},
    ),
    (
        "TI-1.2",
        "RuntimeError: expected device cpu and dtype Float but got device cuda:0 and dtype Float",
        "https://github.com/qfgaohao/pytorch-ssd/issues/78",
        None,
    ),
    (
        "TI-1.3",
        "RuntimeError: expected device cuda:0 but got device cpu",
        "https://github.com/sgrvinod/a-PyTorch-Tutorial-to-Object-Detection/issues/26",
        None,
    ),
    (
        "TI-modern",
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
        "https://github.com/syuu1987/geekTime-semantic-segmentation/issues/1",
        None,
    ),
    (
        "TI-modern two GPUs",
        "RuntimeError: Expected all tensors to be on the same device, but found at least two "
        "devices, cuda:2 and cuda:1!",
        "https://github.com/QwenLM/Qwen/issues/920",
        None,
    ),
    # §1b wrapper checks: 1.9 typo, 1.10-2.7, 2.8+ (flipped order)
    (
        "W-1.9",
        "Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0! "
        "(when checking arugment for argument mat1 in method wrapper_addmm)",
        "shared/MESSAGES.md §1b",
        None,
    ),
    (
        "W-1.10 index",
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
        "cuda:0 and cpu! (when checking argument for argument index in method wrapper__index_select)",
        "https://github.com/facebookresearch/detr/issues/524",
        {"inputs-not-moved"},
    ),
    (
        "W-2.x mat1",
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
        "cpu and cuda:0! (when checking argument for argument mat1 in method wrapper_CUDA_addmm)",
        "https://github.com/haotian-liu/LLaVA/issues/1081",
        None,
    ),
    (
        "W-2.8 loss weight",
        "RuntimeError: Expected all tensors to be on the same device, but got weight is on cpu, "
        "different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_nll_loss_forward)",
        "https://github.com/pytorch/pytorch/pull/150750",
        {"loss-weight-on-cpu"},
    ),
    (
        "W-2.8 mat1",
        "Expected all tensors to be on the same device, but got mat1 is on cpu, different from other "
        "tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)",
        "https://github.com/ClownsharkBatwing/RES4LYF/pull/223",
        {"inputs-not-moved", "tensor-created-without-device"},
    ),
    (
        "W fused adamw",
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
        "cuda:0 and cpu! (when checking argument for argument state_steps in method wrapper_CUDA___fused_adamw_)",
        "https://github.com/FoundationVision/VAR/issues/127",
        {"optimizer-state-after-resume"},
    ),
    (
        "foreach step",
        "Tensors of the same index must be on the same device and the same dtype except `step` tensors "
        "that can be CPU and float32 notwithstanding",
        "https://github.com/tatsu-lab/stanford_alpaca/issues/321",
        {"optimizer-state-after-resume"},
    ),
    # §2 legacy TH / TensorArg
    (
        "TH 0.4",
        "Expected object of type torch.cuda.FloatTensor but found type torch.FloatTensor for argument #3 'other'",
        "https://github.com/leeyeehoo/CSRNet-pytorch/issues/3",
        None,
    ),
    (
        "TH backend",
        "Expected object of backend CUDA but got backend CPU for argument #2 'mat2'",
        "https://github.com/inyeoplee77/SAGPool/issues/3",
        None,
    ),
    (
        "TH device type",
        "Expected object of device type cuda but got device type cpu for argument #2 'mat1' in call to _th_addmm",
        "https://github.com/diegoalejogm/gans/issues/12",
        None,
    ),
    (
        "checkSameGPU",
        "Tensor for argument #2 'mat1' is on CPU, but expected it to be on GPU (while checking arguments for addmm)",
        "https://github.com/zenml-io/zenml/issues/90",
        None,
    ),
    (
        "checkSameGPU plural",
        "Tensor for 'out' is on CPU, Tensor for argument #1 'self' is on CPU, but expected them "
        "to be on GPU (while checking arguments for addmm)",
        "https://github.com/something678/TodKat/issues/4",
        None,
    ),
    # THNN kernels before 0.4 name the mix of tensor types they received
    (
        "THNN input cpu",
        "TypeError: FloatSpatialConvolutionMM_updateOutput received an invalid combination of arguments - got (int, "
        "torch.FloatTensor, torch.FloatTensor, torch.cuda.FloatTensor, torch.cuda.FloatTensor, torch.FloatTensor, "
        "torch.FloatTensor, int, int, int, int, int, int), but expected (int state, torch.FloatTensor input, "
        "torch.FloatTensor output, torch.FloatTensor weight, [torch.FloatTensor bias or None], torch.FloatTensor "
        "finput, torch.FloatTensor fgradInput, int kW, int kH, int dW, int dH, int padW, int padH)",
        "https://github.com/pytorch/pytorch/issues/547",
        {"inputs-not-moved"},
    ),
    (
        "THNN model cpu",
        "FloatSpatialDilatedConvolution_updateOutput received an invalid combination of arguments - got (int, "
        "torch.cuda.FloatTensor, torch.FloatTensor, torch.FloatTensor, torch.FloatTensor, torch.FloatTensor, "
        "torch.FloatTensor, int, int, int, int, int, int, int, int), but expected (int state, torch.FloatTensor "
        "input, torch.FloatTensor output, torch.FloatTensor weight, [torch.FloatTensor bias or None], "
        "torch.FloatTensor columns, torch.FloatTensor ones, int kW, int kH, int dW, int dH, int padW, int padH, "
        "int dilationW, int dilationH)",
        "https://github.com/pytorch/pytorch/issues/1870",
        {"model-not-moved"},
    ),
    # §3 convolution type names
    (
        "conv input cpu",
        "Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same",
        "https://github.com/glam-imperial/cider/issues/6",
        {"inputs-not-moved"},
    ),
    (
        "conv MKLDNN",
        "Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same or "
        "input should be a MKLDNN tensor and weight is a dense tensor",
        "shared/MESSAGES.md §3",
        {"inputs-not-moved"},
    ),
    (
        "conv MPS",
        "Input type (MPSFloatType) and weight type (torch.FloatTensor) should be the same",
        "shared/MESSAGES.md §3",
        {"model-not-moved", "submodules-in-plain-container"},
    ),
    # §4 RNN
    (
        "RNN input cpu",
        "RuntimeError: Input and parameter tensors are not at the same device, found input tensor at "
        "cpu and parameter tensor at cuda:0",
        "https://github.com/MarWaltz/TUD_RL/issues/21",
        {"inputs-not-moved"},
    ),
    (
        "RNN hidden",
        "RuntimeError: Input and hidden tensors are not at the same device, found input tensor at cuda:0 "
        "and hidden tensor at cpu",
        "https://github.com/Lightning-AI/pytorch-lightning/issues/3738",
        {"rnn-hidden-state-on-cpu"},
    ),
    # §5 indexing
    (
        "indices",
        "RuntimeError: indices should be either on cpu or on the same device as the indexed tensor (cpu)",
        "https://github.com/PanasonicConnect/InvReg/issues/1",
        {"index-on-other-device"},
    ),
    # §6 DataParallel, §7 DDP
    (
        "DataParallel",
        "RuntimeError: module must have its parameters and buffers on device cuda:0 (device_ids[0]) "
        "but found one of them on device: cpu",
        "https://github.com/kennethwdk/MLCReID/issues/5",
        {"dataparallel-params-not-on-device0"},
    ),
    (
        "DDP 1.9+",
        "ValueError: DistributedDataParallel device_ids and output_device arguments only work with "
        "single-device/multiple-device GPU modules or CPU modules, but got device_ids [0], output_device 0, and module "
        "parameters {device(type='cpu')}.",
        "https://github.com/pytorch/pytorch/issues/100243",
        {"ddp-module-not-on-device"},
    ),
    # §8 serialization
    (
        "load no CUDA",
        "RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() "
        "is False. If you are running on a CPU-only machine, please use torch.load with "
        "map_location=torch.device('cpu') to map your storages to the CPU.",
        "https://github.com/hkchengrex/Cutie/issues/37",
        {"torch-load-without-map-location"},
    ),
    # §9 numpy
    (
        "numpy 1.0",
        "TypeError: can't convert CUDA tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
        "https://github.com/iMoonLab/PVRNet/issues/3",
        {"numpy-on-cuda-tensor"},
    ),
    (
        "numpy 1.5+",
        "TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
        "to host memory first.",
        "https://github.com/Zhongdao/Towards-Realtime-MOT/issues/257",
        {"numpy-on-cuda-tensor"},
    ),
    # §10 generators
    (
        "generator",
        "RuntimeError: Expected a 'cuda' device type for generator but found 'cpu'",
        "https://github.com/hcnoh/knowledge-tracing-collection-pytorch/issues/8",
        {"default-device-generator"},
    ),
    # §11 CUDA availability
    (
        "no CUDA build",
        "AssertionError: Torch not compiled with CUDA enabled",
        "shared/MESSAGES.md §11",
        {"torch-not-compiled-with-cuda"},
    ),
    (
        "invalid ordinal",
        "RuntimeError: CUDA error: invalid device ordinal",
        "https://github.com/gaomingqi/Track-Anything/issues/83",
        {"hardcoded-device-ordinal", "more-ranks-than-gpus"},
    ),
    # §13 FakeTensor / Dynamo
    (
        "FakeTensor old",
        "RuntimeError: Unhandled FakeTensor Device Propagation for aten.embedding.default, found two "
        "different devices cpu, cuda:0",
        "https://github.com/pytorch/pytorch/issues/153056",
        {"compile-fake-tensor-device", "module-created-in-forward"},
    ),
    (
        "Dynamo 2.7+",
        "torch._dynamo.exc.TorchRuntimeError: Dynamo failed to run FX node with fake tensors: "
        "call_function <built-in function add>(*(FakeTensor(..., device='spyre:0', size=(1, 32)), FakeTensor(..., "
        "size=(1, 32))), **{}): got RuntimeError('Unhandled FakeTensor Device Propagation for aten.add.Tensor, "
        "found two different devices spyre:0, cpu')",
        "https://github.com/torch-spyre/torch-spyre/issues/1419",
        {"compile-fake-tensor-device"},
    ),
    # §14 MPS, §15 NCCL
    (
        "MPS placeholder",
        "RuntimeError: Placeholder storage has not been allocated on MPS device!",
        "https://github.com/EleutherAI/lm-evaluation-harness/issues/1131",
        {"inputs-not-moved"},
    ),
    (
        "NCCL",
        "RuntimeError: Tensors must be CUDA and dense",
        "https://github.com/pytorch/examples/issues/1030",
        {"nccl-cpu-tensors"},
    ),
    # §16 third-party wrappers
    (
        "accelerate offload",
        "RuntimeError: You can't move a model that has some modules offloaded to cpu or disk.",
        "https://github.com/01-ai/Yi/issues/302",
        {"accelerate-offloaded-model-moved"},
    ),
    (
        "transformers 4.30 bnb",
        "ValueError: `.to` is not supported for `4-bit` or `8-bit` models. Please use the model "
        "as it is, since the model has already been set to the correct devices and casted to the correct `dtype`.",
        "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/547",
        {"bnb-quantized-model-to"},
    ),
    (
        "Keras wrapper",
        "RuntimeError: Exception encountered when calling Dense.call().\n\nExpected all tensors to be "
        "on the same device, but found at least two devices, cuda:1 and cuda:0! (when checking argument for argument "
        "mat2 in method wrapper_CUDA_mm)\n\nArguments received by Dense.call():\n  • inputs=torch.Tensor(shape=torch."
        "Size([192, 3, 32, 32]), dtype=float32)\n  • training=None",
        "https://github.com/keras-team/keras/issues/20415",
        {"keras-torch-dataparallel"},
    ),
    # Catalogued wordings found in real threads after the first catalogue pass (MESSAGES.md §1-§16)
    (
        "TI output device",
        "RuntimeError: output with device cuda:2 doesn't match the desired device cpu",
        "https://github.com/ujsyehao/yolov3-multigpu/issues/13",
        None,
    ),
    (
        "TI CPU scalars",
        "RuntimeError: Trying to pass too many CPU scalars to CUDA kernel!",
        "https://github.com/megagonlabs/rotom/issues/3",
        {"tensor-created-without-device"},
    ),
    (
        "CPU addmm mat1",
        "RuntTimeError:expected 'mat1' to be a CPU tensor,but got a CUDA tensor",
        "https://github.com/3d-hand-shape/hand-graph-cnn/issues/5",
        {"model-not-moved"},
    ),
    (
        "cat Received",
        "RuntimeError: All input tensors must be on the same device. Received cuda:0 and cpu",
        "https://github.com/MengHao666/Minimal-Hand-pytorch/issues/6",
        None,
    ),
    (
        "cat Received 2",
        "RuntimeError: All input tensors must be on the same device. Received cuda:0 and cuda:1",
        "https://github.com/GoGoDuck912/Self-Correction-Human-Parsing/issues/59",
        None,
    ),
    (
        "masked_fill two GPUs",
        "RuntimeError: expected self and mask to be on the same device, but got mask on cuda:7 and self on cuda:0",
        "https://github.com/unslothai/unsloth/issues/996",
        {"default-cuda-vs-cuda-n"},
    ),
    (
        "prims expected device",
        "RuntimeError: Tensor on device meta is not on the expected device cpu!",
        "https://github.com/rupeshs/fastsdcpu/issues/209",
        None,
    ),
    (
        "prims expected device 2",
        "Tensor on device cpu is not on the expected device meta!",
        "https://github.com/chatchat-space/Langchain-Chatchat/issues/627",
        None,
    ),
    (
        "TH sequence element",
        "RuntimeError: Expected object of backend CUDA but got backend CPU for sequence element 1 in sequence "
        "argument at position #1 'tensors'",
        "https://github.com/elvisyjlin/SpatialAttentionGAN/issues/1",
        None,
    ),
    (
        "TH sequence element 2",
        "RuntimeError: Expected object of backend CUDA but got backend CPU for sequence element 1 in sequence "
        "argument at position #1 'tensors'",
        "https://github.com/clovaai/deep-text-recognition-benchmark/issues/170",
        None,
    ),
    (
        "TensorArg same device",
        "RuntimeError: Expected tensor for argument #1 'input' to have the same device as tensor for argument "
        "#2 'weight'; but device 0 does not equal 1 (while checking arguments for cudnn_convolution)",
        "https://github.com/TadaoYamaoka/DeepLearningShogi/issues/40",
        {"default-cuda-vs-cuda-n"},
    ),
    (
        "TensorArg same device 2",
        "RuntimeError:Expected tensor for argument #1 'input' to have the same device as tensor for argument "
        "#2 'weight' ; but device 1 does not equal 0 (while checking arguments for cudnn_convolution)",
        "https://github.com/xiadingZ/video-caption.pytorch/issues/43",
        {"default-cuda-vs-cuda-n"},
    ),
    (
        "checkDeviceType",
        "RuntimeError: Expected tensor to have cuda DeviceType, but got tensor with cpu DeviceType (while "
        "checking arguments for einsum())",
        "https://github.com/shabie/docformer/issues/19",
        None,
    ),
    (
        "checkDeviceType 2",
        "RuntimeError: Expected tensor to have CUDA Backend, but got tensor with CUDA Backend",
        "https://github.com/pytorch/pytorch/issues/7849",
        None,
    ),
    (
        "MKLDNN weight",
        "RuntimeError: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the "
        "same or input should be a MKLDNN tensor and weight is a dense tensor",
        "https://github.com/jsczzzk/R-MSFM/issues/14",
        {"inputs-not-moved"},
    ),
    (
        "MKLDNN weight 2",
        "RuntimeError: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the "
        "same or input should be a MKLDNN tensor and weight is a dense tensor",
        "https://github.com/huggingface/notebooks/issues/280",
        {"inputs-not-moved"},
    ),
    (
        "TensorArg on CPU",
        "RuntimeError: Tensor for argument #3 'mat2' is on CPU, but expected it to be on GPU (while checking "
        "arguments for addmm)",
        "https://github.com/iPERDance/iPERCore/issues/70",
        None,
    ),
    (
        "TensorArg on CPU 2",
        "RuntimeError: Tensor for argument #2 'mat1' is on CPU, but expected it to be on GPU (while checking "
        "arguments for addmm)",
        "https://github.com/IDSIA/hhmarl_2D/issues/12",
        None,
    ),
    (
        "TensorArg on CPU 3",
        "RuntimeError: Tensor for 'out' is on CPU, Tensor for argument #1 'self' is on CPU, but expected them "
        "to be on GPU (while checking arguments for baddbmm)",
        "https://github.com/rish-16/aft-pytorch/issues/6",
        None,
    ),
    (
        "THC different GPUs",
        "RuntimeError: arguments are located on different GPUs at "
        "/opt/conda/conda-bld/pytorch_1533672544752/work/aten/src/THC/generated/../generic/THCTensorMathPointwise.cu:314",
        "https://github.com/htqin/IR-Net/issues/2",
        {"default-cuda-vs-cuda-n"},
    ),
    (
        "THC different GPUs 2",
        "RuntimeError: arguments are located on different GPUs at "
        "/pytorch/torch/lib/THC/generic/THCTensorMathBlas.cu:236",
        "https://github.com/DeepInsight-PCALab/CompactBilinearPooling-Pytorch/issues/6",
        {"default-cuda-vs-cuda-n"},
    ),
    (
        "THCUNN different GPUs",
        "RuntimeError(\"Assertion `THCTensor_(checkGPU)(state, 5, input, output, weight, columns, ones)' "
        "failed. Some of weight/gradient/input tensors are located on different GPUs. Please move them to a "
        "single one. at "
        '/home/local/KHQ/neal.siekierski/Hidyve/Viame-build/build/src/pytorch-build/pip-tmp/pip-htx2IN-build/torch/lib/THCUNN/generic/SpatialConvolutionMM.cu:80",)',
        "https://github.com/VIAME/VIAME/issues/63",
        {"default-cuda-vs-cuda-n"},
    ),
    (
        "THCUNN different GPUs 2",
        "Some of weight/gradient/input tensors are located on different GPUs",
        "https://github.com/sgrvinod/a-PyTorch-Tutorial-to-Image-Captioning/issues/131",
        {"default-cuda-vs-cuda-n"},
    ),
    (
        "embedding current device",
        "RuntimeError: Input, output and indices must be on the current device",
        "https://github.com/yuhaozhang/summarize-radiology-findings/issues/7",
        None,
    ),
    (
        "embedding current device 2",
        "RuntimeError: Input, output and indices must be on the current device",
        "https://github.com/huggingface/accelerate/issues/210",
        None,
    ),
    (
        "DDP constructor",
        "AssertionError: DistributedDataParallel device_ids and output_device arguments only work with "
        "single-device CUDA modules, but got device_ids [1], output_device 1, and module parameters "
        "{device(type='cpu')}.",
        "https://github.com/huggingface/transformers/issues/9243",
        {"ddp-module-not-on-device"},
    ),
    (
        "DDP constructor 2",
        "ValueError: DistributedDataParallel device_ids and output_device arguments only work with "
        "single-device/multiple-device GPU modules or CPU modules, but got device_ids [1], output_device None, "
        "and module parameters {device(type='cpu')}",
        "https://github.com/meta-pytorch/tnt/pull/398",
        {"ddp-module-not-on-device"},
    ),
    (
        "DDP constructor 3",
        "[rank0]: ValueError: DistributedDataParallel device_ids and output_device arguments only work with "
        "single-device/multiple-device GPU modules or CPU modules, but got device_ids [0], output_device None, "
        "and module parameters {device(type='cpu')}.",
        "https://github.com/ultralytics/ultralytics/pull/15701",
        {"ddp-module-not-on-device"},
    ),
    (
        "DDP constructor 4",
        "AssertionError: DistributedDataParallel with multi-device module only works with CUDA devices, but "
        "module parameters locate in {device(type='cuda', index=0), device(type='cpu')}.",
        "https://github.com/facebookresearch/VMZ/issues/124",
        {"ddp-module-not-on-device"},
    ),
    (
        "legacy type not available",
        "TypeError: type torch.cuda.FloatTensor not available. Torch not compiled with CUDA enabled.",
        "https://github.com/sulaimanvesal/vertebraeSegementation/issues/4",
        {"torch-not-compiled-with-cuda"},
    ),
    (
        "legacy type not available 2",
        "TypeError: type torch.cuda.FloatTensor not available. Torch not compiled with CUDA enabled.",
        "https://github.com/yenchenlin/nerf-pytorch/issues/48",
        {"torch-not-compiled-with-cuda"},
    ),
    (
        "no NVIDIA driver",
        "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and "
        "installed a driver from http://www.nvidia.com/Download/index.aspx",
        "https://github.com/facebookresearch/pytorch3d/issues/1259",
        {"cuda-requested-without-gpu"},
    ),
    (
        "no NVIDIA driver 2",
        "UserWarning: CUDA initialization: Found no NVIDIA driver on your system. Please check that you have "
        "an NVIDIA GPU and installed a driver",
        "https://github.com/HIT-SCIR/ltp/issues/468",
        {"cuda-requested-without-gpu"},
    ),
    (
        "no CUDA GPUs",
        "RuntimeError: No CUDA GPUs are available",
        "https://github.com/xianlin7/SAMUS/issues/39",
        None,
    ),
    (
        "no CUDA GPUs 2",
        "RuntimeError: No CUDA GPUs are available",
        "https://github.com/thuml/Anomaly-Transformer/issues/74",
        None,
    ),
    (
        "driver too old",
        "RuntimeError: The NVIDIA driver on your system is too old (found version 11060). Please update your "
        "GPU driver by downloading and installing a new version from the URL: "
        "http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a "
        "PyTorch version that has been compiled with your version of the CUDA driver.",
        "https://github.com/zai-org/ChatGLM3/issues/100",
        {"torch-not-compiled-with-cuda"},
    ),
    (
        "driver too old 2",
        "/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py:124: UserWarning: CUDA initialization: "
        "The NVIDIA driver on your system is too old (found version 11000). Please update your GPU driver by "
        "downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx "
        "Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with "
        "your version of the CUDA driver. (Triggered internally at "
        "/opt/pytorch/pytorch/c10/cuda/CUDAFunctions.cpp:108.)",
        "https://github.com/IEIT-Yuan/Yuan-2.0/issues/65",
        {"torch-not-compiled-with-cuda"},
    ),
    (
        "fused requires",
        "[BUG] PT: RuntimeError: `fused=True` requires all the params to be floating point Tensors of "
        "supported devices: ['cuda', 'xpu', 'privateuseone'].",
        "https://github.com/deepmodeling/deepmd-kit/issues/4667",
        {"optimizer-state-after-resume"},
    ),
    (
        "fused requires 2",
        "RuntimeError: fused=True requires all the params to be floating point Tensors\nof supported devices: "
        "['mps', 'cuda', 'xpu', 'cpu', 'privateuseone']\nbut torch.float32 and hpu",
        "https://github.com/pytorch/pytorch/pull/148666",
        {"optimizer-state-after-resume"},
    ),
    (
        "capturable",
        "AssertionError: If capturable=True, params and state_steps must be CUDA tensors.",
        "https://github.com/PJLab-ADG/neuralsim/issues/18",
        {"optimizer-state-after-resume"},
    ),
    (
        "capturable 2",
        "AssertionError: If capturable=False, state_steps should not be CUDA tensors.",
        "https://github.com/Senwang98/MonoSKD/issues/9",
        {"optimizer-state-after-resume"},
    ),
    (
        "foreach same index",
        "RuntimeError: Tensors of the same index must be on the same device and the same dtype except `step` "
        "tensors that can be CPU and float32 notwithstanding",
        "https://github.com/huggingface/alignment-handbook/issues/210",
        {"optimizer-state-after-resume"},
    ),
    (
        "meta copy",
        "`NotImplementedError: Cannot copy out of meta tensor; no data!`",
        "https://github.com/vllm-project/llm-compressor/issues/1432",
        {"accelerate-offloaded-model-moved"},
    ),
    (
        "meta copy 2",
        "!!! Exception during processing !!! Cannot copy out of meta tensor; no data! Please use "
        "torch.nn.Module.to_empty() instead of torch.nn.Module.to() when moving module from meta to a "
        "different device.",
        "https://github.com/raykindle/ComfyUI_Step1X-Edit/issues/5",
        {"accelerate-offloaded-model-moved"},
    ),
    (
        "MPS linear",
        "2024-11-23T17:48:57.189452 - !!! Exception during processing !!! Tensor for argument input is on cpu "
        "but expected on mps",
        "https://github.com/Shakker-Labs/ComfyUI-IPAdapter-Flux/issues/13",
        {"inputs-not-moved"},
    ),
    (
        "no NCCL backend for cpu",
        "RuntimeError: No backend type associated with device type cpu",
        "https://github.com/zai-org/CogVLM/issues/328",
        {"nccl-cpu-tensors"},
    ),
    (
        "no NCCL backend for cpu 2",
        "[rank2]: RuntimeError: No backend type associated with device type cpu",
        "https://github.com/unslothai/unsloth-zoo/issues/129",
        {"nccl-cpu-tensors"},
    ),
    (
        "accelerate move warning",
        "You shouldn't move a model when it is dispatched on multiple devices.",
        "https://github.com/Comfy-Org/ComfyUI/issues/2095",
        None,
    ),
    (
        "accelerate move warning 2",
        "> You shouldn't move a model that is dispatched using accelerate hooks.",
        "https://github.com/huggingface/transformers/pull/33122",
        None,
    ),
    (
        "diffusers sequential offload",
        "!!! Exception during processing !!! It seems like you have activated sequential model offloading by "
        "calling `enable_sequential_cpu_offload`, but are now attempting to move the pipeline to GPU. This is not "
        "compatible with offloading. Please, move your pipeline `.to('cpu')` or consider removing the move "
        "altogether if you use sequential offloading.",
        "https://github.com/lum3on/comfyui_HiDream-Sampler/issues/6",
        {"accelerate-offloaded-model-moved"},
    ),
    (
        "diffusers sequential offload 2",
        "It seems like you have activated sequential model offloading by calling `enable_sequential_cpu_offload`, "
        "but are now attempting to move the pipeline to GPU. This is not compatible with offloading. Please, move "
        "your pipeline `.to('cpu')` or consider removing the move altogether if you use sequential offloading.",
        "https://github.com/smthemex/ComfyUI_EchoMimic/issues/163",
        {"accelerate-offloaded-model-moved"},
    ),
    (
        "transformers quantized cuda()",
        "ValueError: Calling `cuda()` is not supported for `4-bit` or `8-bit` quantized models. Please use the "
        "model as it is, since the model has already been set to the correct devices and casted to the correct "
        "`dtype`.",
        "https://github.com/huggingface/text-generation-inference/pull/1153",
        {"bnb-quantized-model-to"},
    ),
    (
        "Lightning accelerator",
        "pytorch_lightning.utilities.exceptions.MisconfigurationException: CUDAAccelerator can not run on your "
        "system since the accelerator is not available. The following accelerator(s) is available and can be "
        "passed into `accelerator` argument of `Trainer`: ['cpu'].",
        "https://github.com/zjunlp/MKGformer/issues/14",
        {"torch-not-compiled-with-cuda"},
    ),
    (
        "Lightning accelerator 2",
        "GPUAccelerator can not run on your system since the accelerator is not available. The following "
        "accelerator(s) is available and can be passed into `accelerator` argument of `Trainer`: ['cpu'].",
        "https://github.com/open-edge-platform/anomalib/issues/510",
        {"torch-not-compiled-with-cuda"},
    ),
    (
        "torchmetrics",
        "RuntimeError: Encountered different devices in metric calculation (see stacktrace for details). This "
        "could be due to the metric class not being on the same device as input. Instead of "
        "`metric=MeanSquaredError(...)` try to do `metric=MeanSquaredError(...).to(device)` where device "
        "corresponds to the device of the input.",
        "https://github.com/theislab/interscale/issues/28",
        {"loss-weight-on-cpu"},
    ),
    (
        "torchmetrics 2",
        "RuntimeError: Encountered different devices in metric calculation (see stacktrace for details). This "
        "could be due to the metric class not being on the same device as input. Instead of "
        "`metric=MultilabelAccuracy(...)` try to do `metric=MultilabelAccuracy(...).to(device)` where device "
        "corresponds to the device of theinput.",
        "https://github.com/open-edge-platform/geti/issues/3168",
        {"loss-weight-on-cpu"},
    ),
    # From the census's tune half (benchmarks/census/census.yaml), the source is the census item's
    (
        "0.3 argument parser, CUDA source and CPU index",
        "TypeError: torch.index_select received an invalid combination of arguments - got (torch.cuda.FloatTensor, "
        "int, torch.LongTensor), but expected (torch.cuda.FloatTensor source, int dim, torch.cuda.LongTensor index)",
        CENSUS_SOURCES["practical-pytorch-seq2seq-index-select-cpu-index"],
        {"inputs-not-moved", "tensor-created-without-device"},
    ),
    (
        "DGL feature and graph",
        'dgl._ffi.base.DGLError: Cannot assign node feature "h" on device cuda:0 to a graph on device cpu. '
        "Call DGLGraph.to() to copy the graph to the same device.",
        CENSUS_SOURCES["dgl-gnasmp-graph-not-moved"],
        {"dgl-graph-on-other-device"},
    ),
    (
        "torchaudio.save of a CUDA tensor",
        "RuntimeError: Input tensor has to be on CPU.",
        CENSUS_SOURCES["torchsynth-torchaudio-save-gpu-tensor"],
        {"numpy-on-cuda-tensor"},
    ),
    (
        "CTC targets left on the CPU",
        "RuntimeError: Tensor for argument #2 'targets' is on CPU, but expected it to be on GPU (while checking "
        "arguments for ctc_loss_gpu)",
        CENSUS_SOURCES["pytorchocr-ctc-targets-on-cpu"],
        {"inputs-not-moved"},
    ),
    (
        "CPU-only build, torch.cuda.set_device",
        "AttributeError: module 'torch._C' has no attribute '_cuda_setDevice'",
        CENSUS_SOURCES["yolox-fish-cpu-torch-cuda-setdevice"],
        {"torch-not-compiled-with-cuda"},
    ),
]


@pytest.mark.parametrize(("name", "line", "source", "want"), VARIANTS, ids=[v[0] for v in VARIANTS])
def test_each_wording_is_recognised(name, line, source, want, matcher):
    result = matcher.explain(line)
    assert result.traceback is not None, f"{name}: not found in the text"
    assert not result.evidence.dtype_only, name
    ranked = [m.id for m in result.matches]
    assert ranked, f"{name} ({source}) matched no entry"
    if want is not None:
        assert ranked[0] in want, f"{name} ({source}): {ranked[:3]}"


@pytest.mark.parametrize(
    "line",
    [
        # https://github.com/baaivision/See3D/issues/11
        "RuntimeError: Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor) should be the same",
        # shared/MESSAGES.md §3: scalar-type names, a dtype-only check
        "RuntimeError: Input type (c10::Half) and bias type (float) should be the same",
        # shared/MESSAGES.md §2 note: TH backend form with equal backends
        "RuntimeError: expected backend CPU and dtype Double but got backend CPU and dtype Float",
    ],
)
def test_dtype_only_mismatch_is_never_a_device_error(line, matcher):
    result = matcher.explain(line)
    assert result.evidence.dtype_only
    assert result.matches == []


def test_the_old_iterator_wording_raised_in_an_optimizer_step_is_optimizer_state(matcher):
    """PyTorch 1.3-1.5 raised TensorIterator's `expected device X but got device Y` from every op, the
    optimizer's own arithmetic included: inside torch/optim, the state and the grads disagree."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 88, in <module>\n'
        "    optimizer.step()\n"
        '  File "/opt/env/lib/python3.7/site-packages/torch/optim/adagrad.py", line 96, in step\n'
        "    state['sum'].addcmul_(1, grad, grad)\n"
        "RuntimeError: expected device cpu but got device cuda:0\n"
    )
    assert [m.id for m in matcher.explain(text).matches][:1] == ["optimizer-state-after-resume"]
