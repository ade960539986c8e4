"""
Troubleshoot: weight-only linear layers that give wrong results
===============================================================

torchao's ``IntxWeightOnlyConfig`` stores a linear layer's weights as
integers with one scale per row and leaves the activations in floating
point. With the releases this site is built with, a model quantized that way
lowers to XNNPACK without an error or a warning, runs, and returns wrong
numbers: the delegate multiplies by the integer codes and never applies the
scales. This recipe shows the failure on two linear layers and what the
program computes instead. It then builds a weight-only program that is
correct in this release, shows that the runtime must load it from memory
rather than from its file, and measures what it costs next to fp32 and to
the quantized schemes XNNPACK supports.
"""

# %%
# Two linear layers
# -----------------
# A feed-forward block as in a transformer: a linear layer four times wider
# than its input, GELU, and a linear layer back. The weights are random (the
# seed fixes them); the input is a batch of
# :fact:`troubleshoot_weight_only_linear_layers/rows` rows, as if that many tokens
# went through the block at once. ``lower`` exports a model, lowers it to
# XNNPACK and writes the ``.pte``; the fp32 program is the baseline, run on
# the ExecuTorch runtime and checked against eager PyTorch.

import copy
import os

import torch
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256)
).eval()
example_inputs = (torch.randn(32, 256),)
runtime = Runtime.get()


