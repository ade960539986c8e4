"""
What weight-only linear layers cost next to the supported schemes
=================================================================

Two linear layers, five programs: fp32, torchao's weight-only int8 (wrong
in this release, see :doc:`troubleshoot_weight_only_linear_layers`), the
PT2E weight-only int8 program of :doc:`fix_weight_only_linear_layers_with_pt2e`,
and XNNPACK's own quantized linear layers, ``8da8w`` and ``8da4w``. For each:
the file size, the memory ExecuTorch plans, the time per call and the
largest difference from eager fp32. Each program takes a second or two to
make, so this recipe makes all five itself rather than reading the other
recipes' files.
"""

# %%
# The model and the five programs
# -------------------------------
# The same two linear layers and seed as the troubleshooting recipe. The
# weight-only quantizer is the one of the fix, copied whole.

import copy
import os

import executorch.kernels.quantized  # noqa: F401  (the dequantize kernel)
import torch
from executorch.backends.xnnpack.partition.config.xnnpack_config import (
    ConfigPrecisionType,
)
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    get_symmetric_quantization_config,
)
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime
from torchao.quantization import IntxWeightOnlyConfig, PerAxis, quantize_
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
from torchao.quantization.pt2e.quantizer import QuantizationAnnotation, Quantizer

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256)
).eval()
example_inputs = (torch.randn(32, 256),)
runtime = Runtime.get()
with torch.no_grad():
    fp32_output = model(*example_inputs)


