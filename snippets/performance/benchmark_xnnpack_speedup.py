"""
Performance: how much faster XNNPACK runs than eager PyTorch
============================================================

This recipe times two torchvision models, MobileNet V2 and ResNet-18, on the
machine that builds this site: in eager PyTorch, as a ``.pte`` delegated to
XNNPACK in fp32, and as a ``.pte`` delegated to XNNPACK in int8, with one
thread and then with two; and MobileNet V2 once more as a ``.pte`` on
ExecuTorch's CPU kernels alone (no delegate). Every figure on this page comes from the run that
built it. The speed-up over eager PyTorch is the figure to compare across
machines: the milliseconds depend on the CPU and on whatever else it was
doing.
"""

# %%
# The machine
# -----------
# Latency says as much about the CPU as about the program, so the recipe reads
# the processor model and the number of logical cores before measuring. On
# Linux the kernel lists the model in ``/proc/cpuinfo``; elsewhere
# ``platform`` gives what it can, often only the architecture.

import os
import platform


def cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:  # not Linux
        pass
    return platform.processor() or platform.machine()


cpu = cpu_name()
cores = os.cpu_count() or 1
print(f"CPU: {cpu}, {cores} logical cores ({platform.machine()})")

# sphinx_gallery_start_ignore
from xnnguide.core import facts

facts.record("cpu", cpu)
facts.record("cores", cores)
# sphinx_gallery_end_ignore

# %%
# The models
# ----------
# Both models start from random weights (``weights=None``: nothing is
# downloaded). Their batch-norm layers would then keep their initial
# statistics, which do not match the activations and shrink the outputs to
# almost nothing; ``calibrate_batchnorm`` measures real statistics instead,
# from a few batches of random images run in training mode, so that outputs
# have a useful scale and the comparisons below mean something. Latency does
# not depend on the weights' values, only on the operators and shapes.

import torch
import torchvision


def calibrate_batchnorm(model, batches=4, batch_size=8):
    norms = [
        module for module in model.modules() if isinstance(module, torch.nn.BatchNorm2d)
    ]
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
# Each model is exported once and lowered two or three times:
#
# * **portable**, MobileNet V2 only: ``to_edge_transform_and_lower`` without a partitioner, so
#   every operator runs on ExecuTorch's CPU kernels: portable ones, plain C++
#   written for correctness and portability rather than speed, except for the
#   few operators with an optimized kernel (see :doc:`/guides/run_pte_from_cpp`).
#   A call takes seconds, and ResNet-18's several times MobileNet V2's; one
#   model shows how far behind the undelegated kernels are, so ResNet-18 has
#   no portable program;
# * **XNNPACK fp32**: the same call with ``XnnpackPartitioner`` and the
#   XNNPACK transform passes, as in :doc:`the overview </overview>`;
# * **XNNPACK int8**: the model is first quantized with PT2E (static int8
#   activations calibrated on sample inputs, per-channel int8 weights), see
#   ``quantize_int8`` below, then exported and lowered to XNNPACK like the
#   fp32 model.
#
# PT2E quantization works on the exported graph: ``XNNPACKQuantizer`` marks
# the operators XNNPACK can run in int8, ``prepare_pt2e`` puts observers on
# their inputs and outputs, the calibration images record value ranges, and
# ``convert_pt2e`` turns the ranges into quantize/dequantize pairs, which the
# XNNPACK partitioner lowers with the operator between them as one integer
# operator.

from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e


def quantize_int8(model, example_inputs, calibration_inputs):
    quantizer = XNNPACKQuantizer().set_global(
        get_symmetric_quantization_config(is_per_channel=True)
    )
    # The quantizer's conv + batch-norm patterns serve quantization-aware
    # training only. prepare_pt2e folds batch norm into the convolutions
    # before annotating, so they cannot match here, yet tracing them costs
    # seconds per model: drop them.
    quantizer.SUPPORTED_PATTERNS = [
        p for p in quantizer.SUPPORTED_PATTERNS if not p.is_qat
    ]
    prepared = prepare_pt2e(
        torch.export.export(model, example_inputs).module(), quantizer
    )
    with torch.no_grad():
        for inputs in calibration_inputs:
            prepared(*inputs)
    return convert_pt2e(prepared)  # runs in eager PyTorch too: the int8 reference