def lower(module, path, partitioner=None):
    """Export *module*, lower it to XNNPACK, write *path*; return the ExecuTorch
    program."""
    edge_program = to_edge_transform_and_lower(
        torch.export.export(module, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[partitioner or XnnpackPartitioner()],
    )
    executorch_program = edge_program.to_executorch()
    with open(path, "wb") as file:
        file.write(executorch_program.buffer)
    return executorch_program


def run(program):
    """The output of a loaded program's forward method on the example inputs."""
    return program.load_method("forward").execute(list(example_inputs))[0]


def max_error(output, reference):
    return (output - reference).abs().max().item()


fp32_executorch_program = lower(model, "weight_only_fp32.pte")
# Keep each loaded Program in a variable for as long as its method is used.
fp32_program = runtime.load_program(fp32_executorch_program.buffer)
fp32_pte_output = run(fp32_program)
with torch.no_grad():
    fp32_output = model(*example_inputs)
torch.testing.assert_close(fp32_pte_output, fp32_output, atol=1e-5, rtol=1e-5)
print(
    f"fp32: max |pte - eager| = {max_error(fp32_pte_output, fp32_output):.1e}, "
    f"largest |output| = {fp32_output.abs().max().item():.2f}"
)

# sphinx_gallery_start_ignore
from xnnguide.core import facts

output_scale = fp32_output.abs().max().item()
# A tolerance of 1e-5 means something only if the outputs are not tiny.
assert output_scale > 0.1, output_scale
facts.record("rows", example_inputs[0].shape[0])
facts.record("output_scale", output_scale, f"{output_scale:.2f}")
# xnnguide_budget_seconds = 90
# sphinx_gallery_end_ignore

# %%
# torchao weight-only int8, lowered the usual way
# -----------------------------------------------
# ``quantize_`` with ``IntxWeightOnlyConfig`` replaces each linear weight by
# int8 codes and one scale per output row (``PerAxis(0)``). In eager PyTorch
# the layer multiplies by codes × scale, so the quantized model stays close
# to the fp32 one. The same model, lowered with the default
# ``XnnpackPartitioner``, is checked against that eager model, and against a
# copy of the fp32 model whose weights are the raw integer codes, without
# their scales.

# [gallery-only wonly_torchao]
# [start wonly_torchao]
from torchao.quantization import IntxWeightOnlyConfig, PerAxis, quantize_

torchao_model = copy.deepcopy(model)
quantize_(
    torchao_model, IntxWeightOnlyConfig(weight_dtype=torch.int8, granularity=PerAxis(0))
)
torchao_executorch_program = lower(torchao_model, "weight_only_torchao_int8.pte")
torchao_program = runtime.load_program(torchao_executorch_program.buffer)
torchao_pte_output = run(torchao_program)

codes_model = copy.deepcopy(
    model
)  # the fp32 model with the integer codes as its weights
for layer, quantized_layer in zip(codes_model, torchao_model):
    if isinstance(layer, torch.nn.Linear):
        layer.weight.data = quantized_layer.weight.qdata.float()
with torch.no_grad():
    torchao_eager_output = torchao_model(*example_inputs)
    codes_output = codes_model(*example_inputs)
print(
    "max |eager int8 weight-only - eager fp32| = "
    f"{max_error(torchao_eager_output, fp32_output):.3g}"
)
print(
    "max |pte - eager int8 weight-only|         = "
    f"{max_error(torchao_pte_output, torchao_eager_output):.4g}"
)
print(
    "max |pte - eager with the codes as weights| = "
    f"{max_error(torchao_pte_output, codes_output):.4g}"
    f" (largest |output| {codes_output.abs().max().item():.4g})"
)
# [end wonly_torchao]

# sphinx_gallery_start_ignore
torchao_eager_error = max_error(torchao_eager_output, fp32_output)
torchao_error = max_error(torchao_pte_output, torchao_eager_output)
codes_error = max_error(torchao_pte_output, codes_output)
codes_scale = codes_output.abs().max().item()
# The eager int8 weight-only model is fine: close to fp32.
assert torchao_eager_error < 0.05 * output_scale, torchao_eager_error
# The program is not: its error is more than 100 times the size of the outputs it should give.
# When this fails, upstream has fixed the lowering: rewrite this recipe and the paragraph of
# docs/guides/llm.md that links to it.
assert torchao_error > 100 * torchao_eager_output.abs().max().item(), torchao_error
# The cause: the program is the model with the integer codes as weights, to fp32 rounding.
torch.testing.assert_close(
    torchao_pte_output, codes_output, rtol=1e-4, atol=1e-5 * codes_scale
)
facts.record("torchao_eager_error", torchao_eager_error, f"{torchao_eager_error:.3g}")
facts.record("torchao_error", torchao_error, f"{torchao_error:.3g}")
facts.record("codes_error", codes_error, f"{codes_error:.2g}")
facts.record("codes_scale", codes_scale, f"{codes_scale:.3g}")
# sphinx_gallery_end_ignore

# %%
# The eager weight-only model is within
# :fact:`troubleshoot_weight_only_linear_layers/torchao_eager_error` of
# fp32. The program is off by up to
# :fact:`troubleshoot_weight_only_linear_layers/torchao_error`, yet it
# matches the model with the raw codes as weights to within
# :fact:`troubleshoot_weight_only_linear_layers/codes_error`, on outputs as
# large as :fact:`troubleshoot_weight_only_linear_layers/codes_scale`: fp32
# rounding. The scales never reach the result.
#
# Why: in the exported graph each layer is a ``torchao::dequantize_affine``
# of the int8 codes followed by the matrix multiplication, and both belong
# to the ``nn.Linear``. The partitioner's checks and XNNPACK's
# ``ConvertToLinearPass`` look for the layer's weight by following the
# multiplication's weight argument back through the nodes in front of it,
# taking every node on the way for a change of layout. They walk past the
# dequantize to the int8 tensor itself, so the delegate becomes an fp32
# fully-connected operator whose weights are the codes converted to float.
# The weights are therefore also stored in fp32, and the file is not much
# smaller than the fp32 one (see the table below). The outputs come out
# roughly ``1 / scale`` times too large per layer, which a check against
# eager PyTorch with any tolerance catches: check every quantized program
# that way.

# %%
# A weight-only program that is correct
# -------------------------------------
# What works in this release takes three pieces, all from the public
# packages:
#
# 1. PT2E quantization with a quantizer of a few lines that marks only the
#    weight of each linear layer, with the weight settings of
#    ``XNNPACKQuantizer``'s per-channel configuration: int8, symmetric, one
#    scale per output row. (``XNNPACKQuantizer`` itself always quantizes the
#    activations too.) ``convert_pt2e`` then puts a
#    ``quantized_decomposed::dequantize_per_channel`` in front of each layer,
#    an operator ExecuTorch has a CPU kernel for, which torchao's
#    ``dequantize_affine`` has not.
# 2. ``XnnpackPartitioner(config_precisions=ConfigPrecisionType.FP32)``:
#    with only its fp32 configurations, the partitioner leaves the dequantize
#    outside and hands XNNPACK each layer as an fp32 linear layer whose weight
#    is an input. The default partitioner tries its int8 configurations on
#    these layers, rejects them because their activations are not
#    quantized, and leaves the multiplications outside XNNPACK.
# 3. ``import executorch.kernels.quantized`` registers the dequantize
#    kernel with the runtime of this process; a C++ application links the
#    ``quantized_ops_lib`` kernel library instead.
#
# The weights need no calibration data: one call of the prepared model lets
# the observers see them.

# [gallery-only wonly_pt2e]
# [start wonly_pt2e]
# registers the dequantize_per_channel kernel
import executorch.kernels.quantized  # noqa: F401
from executorch.backends.xnnpack.partition.config.xnnpack_config import (
    ConfigPrecisionType,
)
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    get_symmetric_quantization_config,
)
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
from torchao.quantization.pt2e.quantizer import QuantizationAnnotation, Quantizer