def lower(module, path, partitioner=None):
    """Export *module*, lower it to XNNPACK, write *path*; return the ExecuTorch
    program."""
    executorch_program = to_edge_transform_and_lower(
        torch.export.export(module, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[partitioner or XnnpackPartitioner()],
    ).to_executorch()
    with open(path, "wb") as file:
        file.write(executorch_program.buffer)
    return executorch_program


def run(program):
    """The output of a loaded program's forward method on the example inputs."""
    return program.load_method("forward").execute(list(example_inputs))[0]


def max_error(output, reference):
    return (output - reference).abs().max().item()


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


torchao_model = copy.deepcopy(model)
quantize_(
    torchao_model, IntxWeightOnlyConfig(weight_dtype=torch.int8, granularity=PerAxis(0))
)
prepared = prepare_pt2e(
    torch.export.export(model, example_inputs).module(), LinearWeightOnlyQuantizer()
)
prepared(*example_inputs)  # the observers record the weights' ranges
fp32_only = XnnpackPartitioner(config_precisions=ConfigPrecisionType.FP32)
fp32_executorch_program = lower(model, "weight_only_fp32.pte")
torchao_executorch_program = lower(torchao_model, "weight_only_torchao_int8.pte")
pt2e_executorch_program = lower(
    convert_pt2e(prepared), "weight_only_pt2e_int8.pte", fp32_only
)

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
    # From the bytes: this release crashes running the PT2E program loaded by path.
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
import subprocess
import sys

from xnnguide.core import facts, timings

held.release()
hold = facts.record("timing_hold", held.record())
pt2e_name = "PT2E weight-only int8, FP32 partitioner"

output_scale = fp32_output.abs().max().item()
fp32_kib, planned_fp32 = results["fp32"]["size_kib"], results["fp32"]["planned_kib"]
pt2e = results[pt2e_name]
assert results["torchao weight-only int8 (wrong)"]["size_kib"] > 0.9 * fp32_kib, results
# The PT2E program stores its weights in int8: about a quarter of the fp32 file.
assert pt2e["size_kib"] < 0.3 * fp32_kib, (pt2e, fp32_kib)
# Its planned memory holds the fp32 copies of the weights the kernel writes at every call.
weight_kib = sum(layer.weight.numel() * 4 for layer in model if isinstance(layer, torch.nn.Linear)) / 1024
planned_growth = pt2e["planned_kib"] - planned_fp32
assert planned_growth >= weight_kib, (planned_growth, weight_kib)
# The supported schemes are close to fp32 too, and plan no room for fp32 weights.
for name in ("8da8w", "8da4w"):
    assert results[name]["error"] < 0.2 * output_scale, (name, results[name])
    assert results[name]["planned_kib"] <= planned_fp32, (name, results[name])
# Weight-only is the more accurate of the two int8 programs, and 8da8w's file is as small.
assert results["8da8w"]["size_kib"] < 1.1 * pt2e["size_kib"], (results["8da8w"], pt2e)
assert pt2e["error"] < results["8da8w"]["error"], (pt2e, results["8da8w"])
facts.record("da8w_error", results["8da8w"]["error"], f"{results['8da8w']['error']:.2g}")
facts.record("weight_only_kib", pt2e["size_kib"], f"{pt2e['size_kib']:.0f} KiB")
facts.record("weight_kib", weight_kib, f"{weight_kib:.0f} KiB")
facts.record("planned_growth", planned_growth, f"{planned_growth:.0f} KiB")
# The thread pool of a fresh runtime, asked in a child: this process imports no private name for it.
pool = "from executorch.extension.pybindings import portable_lib as p; print(p._threadpool_get_thread_count())"
threads = int(subprocess.run([sys.executable, "-c", pool], capture_output=True, text=True, check=True).stdout)
batch = example_inputs[0].shape[0]
subject = "the weight-only recipe's linear layers, {} .pte"
for key, name in (("fp32", "fp32"), ("weight_only", pt2e_name), ("da8w", "8da8w"), ("da4w", "8da4w")):
    timings.record_latency(f"{key}_ms", results[name]["ms"], subject=subject.format(name), threads=threads,
                           batch=batch, load=hold["load"], digits=3)
timings.record_timing_table(
    "comparison",
    ["Program", ".pte size", "Planned memory",
     f"Median time per call ({timings.conditions(threads, batch)})", "Max |.pte - eager fp32|"],
    [[name, f"{r['size_kib']:.0f} KiB", f"{r['planned_kib']:.0f} KiB",
      timings.latency_cell(r["ms"], hold["load"], 3), f"{r['error']:.3g}"] for name, r in results.items()],
    timed=[{"kind": "latency", "subject": subject.format(name), "threads": threads, "batch": batch}
           for name in results],
    load=hold["load"],
)
# sphinx_gallery_end_ignore

# %%
# .. fact-table:: measure_weight_only_linear_layer_costs/comparison
#    :caption: Two linear layers, five programs
#
# The torchao weight-only file is
# :fact:`troubleshoot_weight_only_linear_layers/torchao_kib` against
# :fact:`troubleshoot_weight_only_linear_layers/fp32_kib` for fp32: it
# stores the codes as fp32 numbers. The PT2E weight-only file is
# :fact:`measure_weight_only_linear_layer_costs/weight_only_kib`; that is
# all it saves. Its planned memory is
# :fact:`measure_weight_only_linear_layer_costs/planned_growth` larger than
# the fp32 program's, room for the
# :fact:`measure_weight_only_linear_layer_costs/weight_kib` of fp32 weights
# the dequantize kernel writes at every call, and that work runs outside
# XNNPACK: here a call took
# :fact:`measure_weight_only_linear_layer_costs/weight_only_ms` against
# :fact:`measure_weight_only_linear_layer_costs/fp32_ms` in fp32.
# ``8da8w`` (:fact:`measure_weight_only_linear_layer_costs/da8w_ms`) and
# ``8da4w`` (:fact:`measure_weight_only_linear_layer_costs/da4w_ms`) keep
# their weights quantized inside XNNPACK.
#
# What weight-only buys is accuracy: with fp32 activations the program is
# :fact:`fix_weight_only_linear_layers_with_pt2e/pt2e_vs_fp32` from fp32 at
# worst, against :fact:`measure_weight_only_linear_layer_costs/da8w_error`
# for ``8da8w``, whose file is as small. For low-bit linear layers on
# XNNPACK, the supported scheme is ``8da4w``, as :doc:`/guides/llm` uses for
# a language model. Weight-only quantization stays the right choice for an
# embedding table: torchao's ``IntxWeightOnlyConfig`` on an embedding lowers
# to ExecuTorch's quantized embedding kernels and is correct, as
# :doc:`/gallery/quantization/quantize_llm_8da4w` shows.
