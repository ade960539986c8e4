"""Check, operator by operator, what the installed XNNPACK partitioner claims.

``XnnpackPartitioner`` decides what XNNPACK takes with one *config* class per
Edge operator; each names its operator (``target_name``) and the precisions it
accepts (``supported_precision_types()``: fp32, static int8, dynamic int8). A
claim is not a proof, so this module lowers a *probe* for every claim, a model
of one operator (for int8, between the quantize and dequantize nodes a
quantizer would leave around it), then checks that

1. the operator ended up inside an XNNPACK delegate (for int8: together with
   its dequantized inputs and quantized output, so XNNPACK ran it on int8 data),
2. the ``.pte`` file loads and runs on the ExecuTorch runtime, and
3. its output matches eager PyTorch within a stated tolerance.

The claims are read from the installed package each time (:func:`claims`), so
a new config in a later executorch shows up as a row without a probe, flagged.
``snippets/lowering/verify_operator_support.py`` turns :func:`run_all`'s results
into the table on the operator support page.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from typing import Callable  # typing.Callable: Sphinx resolves it without an inventory

import torch
import torch.nn.functional as F

from xnnguide.core.delegation import delegated_graphs, op_name, ops_outside_delegates
from xnnguide.core.schemes import quantize_pt2e

#: Column names of the three precisions, in table order.
FP32, INT8, DYNAMIC_INT8 = "fp32", "int8 (static)", "int8 (dynamic)"
PRECISIONS = (FP32, INT8, DYNAMIC_INT8)



class Status(StrEnum):
    """How a probe ended; the value is what a table cell shows. Only ``VERIFIED`` counts as support.

    No two differ by case only: a failed claim (``NOT_DELEGATED``) and an extra column's finding (``REFUSED``)
    read differently on the page, not just in capitals.
    """

    VERIFIED = "verified"
    #: A claim whose probe XNNPACK did not take: the claim fails.
    NOT_DELEGATED = "NOT DELEGATED"
    FAILED = "FAILED"
    MISMATCH = "WRONG OUTPUT"
    NO_PROBE = "NO PROBE"
    #: fp16 or dynamic shapes, which the partitioner declines for this operator: a finding, not a failure.
    REFUSED = "refused"
    #: Dynamic shapes that export made static: the column measured nothing dynamic.
    NOT_DYNAMIC = "NOT DYNAMIC"


VERIFIED, NOT_DELEGATED, FAILED, MISMATCH, NO_PROBE, REFUSED, NOT_DYNAMIC = Status
NOT_CLAIMED = "not claimed"

#: fp32: XNNPACK may round and sum in another order than eager PyTorch, and
#: approximates exp, tanh, gelu... with polynomials; outputs are of order 1.
FP32_ATOL = FP32_RTOL = 1e-4
#: int8: XNNPACK requantizes with its own rounding: one quantization step.
INT8_STEPS = 1.01
#: dynamic int8: XNNPACK picks activation parameters at run time, rounding
#: unlike the eager reference: 2% of the largest output, enough to catch a
#: wrong or missing operator.
DYNAMIC_RELATIVE = 0.02

#: Two more columns, measured for every operator with an fp32 claim: the same
#: probe in half precision (the configs' common dtype check admits float16
#: wherever it admits float32), and the same probe exported with a dynamic
#: batch dimension.
FP16, DYNAMIC_SHAPES = "fp16", "dynamic shapes"
EXTRA_COLUMNS = (FP16, DYNAMIC_SHAPES)
#: fp16 keeps about three significant digits; the reference is fp32 eager on the fp16-rounded inputs.
FP16_ATOL = FP16_RTOL = 1e-2
#: Dynamic probes: dimension 0 of every input is one ``torch.export.Dim`` with
#: this range, exported at size 2 (inputs of size 1 are doubled) and run at sizes 2 and 3.
BATCH_MIN, BATCH_MAX = 1, 4

Inputs = tuple[torch.Tensor, ...]


@dataclass(frozen=True)
class Claim:
    """One operator and precision that a partitioner config says XNNPACK accepts."""

    target: str  # Edge operator name without namespace, e.g. "add.Tensor"
    config: str  # the config class, e.g. "AddConfig"
    precision: str  # one of PRECISIONS, or an extra column


@dataclass
class ProbeResult:
    """What happened when a claim was probed."""

    claim: Claim
    status: Status
    detail: str = ""
    max_abs_error: float | None = None
    tolerance: float | None = None

    @property
    def verified(self) -> bool:
        return self.status == VERIFIED

    def cell(self) -> str:
        """The text of this result's table cell."""
        if self.status == VERIFIED:
            return f"verified (error {self.max_abs_error:.0e} ≤ {self.tolerance:.0e})"
        return f"{self.status}: {self.detail}" if self.detail else self.status