def write_pte(exported_program, path, xnnpack):
    if xnnpack:
        lowered = to_edge_transform_and_lower(
            exported_program,
            transform_passes=get_transform_passes(),
            partitioner=[XnnpackPartitioner()],
        )
    else:
        lowered = to_edge_transform_and_lower(exported_program)
    with open(path, "wb") as file:
        file.write(lowered.to_executorch().buffer)
    return path


calibration_inputs = [(torch.randn(1, 3, 224, 224),) for _ in range(4)]
PORTABLE = {"MobileNet V2"}  # the models that also get a portable program
programs = {}  # (model name, program name) -> .pte path
quantized_models = {}  # model name -> the int8 model in eager PyTorch, as a reference
for name, model in models.items():
    stem = "benchmark_" + name.lower().replace(" ", "_").replace("-", "")
    exported = torch.export.export(model, example_inputs)
    if name in PORTABLE:
        programs[name, "portable"] = write_pte(
            exported, f"{stem}_portable.pte", xnnpack=False
        )
    programs[name, "XNNPACK fp32"] = write_pte(
        exported, f"{stem}_xnnpack_fp32.pte", xnnpack=True
    )
    quantized_models[name] = quantize_int8(model, example_inputs, calibration_inputs)
    exported_int8 = torch.export.export(quantized_models[name], example_inputs)
    programs[name, "XNNPACK int8"] = write_pte(
        exported_int8, f"{stem}_xnnpack_int8.pte", xnnpack=True
    )

for (name, program), path in programs.items():
    print(f"{name:>12} {program:<13} {os.path.getsize(path) / 1e6:6.1f} MB  {path}")

# %%
# Check the programs before timing them
# -------------------------------------
# A fast wrong answer is worth nothing. The portable and XNNPACK fp32
# programs must agree with eager PyTorch; XNNPACK may reorder floating-point
# sums, hence the small explicit tolerance. The int8 program is compared with
# the int8 model in eager PyTorch, which simulates the same quantization but
# computes in fp32 between its quantize and dequantize steps, where XNNPACK
# computes in integers. The two do not agree to fp32 precision, so the int8
# check is an absolute tolerance of 0.15 on outputs of order 1, plus a cosine
# similarity of at least 0.97 between the two outputs. The table after the
# code gives the distances measured, and the distance from the
# fp32 model: what quantization costs.

from executorch.runtime import Runtime

runtime = Runtime.get()


def load_forward(path):
    return runtime.load_program(path).load_method("forward")


int8_similarity, int8_rows = {}, []
with torch.no_grad():
    for name, model in models.items():
        eager = model(*example_inputs)
        eager_int8 = quantized_models[name](*example_inputs)
        for program in ("portable", "XNNPACK fp32"):
            if (name, program) not in programs:
                continue
            output = load_forward(programs[name, program]).execute(
                list(example_inputs)
            )[0]
            torch.testing.assert_close(output, eager, atol=1e-3, rtol=1e-3)
        output_int8 = load_forward(programs[name, "XNNPACK int8"]).execute(
            list(example_inputs)
        )[0]
        torch.testing.assert_close(output_int8, eager_int8, atol=0.15, rtol=0.0)
        int8_similarity[name] = torch.nn.functional.cosine_similarity(
            output_int8, eager_int8
        ).item()
        assert int8_similarity[name] > 0.97, (
            f"{name}: the int8 program does not follow the int8 model"
        )
        int8_rows.append(
            [
                name,
                f"{(output_int8 - eager_int8).abs().max():.3f}",
                f"{int8_similarity[name]:.4f}",
                f"{(output_int8 - eager).abs().max():.3f}",
                f"{eager.abs().max():.2f}",
            ]
        )
        print(
            "{}: int8 .pte vs int8 eager: max |diff| {}, cosine {}; vs fp32 eager: max "
            "|diff| {}; "
            "largest fp32 output {}".format(*int8_rows[-1])
        )

# sphinx_gallery_start_ignore
# The tolerances mean something only if the outputs are not vanishingly small.
for name, model in models.items():
    with torch.no_grad():
        scale = model(*example_inputs).abs().max().item()
    assert scale > 0.1, (
        f"{name}: outputs too small ({scale:.1e}) for the tolerances to mean anything"
    )