class LinearWeightOnlyQuantizer(Quantizer):
    """Int8 weights, one scale per output row, for every linear layer; activations stay
    fp32."""

    weight_spec = get_symmetric_quantization_config(is_per_channel=True).weight

    def annotate(self, graph_module):
        for node in graph_module.graph.nodes:
            if (
                node.op == "call_function"
                and node.target == torch.ops.aten.linear.default
            ):
                weight = node.args[1]
                node.meta["quantization_annotation"] = QuantizationAnnotation(
                    input_qspec_map={weight: self.weight_spec}, _annotated=True
                )
        return graph_module

    def validate(self, graph_module):
        pass


prepared = prepare_pt2e(
    torch.export.export(model, example_inputs).module(), LinearWeightOnlyQuantizer()
)
prepared(*example_inputs)  # the observers record the weights' ranges
pt2e_model = convert_pt2e(prepared)

fp32_only = XnnpackPartitioner(config_precisions=ConfigPrecisionType.FP32)
pt2e_executorch_program = lower(pt2e_model, "weight_only_pt2e_int8.pte", fp32_only)
pt2e_program = runtime.load_program(pt2e_executorch_program.buffer)
pt2e_pte_output = run(pt2e_program)
with torch.no_grad():
    pt2e_eager_output = pt2e_model(*example_inputs)
torch.testing.assert_close(pt2e_pte_output, pt2e_eager_output, atol=1e-5, rtol=1e-5)
print(
    "max |pte - eager int8 weight-only| = "
    f"{max_error(pt2e_pte_output, pt2e_eager_output):.1e}"
)
print(
    "max |pte - eager fp32|              = "
    f"{max_error(pt2e_pte_output, fp32_output):.2g}"
)
print(
    "operators outside XNNPACK:",
    [
        f"{operator.name}.{operator.overload}"
        for operator in pt2e_executorch_program.executorch_program.execution_plan[
            0
        ].operators
    ],
)
# [end wonly_pt2e]

# sphinx_gallery_start_ignore
from xnnguide.core.delegation import ops_outside_delegates

