"""The probe models of the operator support table: data for :mod:`.operator_probes`, which lowers and judges them.

A *probe* is a function that builds a model holding one operator and draws its inputs:
``() -> (model, inputs)``, and for static int8 ``() -> (model, inputs, output_scale)``, the scale the
tolerance is counted in. Three tables map an Edge operator (``"add.Tensor"``) to its probe, one per precision
a partitioner config can claim; :data:`DYNAMIC_PROBES` holds the forms that keep a batch dimension dynamic,
and :data:`CONDITIONS` the restrictions of the configs' ``check_constraints``, each with a form the
partitioner must refuse and one it must take. :data:`LEGACY_FLOW` and :data:`SKIP_DIM_ORDER` name the probes
that need another lowering flow (:func:`.operator_probes.lower`).

Adding an operator is adding a row here; nothing in the engine changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable  # typing.Callable: Sphinx resolves it without an inventory

import torch
import torch.nn.functional as F

from xnnguide.core.delegation import calls
from xnnguide.core.schemes import quantize_pt2e

Inputs = tuple[torch.Tensor, ...]
#: ``() -> (model, inputs)``, or ``() -> (model, inputs, output_scale)`` for static int8.
Probe = Callable[[], tuple]


class _Op(torch.nn.Module):
    """A module whose forward is one function of its inputs."""

    def __init__(self, fn: Callable[..., torch.Tensor]):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.fn(*inputs)


def _fn(fn: Callable[..., torch.Tensor], *inputs: Callable[[], torch.Tensor]):
    """A probe builder for ``fn`` applied to freshly drawn inputs."""
    return lambda: (_Op(fn), tuple(make() for make in inputs))


#: The shapes of the probes' inputs: a batch of two 16-vectors, one 4-channel 8x8 image.
VEC, IMG = (2, 16), (1, 4, 8, 8)
_vec, _img = partial(torch.randn, VEC), partial(torch.randn, IMG)


def _positive() -> torch.Tensor:
    return torch.rand(2, 16) + 0.5  # log, sqrt, rsqrt and division need inputs away from zero


def _batch_norm() -> torch.nn.Module:
    norm = torch.nn.BatchNorm2d(4)
    # Non-trivial statistics, so the probe checks the normalisation itself.
    norm.running_mean.uniform_(-0.5, 0.5)
    norm.running_var.uniform_(0.5, 2.0)
    norm.weight.data.uniform_(0.5, 1.5)
    norm.bias.data.uniform_(-0.5, 0.5)
    return norm.eval()


#: fp32 probes: target -> () -> (model, inputs). Each model holds one operator.
FP32_PROBES: dict[str, Probe] = {
    **{f"{name}.default": _fn(getattr(torch, name), _vec)
       for name in ("abs", "exp", "neg", "relu", "sigmoid", "sin", "cos", "tanh")},
    **{f"{name}.default": _fn(getattr(torch, name), _positive) for name in ("log", "sqrt", "rsqrt")},
    **{f"{name}.Tensor": _fn(getattr(torch, name), _vec, _vec) for name in ("add", "sub", "mul")},
    **{f"{name}.default": _fn(getattr(torch, name), _vec, _vec) for name in ("maximum", "minimum")},
    "addmm.default": lambda: (torch.nn.Linear(16, 8), (_vec(),)),  # with LEGACY_FLOW
    "avg_pool2d.default": _fn(lambda x: F.avg_pool2d(x, 2), _img),
    "_native_batch_norm_legit_no_training.default": lambda: (_batch_norm(), (_img(),)),
    "bmm.default": _fn(torch.bmm, lambda: torch.randn(2, 4, 8), lambda: torch.randn(2, 8, 3)),
    "cat.default": _fn(lambda a, b: torch.cat([a, b], dim=1), _vec, _vec),
    "ceil.default": _fn(lambda x: torch.ceil(x * 3), _vec),
    "clone.default": _fn(lambda x: x.clone(), _vec),
    "_clone_dim_order.default": _fn(lambda x: x.clone(), _vec),
    "constant_pad_nd.default": _fn(lambda x: F.pad(x, (1, 1, 1, 1), value=0.5), _img),
    "convolution.default": lambda: (torch.nn.Conv2d(4, 6, 3, padding=1), (_img(),)),
    "clamp.default": _fn(lambda x: torch.clamp(x, -0.5, 0.5), _vec),
    "div.Tensor": _fn(torch.div, _vec, _positive),
    "floor.default": _fn(lambda x: torch.floor(x * 3), _vec),
    "gelu.default": _fn(F.gelu, _vec),
    "hardtanh.default": _fn(lambda x: F.hardtanh(x, -0.5, 0.5), _vec),
    "hardswish.default": _fn(F.hardswish, lambda: _vec() * 4),
    "leaky_relu.default": _fn(lambda x: F.leaky_relu(x, 0.1), _vec),
    "linear.default": lambda: (torch.nn.Linear(16, 8), (_vec(),)),
    # XNNPACK's max.dim takes 4-D input only (see CONDITIONS).
    "max.dim": _fn(lambda x: torch.max(x, dim=3, keepdim=True)[0], _img),
    "max_pool2d.default": _fn(lambda x: F.max_pool2d(x, 2), _img),
    "mean.dim": _fn(lambda x: x.mean(dim=(2, 3), keepdim=True), _img),
    "mm.default": lambda: (torch.nn.Linear(16, 8, bias=False), (_vec(),)),
    "permute_copy.default": _fn(lambda x: x.permute(0, 2, 3, 1), _img),
    "pow.Tensor_Scalar": _fn(lambda x: x**2, _vec),
    "prelu.default": lambda: (torch.nn.PReLU(4, init=0.2), (_img(),)),
    "_to_dim_order_copy.default": _fn(lambda x: x.to(memory_format=torch.channels_last), _img),
    "slice_copy.Tensor": _fn(lambda x: x[:, 2:10], _vec),
    "_softmax.default": _fn(lambda x: torch.softmax(x, dim=-1), _vec),
    "unsqueeze_copy.default": _fn(lambda x: x.unsqueeze(-1), _vec),
    "upsample_bilinear2d.vec": _fn(
        lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False), _img
    ),
    "view_copy.default": _fn(lambda x: x.reshape(4, 8), _vec),
}

#: Dynamic-shape forms of probes whose fp32 form would pin the batch size.
DYNAMIC_PROBES = {"view_copy.default": _fn(lambda x: x.reshape(x.shape[0] * 2, 8), _vec)}

#: Probes whose target operator only appears with a non-default Edge config:
#: ``clone`` becomes ``_clone_dim_order`` unless dim-order ops are skipped.
SKIP_DIM_ORDER = {"clone.default"}
#: Probes that go through the older ``to_edge`` + ``to_backend`` flow: there
#: ``linear`` decomposes into ``permute_copy`` + ``addmm`` (or ``mm`` without
#: bias), which is how ``addmm`` and ``mm`` reach the partitioner.
LEGACY_FLOW = {"addmm.default", "mm.default"}


def _qparams(tensor: torch.Tensor) -> tuple[float, int]:
    """Affine int8 parameters covering *tensor*'s range (and zero), as a calibrating observer would pick."""
    low = min(tensor.min().item(), 0.0)
    high = max(tensor.max().item(), 0.0)
    scale = max(high - low, 1e-6) / 255.0
    zero_point = int(round(-128 - low / scale))
    return scale, max(-128, min(127, zero_point))