facts.record_table(
    "int8_agreement",
    [
        "Model",
        "Max |int8 .pte - int8 eager|",
        "Cosine similarity",
        "Max |int8 .pte - fp32 eager|",
        "Largest |fp32 output|",
    ],
    int8_rows,
)
# sphinx_gallery_end_ignore

# %%
# .. fact-table:: benchmark_xnnpack_speedup/int8_agreement
#    :caption: How far the int8 programs are from their references

# %%
# Threads
# -------
# Eager PyTorch and XNNPACK each split an operator's work over a pool of
# threads, one pool per process, sized to the core count by default. (This
# site's build gives a recipe that shares the cores with others its share of
# them: it sets ``OMP_NUM_THREADS``, which PyTorch follows, and resizes
# ExecuTorch's pool; the line below shows what this run got.) PyTorch
# sets its pool with ``torch.set_num_threads``. The installed ExecuTorch sets
# the pool XNNPACK uses with ``_unsafe_reset_threadpool`` from
# ``executorch.extension.pybindings.portable_lib``, an experimental function
# (hence the underscore). It is "unsafe" because it replaces the pool, which a
# loaded XNNPACK program may still be using; so every program below is loaded
# after the reset and dropped before the next one.
#
# Each configuration is timed with one thread, where the comparison is the
# fairest and least disturbed by other work on the machine, and then with two
# threads where the machine has them.

from executorch.extension.pybindings.portable_lib import (
    _threadpool_get_thread_count,
    _unsafe_reset_threadpool,
)


def use_threads(threads):
    torch.set_num_threads(threads)
    _unsafe_reset_threadpool(threads)


thread_counts = [1, 2] if cores >= 2 else [1]
default_threads = (torch.get_num_threads(), _threadpool_get_thread_count())
print(
    f"default threads: PyTorch {default_threads[0]}, ExecuTorch pool "
    f"{default_threads[1]} "
    f"(OMP_NUM_THREADS: {os.environ.get('OMP_NUM_THREADS', 'not set')})"
)

# %%
# Time every program
# ------------------
# ``time_calls`` makes a few untimed warm-up calls, which pay one-off costs
# (memory allocation, thread start-up), then times single-image calls one by
# one with ``time.perf_counter``. Each configuration is summarised by the
# median of its calls, which resists the odd call slowed by other work, and
# their spread, half the interquartile range. The portable programs take
# seconds per image, so they get one warm-up call and three timed calls, with
# one thread only: few calls, but each is long enough that timer noise does
# not matter.

import statistics
import time


def time_calls(call, runs, warmup):
    """Call ``call`` ``warmup`` times untimed, then time ``runs`` calls;
    milliseconds."""
    for _ in range(warmup):
        call()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def median_ms(samples):
    return statistics.median(samples)


def spread_ms(samples):
    quartile_1, _, quartile_3 = statistics.quantiles(samples, n=4)
    return (quartile_3 - quartile_1) / 2


RUNS = {"eager": 15, "portable": 3, "XNNPACK fp32": 20, "XNNPACK int8": 20}
WARMUP = {"eager": 2, "portable": 1, "XNNPACK fp32": 3, "XNNPACK int8": 3}

# sphinx_gallery_start_ignore
from xnnguide.core import machine_hold

held = machine_hold.pause_other_recipes()  # the other recipes of the build stop while this one times
# sphinx_gallery_end_ignore

# Other programs competing for the cores slow every figure; the load average
# says how much.
load_before = os.getloadavg()[0]
timings = {}  # (model name, program name, threads) -> call times in ms
for threads in thread_counts:
    use_threads(threads)
    for name, model in models.items():
        with torch.no_grad():
            timings[name, "eager", threads] = time_calls(
                lambda: model(*example_inputs), RUNS["eager"], WARMUP["eager"]
            )
        for program in ("portable", "XNNPACK fp32", "XNNPACK int8"):
            if (name, program) not in programs or (
                program == "portable" and threads > 1
            ):
                continue
            forward = load_forward(programs[name, program])
            timings[name, program, threads] = time_calls(
                lambda: forward.execute(list(example_inputs)),
                RUNS[program],
                WARMUP[program],
            )
            # drop it: it may hold this pool, which the next reset replaces
            forward = None