pt2e_error = max_error(pt2e_pte_output, pt2e_eager_output)
pt2e_vs_fp32 = max_error(pt2e_pte_output, fp32_output)
# int8 weights move the outputs, but by little against their size.
assert pt2e_vs_fp32 < 0.05 * output_scale, pt2e_vs_fp32
outside = [
    f"{op.name}.{op.overload}"
    for op in pt2e_executorch_program.executorch_program.execution_plan[0].operators
]
assert outside == ["quantized_decomposed::dequantize_per_channel.out"], outside
# What the prose says of the default partitioner: the multiplications stay outside XNNPACK.
default_outside = ops_outside_delegates(
    to_edge_transform_and_lower(
        torch.export.export(pt2e_model, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )
    .exported_program()
    .graph_module
)
assert (
    default_outside.get("mm.default", 0) + default_outside.get("addmm.default", 0) == 2
), default_outside
facts.record("pt2e_error", pt2e_error, f"{pt2e_error:.1e}")
facts.record("pt2e_vs_fp32", pt2e_vs_fp32, f"{pt2e_vs_fp32:.2g}")
# sphinx_gallery_end_ignore

# %%
# The program agrees with its eager model to within
# :fact:`troubleshoot_weight_only_linear_layers/pt2e_error`, and with fp32 to
# within :fact:`troubleshoot_weight_only_linear_layers/pt2e_vs_fp32`, the
# cost of int8 weights. Each call, ExecuTorch's CPU kernel expands every
# weight back to fp32 outside XNNPACK, and XNNPACK multiplies in fp32 with a
# weight it receives as an input.

# %%
# Load it from memory, not from its file
# --------------------------------------
# Each program here is loaded from the bytes ``to_executorch`` returned.
# Loaded from its file path instead, the weight-only program crashes the
# runtime of this release as soon as its method runs. A fresh Python process
# shows it, so that the crash takes down only that process:

# [gallery-only wonly_file]
# [start wonly_file]
import signal
import subprocess
import sys

load_from_file = """
import torch
import executorch.kernels.quantized
from executorch.runtime import Runtime

program = Runtime.get().load_program("weight_only_pt2e_int8.pte")
print(program.load_method("forward").execute([torch.randn(32, 256)])[0].shape)
"""
loaded = subprocess.run(
    [sys.executable, "-c", load_from_file], capture_output=True, text=True
)
ended_by = (
    signal.Signals(-loaded.returncode).name
    if loaded.returncode < 0
    else f"exit status {loaded.returncode}"
)
print(f"loaded from its file: {ended_by}")

with open("weight_only_pt2e_int8.pte", "rb") as file:
    from_bytes = runtime.load_program(file.read())
torch.testing.assert_close(run(from_bytes), pt2e_eager_output, atol=1e-5, rtol=1e-5)
print("loaded from the same file's bytes: agrees with eager")
# [end wonly_file]

# sphinx_gallery_start_ignore
# When this fails, the runtime loads the program from its path: drop this section.
assert loaded.returncode == -signal.SIGSEGV, (
    loaded.returncode,
    loaded.stdout,
    loaded.stderr[-2000:],
)
facts.record("file_ended_by", ended_by)
# sphinx_gallery_end_ignore

# %%
# A C++ application loads its program through a data loader of its own
# choosing; whether this crash reaches one was not measured here. In Python,
# read the file and pass its bytes to ``load_program``, as above.

# %%
# Size, memory and speed, next to the supported schemes
# -----------------------------------------------------
# XNNPACK's own quantized linear layers quantize the activations too, per
# row at run time: ``8da8w`` (int8 weights, one scale per row) and ``8da4w``
# (int4 weights, one scale per group of 32), both torchao's
# ``Int8DynamicActivationIntxWeightConfig`` lowered with the default
# partitioner. For each program: the file size, the memory ExecuTorch plans
# for intermediate tensors, the median time of repeated calls (the whole
# batch per call, on the runtime's default thread pool) on the machine that
# built this page, and the largest difference from eager fp32.

# sphinx_gallery_start_ignore
from xnnguide.core import machine_hold

held = (
    machine_hold.pause_other_recipes()
)  # the speed table below: the other recipes of the build stop while this one times
# sphinx_gallery_end_ignore
# [gallery-only wonly_compare]
# [start wonly_compare]
import statistics
import time

from torchao.quantization import Int8DynamicActivationIntxWeightConfig, PerGroup


def quantize_dynamic(weight_dtype, granularity):
    quantized = copy.deepcopy(model)
    quantize_(
        quantized,
        Int8DynamicActivationIntxWeightConfig(
            weight_dtype=weight_dtype, weight_granularity=granularity
        ),
    )
    return quantized


def median_ms(program, runs=100):
    method, inputs = program.load_method("forward"), list(example_inputs)
    method.execute(inputs)  # warm-up
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        method.execute(inputs)
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


executorch_programs = {
    "fp32": ("weight_only_fp32.pte", fp32_executorch_program),
    "torchao weight-only int8 (wrong)": (
        "weight_only_torchao_int8.pte",
        torchao_executorch_program,
    ),
    "PT2E weight-only int8, FP32 partitioner": (
        "weight_only_pt2e_int8.pte",
        pt2e_executorch_program,
    ),
    "8da8w": (
        "weight_only_8da8w.pte",
        lower(quantize_dynamic(torch.int8, PerAxis(0)), "weight_only_8da8w.pte"),
    ),
    "8da4w": (
        "weight_only_8da4w.pte",
        lower(quantize_dynamic(torch.int4, PerGroup(32)), "weight_only_8da4w.pte"),
    ),
}
results = {}
for name, (path, executorch_program) in executorch_programs.items():
    program = runtime.load_program(executorch_program.buffer)
    planned_bytes = sum(
        executorch_program.executorch_program.execution_plan[0].non_const_buffer_sizes
    )
    results[name] = {
        "size_kib": os.path.getsize(path) / 1024,
        "planned_kib": planned_bytes / 1024,
        "ms": median_ms(program),
        "error": max_error(run(program), fp32_output),
    }
    print(
        f"{name:40} {results[name]['size_kib']:6.0f} KiB file "
        f"{results[name]['planned_kib']:6.0f} KiB planned "
        f"{results[name]['ms']:7.3f} ms  max |pte - fp32| {results[name]['error']:.3g}"
    )
# [end wonly_compare]

# sphinx_gallery_start_ignore
held.release()
hold = facts.record("timing_hold", held.record())
from executorch.extension.pybindings.portable_lib import _threadpool_get_thread_count

from xnnguide.core import timings

fp32_kib = results["fp32"]["size_kib"]
weight_only_kib = results["PT2E weight-only int8, FP32 partitioner"]["size_kib"]
torchao_kib = results["torchao weight-only int8 (wrong)"]["size_kib"]
# The wrong program stores its weights in fp32: its file is close to the fp32 one.
assert torchao_kib > 0.9 * fp32_kib, (torchao_kib, fp32_kib)
# The PT2E one stores them in int8: about a quarter.
assert weight_only_kib < 0.3 * fp32_kib, (weight_only_kib, fp32_kib)
# Its planned memory holds the fp32 copies of the weights the kernel writes at every call.
weight_kib = (
    sum(
        layer.weight.numel() * 4
        for layer in model
        if isinstance(layer, torch.nn.Linear)
    )
    / 1024
)
planned_growth = (
    results["PT2E weight-only int8, FP32 partitioner"]["planned_kib"]
    - results["fp32"]["planned_kib"]
)
assert planned_growth >= weight_kib, (planned_growth, weight_kib)
# The supported schemes are close to fp32 too, and plan no room for fp32 weights.
for name in ("8da8w", "8da4w"):
    assert results[name]["error"] < 0.2 * output_scale, (name, results[name]["error"])
    assert results[name]["planned_kib"] <= results["fp32"]["planned_kib"], (
        name,
        results[name]["planned_kib"],
    )
# Weight-only is the more accurate of the two int8 programs, and 8da8w's file is as small.
assert results["8da8w"]["size_kib"] < 1.1 * weight_only_kib, (
    results["8da8w"]["size_kib"],
    weight_only_kib,
)
assert pt2e_vs_fp32 < results["8da8w"]["error"], (
    pt2e_vs_fp32,
    results["8da8w"]["error"],
)
facts.record(
    "da8w_error", results["8da8w"]["error"], f"{results['8da8w']['error']:.2g}"
)
facts.record("fp32_kib", fp32_kib, f"{fp32_kib:.0f} KiB")
facts.record("torchao_kib", torchao_kib, f"{torchao_kib:.0f} KiB")
facts.record("weight_only_kib", weight_only_kib, f"{weight_only_kib:.0f} KiB")
facts.record("weight_kib", weight_kib, f"{weight_kib:.0f} KiB")
facts.record("planned_growth", planned_growth, f"{planned_growth:.0f} KiB")
for key, name in (
    ("fp32", "fp32"),
    ("weight_only", "PT2E weight-only int8, FP32 partitioner"),
    ("da8w", "8da8w"),
    ("da4w", "8da4w"),
):
    timings.record_latency(
        f"{key}_ms",
        results[name]["ms"],
        subject=f"the weight-only recipe's linear layers, {name} .pte",
        threads=_threadpool_get_thread_count(),
        batch=example_inputs[0].shape[0],
        load=hold["load"],
        digits=3,
    )
comparison_threads = _threadpool_get_thread_count()
comparison_batch = example_inputs[0].shape[0]
timings.record_timing_table(
    "comparison",
    [
        "Program",
        ".pte size",
        "Planned memory",
        f"Median time per call ({timings.conditions(comparison_threads, comparison_batch)})",
        "Max |.pte - eager fp32|",
    ],
    [
        [
            name,
            f"{r['size_kib']:.0f} KiB",
            f"{r['planned_kib']:.0f} KiB",
            timings.latency_cell(r["ms"], hold["load"], 3),
            f"{r['error']:.3g}",
        ]
        for name, r in results.items()
    ],
    timed=[{"kind": "latency", "subject": f"the weight-only recipe's linear layers, {name} .pte",
            "threads": comparison_threads, "batch": comparison_batch} for name in results],
    load=hold["load"],
)
# sphinx_gallery_end_ignore

# %%
# .. fact-table:: troubleshoot_weight_only_linear_layers/comparison
#    :caption: Two linear layers, five programs
#
# The torchao weight-only file is
# :fact:`troubleshoot_weight_only_linear_layers/torchao_kib` against
# :fact:`troubleshoot_weight_only_linear_layers/fp32_kib` for fp32: it
# stores the codes as fp32 numbers. The PT2E weight-only file is
# :fact:`troubleshoot_weight_only_linear_layers/weight_only_kib`; that is
# all it saves. Its planned memory is
# :fact:`troubleshoot_weight_only_linear_layers/planned_growth` larger than
# the fp32 program's, room for the
# :fact:`troubleshoot_weight_only_linear_layers/weight_kib` of fp32 weights
# the dequantize kernel writes at every call, and that work runs outside
# XNNPACK: here a call took
# :fact:`troubleshoot_weight_only_linear_layers/weight_only_ms` against
# :fact:`troubleshoot_weight_only_linear_layers/fp32_ms` in fp32.
# ``8da8w`` (:fact:`troubleshoot_weight_only_linear_layers/da8w_ms`) and
# ``8da4w`` (:fact:`troubleshoot_weight_only_linear_layers/da4w_ms`) keep
# their weights quantized inside XNNPACK.
#
# What weight-only buys is accuracy: with fp32 activations the program is
# :fact:`troubleshoot_weight_only_linear_layers/pt2e_vs_fp32` from fp32 at
# worst, against :fact:`troubleshoot_weight_only_linear_layers/da8w_error`
# for ``8da8w``, whose file is as small. For low-bit linear layers on
# XNNPACK, the supported scheme is ``8da4w``, as :doc:`/guides/llm` uses for
# a language model. Weight-only quantization stays the right choice for an
# embedding table: torchao's ``IntxWeightOnlyConfig`` on an embedding lowers
# to ExecuTorch's quantized embedding kernels and is correct, as
# :doc:`/gallery/quantization/quantize_llm_8da4w` shows.