def _qdq(x: torch.Tensor, scale: float, zero_point: int) -> torch.Tensor:
    """Quantize to int8 and back: the pair a PT2E quantizer leaves on a tensor."""
    q = torch.ops.quantized_decomposed.quantize_per_tensor.default(x, scale, zero_point, -128, 127, torch.int8)
    return torch.ops.quantized_decomposed.dequantize_per_tensor.default(q, scale, zero_point, -128, 127, torch.int8)


#: int8 probes for operators that keep their input's quantization parameters.
SHARED_QPARAMS = {
    "cat.default", "clamp.default", "hardtanh.default", "max_pool2d.default", "permute_copy.default",
    "relu.default", "slice_copy.Tensor", "_to_dim_order_copy.default", "unsqueeze_copy.default",
    "view_copy.default", "mean.dim",
}


def _explicit_int8(target: str) -> tuple[torch.nn.Module, Inputs, float]:
    """The fp32 probe of *target* between quantize/dequantize pairs with fixed parameters: one operator on int8 data.

    Operators whose output stays within their input's range (data movement,
    pooling, mean, relu and clamping: :data:`SHARED_QPARAMS`) keep their
    input's parameters, as a quantizer shares them; the others get parameters
    for their own output range.
    """
    op, inputs = FP32_PROBES[target]()
    in_params = [_qparams(x) for x in inputs]
    if target == "cat.default":  # cat's inputs must share one set of parameters
        in_params = [_qparams(torch.cat(inputs))] * len(inputs)

    def on_dequantized(*xs: torch.Tensor) -> torch.Tensor:
        return op(*[_qdq(x, *params) for x, params in zip(xs, in_params)])

    with torch.no_grad():
        out_params = in_params[0] if target in SHARED_QPARAMS else _qparams(on_dequantized(*inputs))
    return _Op(lambda *xs: _qdq(on_dequantized(*xs), *out_params)), inputs, out_params[0]