torch.set_num_threads(default_threads[0])
_unsafe_reset_threadpool(default_threads[1])
load_after = os.getloadavg()[0]
# sphinx_gallery_start_ignore
held.release()
# sphinx_gallery_end_ignore
print(
    f"1-minute load average: {load_before:.2f} before timing, {load_after:.2f} after, "
    f"on {cores} cores"
)


def speedup(name, program, threads):
    return median_ms(timings[name, "eager", threads]) / median_ms(
        timings[name, program, threads]
    )


for (name, program, threads), samples in timings.items():
    print(
        f"{name:>12} {program:<13} threads {threads}: {median_ms(samples):8.2f} ms "
        f"± {spread_ms(samples):6.2f} ms ({len(samples)} runs) "
        f"{speedup(name, program, threads):6.2f}x eager"
    )

# sphinx_gallery_start_ignore
expected = {
    (name, program, threads)
    for name in models
    for program in RUNS
    for threads in thread_counts
    if program != "portable" or (name in PORTABLE and threads == 1)
}
assert set(timings) == expected, (
    f"configurations without a time: {expected - set(timings)}"
)
for key, samples in timings.items():
    assert len(samples) == RUNS[key[1]] and median_ms(samples) > 0, (
        f"{key}: no valid time"
    )
assert _threadpool_get_thread_count() == default_threads[1], (
    "the thread pool was not restored"
)
facts.record("load_before", load_before, f"{load_before:.2f}")
facts.record("load_after", load_after, f"{load_after:.2f}")
hold = facts.record("timing_hold", held.record())  # the page quotes some of its figures
load = hold["load"]  # what other work took of the machine while the programs were timed
facts.record("recipes_stopped", hold["stopped"], f"{hold['stopped']}")
facts.record("held_seconds", hold["seconds"], f"{hold['seconds']:.0f}")
facts.record("other_share", load["other_share"], f"{load['other_share']:.0%}")
facts.record("steal_share", load["steal_share"], f"{load['steal_share']:.0%}")
from xnnguide.core.machine_load import BUSY_SHARE

facts.record("busy_share", BUSY_SHARE, f"{BUSY_SHARE:.0%}")
# sphinx_gallery_end_ignore

# %%
# The chart
# ---------
# On the left, the speed-up over eager PyTorch with one thread each, on a
# logarithmic axis (the portable kernels are far below 1x); on the right,
# latency against thread count. The chart pictures the table below; its
# matplotlib code is left out of this page.

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import speedup_benchmark

speedup_benchmark.draw_chart(timings, thread_counts, PORTABLE, cpu, cores, median_ms, speedup)
speedup_benchmark.record(timings, programs, list(RUNS), thread_counts, load, median_ms, spread_ms, speedup)
# sphinx_gallery_end_ignore

# %%
# The measurements
# ----------------
# Read the speed-up column rather than the milliseconds: on a shared or busy
# machine the medians move and the spread grows, while the ratios move less,
# and least with one thread. Speed-ups compare programs at the same thread count.
#
# While the programs were timed (:fact:`benchmark_xnnpack_speedup/held_seconds`
# seconds), other work took :fact:`benchmark_xnnpack_speedup/other_share` of the
# machine and the host of this virtual machine
# :fact:`benchmark_xnnpack_speedup/steal_share` (from the kernel's CPU counters;
# a figure taken while more than :fact:`benchmark_xnnpack_speedup/busy_share`
# went elsewhere is marked as timed on a busy machine). The 1-minute load
# average printed above lags a minute behind and says less. Two-thread figures
# suffer most from other work: a thread pool waits for its slowest thread at the
# end of every operator. A two-thread row far slower than its one-thread row,
# with a wide spread, is the sign of a busy machine, not of the program.
#
# .. fact-table:: benchmark_xnnpack_speedup/latency
#    :caption: One 224x224 image
#
# The models above are torchvision's with random weights. A published model
# with its pretrained weights, the CREPE pitch tracker, is timed in fp32 and
# int8 by :doc:`/gallery/quantization/quantize_crepe_pitch_tracker` (the table
# comes from that recipe's run, one frame per call): int8 pays on its full
# model and not on its tiny one, and
# :doc:`/gallery/quantization/remove_int8_conversions_from_crepe_tiny` says why.
#
# .. fact-table:: quantize_crepe_pitch_tracker/latency
#    :caption: CREPE, one frame per call, timed by quantize_crepe_pitch_tracker