def claims() -> list[Claim]:
    """Every (operator, precision) pair of ``ALL_PARTITIONER_CONFIGS``, the partitioner's default configs."""
    from executorch.backends.xnnpack.partition.config import ALL_PARTITIONER_CONFIGS
    from executorch.backends.xnnpack.partition.config.xnnpack_config import ConfigPrecisionType

    names = {ConfigPrecisionType.FP32: FP32, ConfigPrecisionType.STATIC_QUANT: INT8,
             ConfigPrecisionType.DYNAMIC_QUANT: DYNAMIC_INT8}
    order = list(names)  # then any precision a later release adds: a column of its own, no probe, flagged
    return [Claim(config.target_name, config.__name__, names.get(precision, precision.name.lower()))
            for config in ALL_PARTITIONER_CONFIGS
            for precision in sorted(config().supported_precision_types(),
                                    key=lambda p: order.index(p) if p in names else len(order))]


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
FP32_PROBES: dict[str, Callable[[], tuple[torch.nn.Module, Inputs]]] = {
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
    scales = [node.args[1] for node in quantized.graph.nodes if _calls(node, "quantize_per_tensor.default")]
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
_GEMMS = ("linear.default", "convolution.default", "addmm.default", "mm.default")

INT8_PROBES: dict[str, Callable[[], tuple[torch.nn.Module, Inputs, float | None]]] = {
    **{target: partial(_explicit_int8, target)
       for target in {*SHARED_QPARAMS, "add.Tensor", "mul.Tensor", "sub.Tensor"}},
    # q -> dq alone: the conversions at the edges of every int8 partition.
    "quantize_per_tensor.default": _quantize_dequantize,
    "dequantize_per_tensor.default": _quantize_dequantize,
    **{target: partial(_gemm_int8, target, dynamic_quantization=False) for target in _GEMMS},
}

DYNAMIC_INT8_PROBES: dict[str, Callable[[], tuple[torch.nn.Module, Inputs, float | None]]] = {
    **{target: partial(_gemm_int8, target, dynamic_quantization=True) for target in _GEMMS},
    "quantize_affine.default": _affine_dynamic,
    "dequantize_affine.default": _affine_dynamic,
    "choose_qparams_affine.default": _affine_dynamic,
}


def probe_for(claim: Claim) -> Callable[[], tuple] | None:
    """The probe builder of *claim*, or ``None`` when this module has none."""
    table = {FP32: FP32_PROBES, INT8: INT8_PROBES, DYNAMIC_INT8: DYNAMIC_INT8_PROBES}.get(claim.precision, {})
    return table.get(claim.target)


def lower(target: str, model: torch.nn.Module, inputs: Inputs, dynamic_shapes=None):
    """Export *model* and lower it to XNNPACK as a reader would, in the flow *target* needs; return the Edge program."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.backends.xnnpack.utils.configs import get_transform_passes, get_xnnpack_edge_compile_config
    from executorch.exir import to_edge, to_edge_transform_and_lower

    exported = torch.export.export(model, inputs, dynamic_shapes=dynamic_shapes)
    if target in LEGACY_FLOW:
        edge = to_edge(exported, compile_config=get_xnnpack_edge_compile_config())
        return edge.transform(get_transform_passes()).to_backend(XnnpackPartitioner())
    return to_edge_transform_and_lower(
        exported, transform_passes=get_transform_passes(), partitioner=[XnnpackPartitioner()],
        compile_config=get_xnnpack_edge_compile_config(skip_dim_order=True) if target in SKIP_DIM_ORDER else None,
    )


def _symbolic(node: torch.fx.Node) -> bool:
    value = node.meta.get("val")
    return isinstance(value, torch.Tensor) and any(not isinstance(d, int) for d in value.shape)


def _calls(node: torch.fx.Node, *prefixes: str) -> bool:
    return node.op == "call_function" and op_name(node).startswith(prefixes)


@dataclass(frozen=True)
class DelegatedNode:
    """An operator inside a delegate, and the quantization around it."""

    target: str
    dequantized_input: bool  # some input comes from a dequantize node in the same delegate
    quantized_output: bool  # every user is a quantize node in the same delegate
    symbolic: bool = False  # some input has a symbolic (dynamic) dimension


@dataclass(frozen=True)
class Lowering:
    """What a lowered program delegated, read before ``to_executorch`` rewrites its graph."""

    outside: dict[str, int]
    inside: tuple[DelegatedNode, ...]

    @classmethod
    def read(cls, graph_module: torch.fx.GraphModule) -> Lowering:
        inside = tuple(
            DelegatedNode(op_name(node), any(_calls(arg, "dequantize_") for arg in node.all_input_nodes),
                          bool(node.users) and all(_calls(user, "quantize_", "choose_qparams") for user in node.users),
                          any(_symbolic(arg) for arg in node.all_input_nodes))
            for graph in delegated_graphs(graph_module) for node in graph.graph.nodes if node.op == "call_function"
        )
        return cls(dict(ops_outside_delegates(graph_module)), inside)


def delegation_problem(claim: Claim, lowering: Lowering) -> str:
    """Why *lowering* does not show *claim* delegated; ``""`` when it does.

    The operator must sit in an XNNPACK delegate and nowhere outside one. For
    static int8, its input must be dequantized and its output quantized
    inside that delegate (otherwise XNNPACK ran it in fp32); for dynamic int8,
    its input must be dequantized inside the delegate.
    """
    if lowering.outside.get(claim.target):
        return f"{lowering.outside[claim.target]} node(s) left outside XNNPACK"
    nodes = [node for node in lowering.inside if node.target == claim.target]
    if not nodes:
        return "the probe's graph has no such node"
    quantizing = claim.target.startswith(("quantize_", "dequantize_", "choose_qparams"))
    if claim.precision not in (INT8, DYNAMIC_INT8) or quantizing:
        return ""
    for node in nodes:
        if not node.dequantized_input:
            return "delegated, but not on int8 input"
        if claim.precision == INT8 and not node.quantized_output:
            return "delegated, but its output is not quantized inside XNNPACK"
    return ""


@dataclass
class ProbeRun:
    """What lowering and running one probe produced, before any verdict on a claim."""

    lowering: Lowering | None = None
    expected: torch.Tensor | None = None
    actual: torch.Tensor | None = None
    scale: float | None = None
    error: str = ""


class _SideBySide(torch.nn.Module):
    """Several probe models in one program, so that one lowering judges them all."""

    def __init__(self, models: list[torch.nn.Module], arities: list[int]):
        super().__init__()
        self.models, self.arities = torch.nn.ModuleList(models), arities

    def forward(self, *inputs: torch.Tensor):
        outputs, start = [], 0
        for model, arity in zip(self.models, self.arities):
            outputs.append(model(*inputs[start:start + arity]))
            start += arity
        return tuple(outputs)


def _batch(x: torch.Tensor, size: int) -> torch.Tensor:
    """*x* with dimension 0 grown to *size* by repeating its rows, flipped so that they differ."""
    return torch.cat([x, x.flip(-1)] * size)[:size]


def _lower_and_run(builds: dict[str, Callable[[], tuple]], runtime, half: bool = False,
                   dynamic_shapes: bool = False,
                   lower_only: bool = False) -> dict[str, list[ProbeRun]]:
    """Lower the probes *builds* (target -> builder) as one program, run it; per target, one run per input size.

    *half*: models and inputs in fp16, against fp32 eager on the same inputs. *dynamic_shapes*: dimension 0
    of every input is one ``torch.export.Dim``, run at sizes 2 and 3. *lower_only*: lowered, not run.
    """
    targets, sizes = list(builds), (() if lower_only else (2, 3) if dynamic_shapes else (None,))
    lowering, actual = None, []
    try:
        torch.manual_seed(0)
        models, inputs, arities, scales, references = [], [], [], [], []
        for target in targets:
            model, args, *scale = builds[target]()
            scales.append(scale[0] if scale else None)
            if half:
                args = tuple(x.half() for x in args)
                with torch.no_grad():
                    references.append(model(*[x.float() for x in args]))
                model = model.half()
            if dynamic_shapes:
                args = tuple(_batch(x, 2) for x in args)
            models.append(model)
            inputs.extend(args)
            arities.append(len(args))
        side = _SideBySide(models, arities)
        runs = [tuple(_batch(x, size) for x in inputs) if size else tuple(inputs) for size in sizes]
        with torch.no_grad():
            expected = [references or list(side(*args)) for args in runs]
        batch = torch.export.Dim("batch", min=BATCH_MIN, max=BATCH_MAX)
        probe = side if len(models) > 1 else models[0]  # alone, a probe is lowered as itself
        shapes = (tuple({0: batch} for _ in inputs),) if dynamic_shapes else None
        edge = lower(targets[0], probe, tuple(inputs), shapes)
        lowering = Lowering.read(edge.exported_program().graph_module)
        if runs:
            program = runtime.load_program(edge.to_executorch().buffer)  # alive while its method runs
            actual = [program.load_method("forward").execute(list(args)) for args in runs]
        message = ""
    except Exception as error:  # a probe that raises is a finding, not a crash; it fails its whole program
        message = traceback.format_exception_only(type(error), error)[-1].strip().splitlines()[0][:160]
    if message or not actual:
        return {target: [ProbeRun(lowering, error=message)] for target in targets}
    return {target: [ProbeRun(lowering, want[i], got[i], scales[i]) for want, got in zip(expected, actual)]
            for i, target in enumerate(targets)}


def judge(claim: Claim, run: ProbeRun) -> ProbeResult:
    """The verdict on *claim* from a probe run: delegated, ran, and matched eager (a run only lowered: delegated)."""
    if run.lowering is not None:
        problem = delegation_problem(claim, run.lowering)
        if problem:
            return ProbeResult(claim, NOT_DELEGATED, problem)
    if run.error:
        return ProbeResult(claim, FAILED, run.error)
    expected, actual = run.expected, run.actual
    if expected is None:
        return ProbeResult(claim, VERIFIED, "", 0.0, 0.0)
    if claim.precision != FP32 and run.scale is not None:
        tolerance = INT8_STEPS * run.scale
    else:
        atol, rtol = {FP32: (FP32_ATOL, FP32_RTOL), DYNAMIC_SHAPES: (FP32_ATOL, FP32_RTOL),
                      FP16: (FP16_ATOL, FP16_RTOL)}.get(claim.precision, (0.0, DYNAMIC_RELATIVE))
        tolerance = atol + rtol * expected.abs().max().item()
    if actual.shape != expected.shape:
        detail = f"output shape {tuple(actual.shape)}, eager {tuple(expected.shape)}"
        return ProbeResult(claim, MISMATCH, detail, None, tolerance)
    error = (actual.to(expected.dtype) - expected).abs().max().item()
    if not error <= tolerance:  # also catches NaN
        return ProbeResult(claim, MISMATCH, f"error {error:.1e} > {tolerance:.1e}", error, tolerance)
    return ProbeResult(claim, VERIFIED, "", error, tolerance)


def run_probe(claim: Claim, runtime, build: Callable[[], tuple] | None = None) -> ProbeResult:
    """Lower, run and check the probe of *claim* on *runtime* (an ``executorch.runtime.Runtime``).

    *build* replaces the registered probe model: a function returning
    ``(model, inputs)`` (for int8, ``(model, inputs, output_scale)``).
    """
    build = build or probe_for(claim)
    if build is None:
        return ProbeResult(claim, NO_PROBE, "this guide has no probe model for it yet")
    return judge(claim, _lower_and_run({claim.target: build}, runtime)[claim.target][0])


def _side_by_side(claims: list[Claim], builds: dict[str, Callable[[], tuple]], runtime,
                  verdict: Callable[[Claim, list[ProbeRun]], ProbeResult], **options) -> dict[str, ProbeResult]:
    """Judge *claims* on their probes *builds* lowered side by side, one program per lowering flow (see ``lower``).

    A claim not verified so is probed again alone: side by side, another probe's nodes may count against it.
    """
    found = {}

    def probe(group: list[Claim]) -> None:
        runs = _lower_and_run({c.target: builds[c.target] for c in group}, runtime, **options)
        found.update({c.target: verdict(c, runs[c.target]) for c in group})

    legacy = [c for c in claims if c.target in LEGACY_FLOW]
    skip = [c for c in claims if c.target in SKIP_DIM_ORDER]
    for group in ([c for c in claims if c not in legacy + skip], legacy, skip):
        if group:
            probe(group)
    for claim in claims:
        if not found[claim.target].verified:
            probe([claim])
    return found


def run_all(runtime) -> list[ProbeResult]:
    """Probe every claim on *runtime* (an ``executorch.runtime.Runtime``).

    The fp32 probes run side by side. Claims that share a probe model
    (``quantize_affine``, ``dequantize_affine`` and ``choose_qparams_affine``
    all come from one dynamically quantized linear layer) are judged on one lowering of it.
    """
    fp32 = _side_by_side([c for c in claims() if c.precision == FP32 and c.target in FP32_PROBES], FP32_PROBES,
                         runtime, lambda claim, runs: judge(claim, runs[0]))
    runs, results = {}, []
    for claim in claims():
        if claim.precision == FP32 and claim.target in fp32:
            results.append(fp32[claim.target])
            continue
        build = probe_for(claim)
        key = (build, claim.target in LEGACY_FLOW, claim.target in SKIP_DIM_ORDER)
        if build is not None and key not in runs:
            runs[key] = _lower_and_run({claim.target: build}, runtime)[claim.target][0]
        results.append(judge(claim, runs[key]) if build else run_probe(claim, runtime))
    return results


def _judge_runs(claim: Claim, runs: list[ProbeRun], dynamic_shapes: bool = False) -> ProbeResult:
    """The verdict of an fp16, dynamic-shape or condition probe over its runs; here a refusal is a finding."""
    results = [judge(claim, run) for run in runs]
    if results[0].status == NOT_DELEGATED:
        return ProbeResult(claim, REFUSED, results[0].detail)
    lowering = runs[0].lowering
    if dynamic_shapes and lowering and not any(n.symbolic for n in lowering.inside if n.target == claim.target):
        return ProbeResult(claim, NOT_DYNAMIC, "export made its input sizes static")
    failed = next((result for result in results if not result.verified), None)
    return failed or ProbeResult(claim, VERIFIED, "", max(r.max_abs_error for r in results), results[-1].tolerance)


def run_extra(column: str, runtime) -> list[ProbeResult]:
    """Probe every operator with an fp32 claim in *column* (``FP16`` or ``DYNAMIC_SHAPES``), a few lowerings in all."""
    targets = [c.target for c in claims() if c.precision == FP32]
    dynamic_shapes = column == DYNAMIC_SHAPES
    builds = {**FP32_PROBES, **DYNAMIC_PROBES} if dynamic_shapes else FP32_PROBES
    found = _side_by_side([Claim(t, "", column) for t in targets if t in builds], builds, runtime,
                          partial(_judge_runs, dynamic_shapes=dynamic_shapes), half=column == FP16,
                          dynamic_shapes=dynamic_shapes)
    return [found.get(t) or ProbeResult(Claim(t, "", column), NO_PROBE) for t in targets]


@dataclass(frozen=True)
class Condition:
    """A restriction a config's ``check_constraints`` enforces, with a probe it must refuse and one it must take.

    *accepted* ``None`` means the operator's fp32 probe (in ``FP32_PROBES``), which the fp32 column checks.
    """

    target: str
    text: str
    refused_form: str
    refused: Callable[[], tuple]
    accepted_form: str
    accepted: Callable[[], tuple] | None = None
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


@dataclass
class ConditionResult:
    """Whether the partitioner refused a condition's refused probe and took its accepted one."""

    condition: Condition
    refused: ProbeResult
    accepted: ProbeResult

    @property
    def confirmed(self) -> bool:
        return self.refused.status == REFUSED and self.accepted.verified

    def cell(self) -> str:
        c = self.condition
        if self.confirmed:
            return f"{c.text} ({c.refused_form}: refused; {c.accepted_form}: verified)"
        return (f"{c.text}: NOT CONFIRMED ({c.refused_form}: {self.refused.cell()}; "
                f"{c.accepted_form}: {self.accepted.cell()})")


def _rounds(conditions: list[Condition]) -> list[list[Condition]]:
    """*conditions* in rounds with at most one condition per operator, so that each round is one lowering."""
    rounds: list[list[Condition]] = []
    for condition in conditions:
        free = next((r for r in rounds if all(c.target != condition.target for c in r)), None)
        free.append(condition) if free is not None else rounds.append([condition])
    return rounds


def run_conditions(runtime, fp32_results: list[ProbeResult]) -> list[ConditionResult]:
    """Probe every condition of ``CONDITIONS``; accepted forms that are the fp32 probe reuse *fp32_results*."""

    def probe(conditions: list[Condition], form: str, lower_only: bool = False, dynamic_shapes: bool = False) -> dict:
        found = {}
        for group in _rounds(conditions):
            runs = _lower_and_run({c.target: getattr(c, form) for c in group}, runtime, lower_only=lower_only,
                                  dynamic_shapes=dynamic_shapes)
            found.update({id(c): _judge_runs(Claim(c.target, "", FP32), runs[c.target], dynamic_shapes) for c in group})
        return found

    refused = {**probe([c for c in CONDITIONS if not c.dynamic_shapes], "refused", lower_only=True),
               **probe([c for c in CONDITIONS if c.dynamic_shapes], "refused", lower_only=True, dynamic_shapes=True)}
    accepted = probe([c for c in CONDITIONS if c.accepted is not None], "accepted")
    fp32 = {r.claim.target: r for r in fp32_results if r.claim.precision == FP32}
    missing = ProbeResult(Claim("", "", FP32), NO_PROBE)
    return [ConditionResult(c, refused[id(c)], accepted.get(id(c)) or fp32.get(c.target, missing)) for c in CONDITIONS]


def table(results: list[ProbeResult], extra: dict[str, list[ProbeResult]] | None = None,
          conditions: list[ConditionResult] | None = None) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the support table: one row per operator, one column per precision."""
    columns: dict[str, dict[str, ProbeResult]] = {precision: {} for precision in PRECISIONS}
    configs: dict[str, str] = {}
    for result in results:
        columns.setdefault(result.claim.precision, {})[result.claim.target] = result
        configs[result.claim.target] = result.claim.config
    columns.update({name: {r.claim.target: r for r in found} for name, found in (extra or {}).items()})
    checked: dict[str, list[str]] = {}
    for result in conditions or []:
        checked.setdefault(result.condition.target, []).append(result.cell())
    header = ["Operator (Edge)", "Partitioner config", *columns, "Conditions, each probed"]
    return header, [[target, configs[target], *(column[target].cell() if target in column else NOT_CLAIMED
                                               for column in columns.values()),
                     "; ".join(checked.get(target, [])) or "-"]
                    for target in sorted(configs, key=lambda name: name.lstrip("_"))]
