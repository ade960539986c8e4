"""
Performance: how much faster XNNPACK runs than eager PyTorch
============================================================

This recipe times MobileNet V2 and ResNet-18 from torchvision in eager
PyTorch and as ``.pte`` programs delegated to XNNPACK in fp32 and in int8, with
one thread and then two, and MobileNet V2 as a ``.pte`` on ExecuTorch's own CPU
kernels (no delegate), on the machine that builds this site. The speed-up over
eager PyTorch is the figure to compare across machines: the milliseconds depend
on the CPU and on whatever else it was doing.
"""

# %%
# The models
# ----------
# Both models have random weights (``weights=None``: nothing is downloaded);
# latency depends on operators and shapes, not on weights. Initial batch-norm
# statistics would shrink the outputs to almost nothing, so
# ``calibrate_batchnorm`` measures real ones on random images in training mode,
# which gives the outputs, and the checks below, a useful scale.

import torch
import torchvision


def calibrate_batchnorm(model, batches=4, batch_size=8):
    norms = [module for module in model.modules()
             if isinstance(module, torch.nn.BatchNorm2d)]
    momenta = [norm.momentum for norm in norms]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a cumulative average over the batches below
    generator = torch.Generator().manual_seed(0)
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(batch_size, 3, 224, 224, generator=generator))
    for norm, momentum in zip(norms, momenta):
        norm.momentum = momentum
    return model.eval()  # export needs batch norm and dropout in inference mode


torch.manual_seed(0)
models = {
    "MobileNet V2": calibrate_batchnorm(torchvision.models.mobilenet_v2(weights=None)),
    "ResNet-18": calibrate_batchnorm(torchvision.models.resnet18(weights=None)),
}
example_inputs = (torch.randn(1, 3, 224, 224),)

# %%
# The programs
# ------------
# Each model is exported once and lowered to these programs; the fp32 MobileNet
# V2 one is the file :doc:`build_and_run_pte_from_cpp` (run it first, in this
# folder) lowers alike from the same model, seed and ``calibrate_batchnorm``:
#
# * **portable** (MobileNet V2 only: one model shows how far behind it is, and
#   a call takes seconds): no partitioner, so every operator runs on ExecuTorch's
#   own kernels, plain C++ written for portability rather than speed, bar a few
#   optimized ones (:doc:`/guides/run_pte_from_cpp`);
# * **XNNPACK fp32**: ``XnnpackPartitioner`` and the XNNPACK transform passes,
#   as in :doc:`the overview </overview>`;
# * **XNNPACK int8**: quantized with PT2E first (static int8 activations,
#   per-channel int8 weights; :doc:`/gallery/quantization/quantize_mobilenet_v2_int8_static`
#   explains the steps), exported again and lowered like fp32.

from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e


def quantize_int8(exported_program, calibration_inputs):
    config = get_symmetric_quantization_config(is_per_channel=True)
    quantizer = XNNPACKQuantizer().set_global(config)
    # Its conv + batch-norm patterns serve quantization-aware training only and
    # cannot match once prepare_pt2e folds batch norm: skip tracing them.
    patterns = quantizer.SUPPORTED_PATTERNS
    quantizer.SUPPORTED_PATTERNS = [p for p in patterns if not p.is_qat]
    prepared = prepare_pt2e(exported_program.module(), quantizer)
    with torch.no_grad():
        for inputs in calibration_inputs:
            prepared(*inputs)
    return convert_pt2e(prepared)  # runs in eager PyTorch too: the int8 reference


def write_pte(exported_program, path, xnnpack=True):
    lowered = to_edge_transform_and_lower(  # no partitioner: ExecuTorch's own kernels
        exported_program,
        transform_passes=get_transform_passes() if xnnpack else None,
        partitioner=[XnnpackPartitioner()] if xnnpack else None,
    )
    with open(path, "wb") as file:
        file.write(lowered.to_executorch().buffer)
    return path


# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import shared_files
shared_files.ensure("mobilenet_v2_cpp", "build_and_run_pte_from_cpp.py")
# xnnguide_depends_on = build_and_run_pte_from_cpp.py
# sphinx_gallery_end_ignore
calibration_inputs = [(torch.randn(1, 3, 224, 224),) for _ in range(4)]
PORTABLE = {"MobileNet V2"}  # the models that also get a portable program
LOWERED_FP32 = {"MobileNet V2": "mobilenet_v2_cpp/fp32.pte"}  # not lowered again
programs = {}  # (model name, program name) -> .pte path
quantized_models = {}  # model name -> the int8 model in eager PyTorch, as a reference
for name, model in models.items():
    stem = "benchmark_" + name.lower().replace(" ", "_").replace("-", "")
    exported = torch.export.export(model, example_inputs)
    if name in PORTABLE:
        programs[name, "portable"] = write_pte(exported, f"{stem}_portable.pte", False)
    programs[name, "XNNPACK fp32"] = LOWERED_FP32.get(name) or write_pte(
        exported, f"{stem}_xnnpack_fp32.pte")
    quantized_models[name] = quantize_int8(exported, calibration_inputs)
    quantized = torch.export.export(quantized_models[name], example_inputs)
    programs[name, "XNNPACK int8"] = write_pte(quantized, f"{stem}_xnnpack_int8.pte")

# %%
# Check the programs before timing them
# -------------------------------------
# A fast wrong answer is worth nothing. The fp32 programs must agree with eager
# PyTorch within a small tolerance (XNNPACK may reorder floating-point sums). The
# int8 program is compared with the int8 model in eager PyTorch, which computes
# in fp32 between its quantize and dequantize steps where XNNPACK computes in
# integers: within 0.15 on outputs of order 1, with a cosine similarity of at
# least 0.97. This table gives the distances, and what quantization costs:
#
# .. fact-table:: benchmark_xnnpack_speedup/int8_agreement
#    :caption: How far the int8 programs are from their references

from executorch.runtime import Runtime


def load_forward(path):
    return Runtime.get().load_program(path).load_method("forward")


outputs = {}  # (model name, program name) -> the program's output
with torch.no_grad():
    for (name, program), path in programs.items():
        output = load_forward(path).execute(list(example_inputs))[0]
        if program == "XNNPACK int8":
            reference = quantized_models[name](*example_inputs)
            torch.testing.assert_close(output, reference, atol=0.15, rtol=0.0)
            similarity = torch.nn.functional.cosine_similarity(output, reference)
            assert similarity.item() > 0.97, f"{name}: int8 .pte strays from int8 model"
        else:
            reference = models[name](*example_inputs)
            torch.testing.assert_close(output, reference, atol=1e-3, rtol=1e-3)
        outputs[name, program] = output
        print(f"{name:>12} {program:<13} agrees with its eager model")

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import speedup_benchmark
speedup_benchmark.record_int8_agreement(models, quantized_models, outputs, example_inputs)
# sphinx_gallery_end_ignore

# %%
# Threads
# -------
# Eager PyTorch and XNNPACK each split an operator's work over a thread pool
# sized to the cores. The run shown here had a share of the cores (PyTorch
# through ``OMP_NUM_THREADS``, ExecuTorch's pool set to match): the line below
# shows both pools' sizes. ``torch.set_num_threads`` sizes PyTorch's; the
# experimental ``_unsafe_reset_threadpool`` replaces XNNPACK's, unsafe for a
# loaded program still on the old pool: each program below is loaded after the
# reset and dropped before the next. One thread is the fairest comparison and
# the least disturbed by other work; two follow where the machine has two cores.

import os
from executorch.extension.pybindings.portable_lib import (
    _threadpool_get_thread_count, _unsafe_reset_threadpool)


def use_threads(threads):
    torch.set_num_threads(threads)
    _unsafe_reset_threadpool(threads)


cores = os.cpu_count() or 1
thread_counts = [1, 2] if cores >= 2 else [1]
default_threads = (torch.get_num_threads(), _threadpool_get_thread_count())
omp = os.environ.get("OMP_NUM_THREADS", "not set")
print(f"{cores} logical cores; default threads: PyTorch {default_threads[0]}, "
      f"ExecuTorch pool {default_threads[1]} (OMP_NUM_THREADS: {omp})")

# %%
# Time every program
# ------------------
# ``time_calls`` makes untimed warm-up calls, which pay one-off costs (memory,
# thread start-up), then times single-image calls with ``time.perf_counter``.
# The median of a configuration's calls resists the odd call slowed by other
# work; the table below gives their spread too, half the interquartile range.
# The portable program, seconds per image, gets one warm-up and three timed
# calls with one thread: each is long enough that timer noise does not matter.