def _gemm_int8(target: str, dynamic_quantization: bool) -> tuple[torch.nn.Module, Inputs, float | None]:
    """The fp32 probe of *target* quantized by ``XNNPACKQuantizer``, calibrated on its own input."""
    model, inputs = FP32_PROBES[target]()
    quantized = quantize_pt2e(model, inputs, [inputs], dynamic=dynamic_quantization)
    # Static int8: the scale of the last quantize node. Dynamic quantization
    # returns fp32; its tolerance is set relative to the output.
    scales = [node.args[1] for node in quantized.graph.nodes if calls(node, "quantize_per_tensor.default")]
    return quantized, inputs, None if dynamic_quantization else float(scales[-1])


def _affine_dynamic() -> tuple[torch.nn.Module, Inputs, None]:
    """A linear layer quantized by torchao's ``quantize_`` (int8 dynamic activations and weights).

    Its graph holds torchao's ``choose_qparams_affine``, ``quantize_affine`` and ``dequantize_affine``.
    """
    from torchao.quantization.granularity import PerAxis
    from torchao.quantization.quant_api import Int8DynamicActivationIntxWeightConfig, quantize_

    model = torch.nn.Sequential(torch.nn.Linear(16, 8))
    quantize_(model, Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int8, weight_granularity=PerAxis(0)))
    return model, (_vec(),), None


def _quantize_dequantize() -> tuple[torch.nn.Module, Inputs, float]:
    """Only a quantize and a dequantize node: fp32 to int8 and back."""
    inputs = (_vec(),)
    params = _qparams(inputs[0])
    return _Op(lambda x: _qdq(x, *params)), inputs, params[0]


#: The GEMM claims, probed int8 static and dynamic by quantizing their fp32 probes.
GEMMS = ("linear.default", "convolution.default", "addmm.default", "mm.default")

#: Static int8 probes: target -> () -> (model, inputs, output_scale); the operator between quantize and
#: dequantize pairs, or a GEMM layer quantized by ``XNNPACKQuantizer``.
INT8_PROBES: dict[str, Probe] = {
    **{target: partial(_explicit_int8, target)
       for target in {*SHARED_QPARAMS, "add.Tensor", "mul.Tensor", "sub.Tensor"}},
    # q -> dq alone: the conversions at the edges of every int8 partition.
    "quantize_per_tensor.default": _quantize_dequantize,
    "dequantize_per_tensor.default": _quantize_dequantize,
    **{target: partial(_gemm_int8, target, dynamic_quantization=False) for target in GEMMS},
}

#: Dynamic int8 probes: target -> () -> (model, inputs, None); the tolerance is relative to the output.
DYNAMIC_INT8_PROBES: dict[str, Probe] = {
    **{target: partial(_gemm_int8, target, dynamic_quantization=True) for target in GEMMS},
    "quantize_affine.default": _affine_dynamic,
    "dequantize_affine.default": _affine_dynamic,
    "choose_qparams_affine.default": _affine_dynamic,
}



@dataclass(frozen=True)
class Condition:
    """A restriction a config's ``check_constraints`` enforces, with a probe it must refuse and one it must take.

    *accepted* ``None`` means the operator's fp32 probe (in ``FP32_PROBES``), which the fp32 column checks.
    """

    target: str
    text: str
    refused_form: str
    refused: Probe
    accepted_form: str
    accepted: Probe | None = None
    dynamic_shapes: bool = False  # the refused probe is exported with a dynamic batch dimension


def _weight_input(fn, *shape):
    """A probe whose weight is a second program input instead of a constant."""
    return _fn(fn, _img if len(shape) == 4 or fn is F.prelu else _vec, lambda: torch.randn(shape) * 0.2)


def _half(target):
    return lambda: (lambda model, inputs: (model.half(), tuple(x.half() for x in inputs)))(*FP32_PROBES[target]())