import statistics
import time


def time_calls(call, runs, warmup):
    """``warmup`` untimed calls, then the times of ``runs`` calls in ms."""
    for _ in range(warmup):
        call()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


RUNS = {"eager": 15, "portable": 3, "XNNPACK fp32": 20, "XNNPACK int8": 20}
WARMUP = {"eager": 2, "portable": 1, "XNNPACK fp32": 3, "XNNPACK int8": 3}
configurations = [  # (model name, program name, threads), in the order timed
    (name, program, threads)
    for threads in thread_counts
    for name in models
    for program in RUNS
    if (program == "eager" or (name, program) in programs)
    and (program != "portable" or threads == 1)
]

# sphinx_gallery_start_ignore
from xnnguide.core import machine_hold
held = machine_hold.pause_other_recipes()  # the other recipes of the build stop while this one times
load_before = os.getloadavg()[0]
# sphinx_gallery_end_ignore

timings = {}  # (model name, program name, threads) -> call times in ms
with torch.no_grad():
    for key in configurations:
        name, program, threads = key
        use_threads(threads)
        if program == "eager":
            call = lambda: models[name](*example_inputs)
        else:
            forward = load_forward(programs[name, program])  # on the new pool
            call = lambda: forward.execute(list(example_inputs))
        timings[key] = time_calls(call, RUNS[program], WARMUP[program])
        call = forward = None  # drop the program before the next reset
torch.set_num_threads(default_threads[0])
_unsafe_reset_threadpool(default_threads[1])
# sphinx_gallery_start_ignore
load_after = os.getloadavg()[0]
held.release()
# sphinx_gallery_end_ignore

medians = {key: statistics.median(samples) for key, samples in timings.items()}
speedups = {  # over eager PyTorch at the same thread count
    (name, program, threads): medians[name, "eager", threads] / median
    for (name, program, threads), median in medians.items()
}
for (name, program, threads), median in medians.items():
    print(f"{name:>12} {program:<13} threads {threads}: {median:8.2f} ms, "
          f"{speedups[name, program, threads]:6.2f}x eager")

# sphinx_gallery_start_ignore
from xnnguide.core import facts
speedup_benchmark.check_timings(timings, RUNS, models, PORTABLE, thread_counts)
assert _threadpool_get_thread_count() == default_threads[1], "the pool was not restored"
cpu = speedup_benchmark.cpu_name()  # the processor model, for the chart's title
facts.record("cpu", cpu)
facts.record("cores", cores)
load = speedup_benchmark.record_hold(held, load_before, load_after)
speedup_benchmark.record(timings, medians, speedups, programs, list(RUNS), thread_counts, load)
speedup_benchmark.draw_chart(medians, speedups, thread_counts, cpu, cores)
# sphinx_gallery_end_ignore

# %%
# The measurements
# ----------------
# The chart (its matplotlib code is left out of this page) shows the speed-ups
# with one thread on a logarithmic axis, and latency against threads; its title
# names the processor, which latency depends on as much as on the program. Read
# speed-ups rather than milliseconds: on a busy machine the medians move and the
# spread grows, while the ratios move less, and least with one thread.
#
# While the programs were timed (:fact:`benchmark_xnnpack_speedup/held_seconds`
# seconds), other work took :fact:`benchmark_xnnpack_speedup/other_share` of the
# machine and the host of this virtual machine
# :fact:`benchmark_xnnpack_speedup/steal_share` (from the kernel's CPU counters;
# a figure taken while more than :fact:`benchmark_xnnpack_speedup/busy_share`
# went elsewhere is marked as timed on a busy machine). The 1-minute load
# average, :fact:`benchmark_xnnpack_speedup/load_before` before timing and
# :fact:`benchmark_xnnpack_speedup/load_after` after, lags a minute behind and
# says less. Two threads suffer most: a pool waits for its slowest thread at the
# end of every operator, so a two-thread row far slower than its one-thread row,
# with a wide spread, is the sign of a busy machine, not of the program.
#
# .. fact-table:: benchmark_xnnpack_speedup/latency
#    :caption: One 224x224 image
#
# :doc:`/gallery/quantization/profile_crepe_int8_latency_with_etdump` times a published
# model with pretrained weights, in fp32 and int8.