#: The conditions of the installed configs' ``check_constraints``, each with probes.
CONDITIONS = [
    Condition("add.Tensor", "alpha must be 1", "alpha=2", _fn(lambda a, b: torch.add(a, b, alpha=2), _vec, _vec),
              "alpha=1"),
    Condition("sub.Tensor", "alpha must be 1", "alpha=2", _fn(lambda a, b: torch.sub(a, b, alpha=2), _vec, _vec),
              "alpha=1"),
    Condition("pow.Tensor_Scalar", "the exponent must be the integer 2", "x**4", _fn(lambda x: x**4, _vec), "x**2"),
    Condition("max_pool2d.default", "stride at most the kernel size", "kernel 2, stride 3",
              _fn(lambda x: F.max_pool2d(x, 2, stride=3), _img), "kernel 2, stride 2"),
    Condition("max_pool2d.default", "ceil_mode only with static shapes", "ceil_mode, dynamic batch",
              _fn(lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True), _img), "ceil_mode, static shapes",
              _fn(lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True), _img), dynamic_shapes=True),
    Condition("avg_pool2d.default", "no ceil_mode", "ceil_mode=True",
              _fn(lambda x: F.avg_pool2d(x, 3, 2, ceil_mode=True), _img), "ceil_mode=False"),
    Condition("avg_pool2d.default", "padding only with count_include_pad=False", "padding 1, count_include_pad=True",
              _fn(lambda x: F.avg_pool2d(x, 2, padding=1), _img), "padding 1, count_include_pad=False",
              _fn(lambda x: F.avg_pool2d(x, 2, padding=1, count_include_pad=False), _img)),
    Condition("avg_pool2d.default", "divisor_override only equal to the window size", "kernel 2, divisor_override=3",
              _fn(lambda x: F.avg_pool2d(x, 2, divisor_override=3), _img), "kernel 2, divisor_override=4",
              _fn(lambda x: F.avg_pool2d(x, 2, divisor_override=4), _img)),
    Condition("_softmax.default", "over the last dimension only", "dim=0",
              _fn(lambda x: torch.softmax(x, dim=0), _vec), "dim=-1"),
    Condition("mean.dim", "4-D input only", "3-D input", _fn(lambda x: x.mean(dim=-1, keepdim=True), _vec),
              "4-D input"),
    Condition("mean.dim", "over dimensions 2 and 3 only", "dims (1, 2)",
              _fn(lambda x: x.mean(dim=(1, 2), keepdim=True), _img), "dims (2, 3)"),
    Condition("mean.dim", "keepdim=True only", "keepdim=False", _fn(lambda x: x.mean(dim=(2, 3)), _img),
              "keepdim=True"),
    Condition("max.dim", "4-D input only", "2-D input", _fn(lambda x: torch.max(x, dim=1, keepdim=True)[0], _vec),
              "4-D input"),
    Condition("max.dim", "values only, not indices", "indices used", _fn(lambda x: torch.max(x, dim=3), _img),
              "values only"),
    Condition("slice_copy.Tensor", "step 1 only", "x[:, ::2]", _fn(lambda x: x[:, ::2], _vec), "x[:, 2:10]"),
    Condition("slice_copy.Tensor", "static shapes only", "dynamic batch", _fn(lambda x: x[:, 2:10], _vec),
              "static shapes", dynamic_shapes=True),
    Condition("view_copy.default", "static target shape only", "reshape to 2*batch rows",
              DYNAMIC_PROBES["view_copy.default"], "static shapes", dynamic_shapes=True),
    Condition("upsample_bilinear2d.vec", "static output size only", "dynamic batch",
              FP32_PROBES["upsample_bilinear2d.vec"], "static shapes", dynamic_shapes=True),
    Condition("constant_pad_nd.default", "no negative padding", "padding -1",
              _fn(lambda x: F.pad(x, (-1, -1, -1, -1)), _img), "padding 1"),
    Condition("unsqueeze_copy.default", "on the trailing dimension only", "unsqueeze(0)",
              _fn(lambda x: x.unsqueeze(0), _vec), "unsqueeze(-1)"),
    Condition("_to_dim_order_copy.default", "no dtype conversion", "fp32 to fp16",
              _fn(lambda x: x.to(torch.float16), _img), "dim order only"),
    Condition("_clone_dim_order.default", "keeps the dim order", "clone to channels_last",
              _fn(lambda x: x.clone(memory_format=torch.channels_last), _img), "plain clone"),
    Condition("convolution.default", "constant weight", "weight as input",
              _weight_input(lambda x, w: F.conv2d(x, w, padding=1), 6, 4, 3, 3), "weight a parameter"),
    Condition("convolution.default", "1-D or 2-D only", "Conv3d",
              lambda: (torch.nn.Conv3d(2, 2, 1), (torch.randn(1, 2, 2, 4, 4),)), "Conv2d"),
    Condition("linear.default", "constant weight", "weight as input", _weight_input(F.linear, 8, 16),
              "weight a parameter"),
    Condition("prelu.default", "constant weight", "weight as input", _weight_input(F.prelu, 4),
              "weight a parameter"),
    Condition("gelu.default", "fp32 only, not fp16", "fp16", _half("gelu.default"), "fp32"),
]
