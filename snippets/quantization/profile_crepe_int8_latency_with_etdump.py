"""
Time CREPE in fp32 and int8, and trace where int8 pays
======================================================

int8 shrinks CREPE's ``.pte`` to a quarter, but it speeds up the full model
far more than the tiny one. This recipe times the four programs
:doc:`quantize_crepe_pitch_tracker` lowered (``tiny`` and ``full``, fp32 and
static int8, one frame per call) and reads ExecuTorch's ETDump trace for
where a call's time goes, convolution by convolution.
"""

# %%
# The programs and one frame
# --------------------------
# The programs are the files :doc:`quantize_crepe_pitch_tracker` writes to
# ``crepe/``: run it first, in the same folder. Latency does not
# depend on what the frame holds, so a normalised frame of noise will do:
# 1,024 samples, as ``torchcrepe`` feeds its network.

# sphinx_gallery_start_ignore
from xnnguide.core import facts
from xnnguide.recipe_checks import shared_files

shared_files.ensure("crepe", "quantize_crepe_pitch_tracker.py")
# xnnguide_depends_on = quantize_crepe_pitch_tracker.py
# sphinx_gallery_end_ignore
import os

import torch
from executorch.runtime import Runtime

PROGRAMS = ["tiny_fp32", "tiny_int8", "full_fp32", "full_int8"]
sizes = {name: os.path.getsize(f"crepe/crepe_{name}.pte") for name in PROGRAMS}
frame = torch.randn(1, 1024, generator=torch.Generator().manual_seed(0))
example_inputs = ((frame - frame.mean()) / frame.std(),)
runtime = Runtime.get()
print({name: f"{size / 1e6:.2f} MB" for name, size in sizes.items()})

# %%
# Latency and the trace
# ---------------------
# Each program is timed on one frame (batch 1) after a few untimed calls,
# with one thread and with the number of threads this run was given
# (``_unsafe_reset_threadpool`` from ExecuTorch's pybindings resizes the pool
# XNNPACK uses; the :doc:`benchmark </gallery/performance/benchmark_xnnpack_speedup>`
# explains why a program is loaded after the reset and dropped before the
# next one). The figure is the median call. ExecuTorch's ETDump trace then
# says where a call's time goes: it lists every XNNPACK operator the call
# ran (XNNPACK names them ``Kind (layout) #n``), with its median time over
# 20 traced calls.

# [gallery-only crepe_latency]
# [start crepe_latency]
import statistics
import time

from executorch.devtools import Inspector
from executorch.extension.pybindings.portable_lib import (
    _threadpool_get_thread_count,
    _unsafe_reset_threadpool,
)

RUNS = {"tiny": 200, "full": 20}
default_threads = _threadpool_get_thread_count()
thread_counts = sorted({1, default_threads})


def median_ms(path, runs, warmup=5):
    method = runtime.load_program(path).load_method("forward")
    for _ in range(warmup):
        method.execute(list(example_inputs))
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        method.execute(list(example_inputs))
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def xnnpack_operators(path, calls=20):
    """Each XNNPACK operator a call of *path* runs, in order, with its median ms."""
    program = runtime.load_program(path, enable_etdump=True)
    method = program.load_method("forward")
    for _ in range(calls):
        method.execute(list(example_inputs))
    program.write_etdump_result_to_file(f"{path}.etdp", f"{path}.debug")
    blocks = Inspector(etdump_path=f"{path}.etdp").event_blocks
    return {
        event.name: event.perf_data.p50
        for block in blocks
        for event in block.events
        if " (" in event.name  # XNNPACK's operators, not the runtime's own events
    }
# [end crepe_latency]


# sphinx_gallery_start_ignore
from xnnguide.core import machine_hold, timings

held = machine_hold.pause_other_recipes()  # the build's other recipes stop while this one times
# sphinx_gallery_end_ignore
latency = {}
for threads in thread_counts:
    _unsafe_reset_threadpool(threads)
    for name in PROGRAMS:
        runs = RUNS[name.split("_")[0]]
        latency[name, threads] = median_ms(f"crepe/crepe_{name}.pte", runs)
_unsafe_reset_threadpool(default_threads)
operators = {name: xnnpack_operators(f"crepe/crepe_{name}.pte") for name in PROGRAMS}
# sphinx_gallery_start_ignore
held.release()
# sphinx_gallery_end_ignore
for name in PROGRAMS:
    times = ", ".join(f"{latency[name, t]:.2f} ms ({t} thr.)" for t in thread_counts)
    print(f"{name:<10} {times}")
for name, times in operators.items():  # the six convolutions, in order
    convolutions = [f"{ms:.3f}" for op, ms in times.items() if "IGEMM" in op]
    print(f"{name:<10} convolutions (ms): {', '.join(convolutions)}")

# sphinx_gallery_start_ignore
assert set(latency) == {(name, t) for name in PROGRAMS for t in thread_counts}
assert _threadpool_get_thread_count() == default_threads, "the thread pool was not restored"
facts.record("threads", thread_counts, " and ".join(map(str, thread_counts)))
facts.record("build_threads", default_threads)
load = facts.record("timing_hold", held.record())["load"]  # what other work took of the machine meanwhile
latency_rows, timed = [], []
for name in PROGRAMS:
    capacity, precision = name.split("_")
    speedups = [latency[f"{capacity}_fp32", t] / latency[name, t] for t in thread_counts]
    latency_rows.append([capacity, precision, f"{sizes[name] / 1e6:.2f} MB", 1]
                        + [timings.latency_cell(latency[name, t], load) for t in thread_counts]
                        + [" / ".join(timings.speedup_cell(s, load) for s in speedups)])
    timed += [{"kind": "latency", "subject": f"CREPE {capacity}, {precision} .pte", "threads": t,
               "batch": 1} for t in thread_counts]
timings.record_timing_table("latency", ["Model", "Program", ".pte size", "Batch"]
                            + [f"Median, {t} thread{'s' if t > 1 else ''}" for t in thread_counts]
                            + ["Speed-up over fp32 (" + " / ".join(f"{t} thr." for t in thread_counts) + ")"],
                            latency_rows, timed=timed, load=load)
for capacity in ["tiny", "full"]:
    timings.record_speedup(f"{capacity}_int8_speedup_1_thread", latency[f"{capacity}_fp32", 1]
                           / latency[f"{capacity}_int8", 1], threads=1, batch=1, load=load,
                           subject=f"CREPE {capacity}, int8 .pte against fp32 .pte")
    ratio = sizes[f"{capacity}_int8"] / sizes[f"{capacity}_fp32"]
    facts.record(f"{capacity}_size_ratio", ratio, f"{ratio:.2f}")
# sphinx_gallery_end_ignore

# %%
# Per convolution
# ---------------
# XNNPACK runs each of the six layers' convolutions as an ``IGEMM`` and
# numbers them from 1 (the batch norms' 1×1 depthwise convolutions are
# named otherwise): the share of the fp32 call each takes, and what int8
# makes of it.

# [gallery-only crepe_convolutions]
# [start crepe_convolutions]
def conv_ms(name, index):
    """The trace's median ms of the program's *index*-th layer convolution."""
    times = operators[name].items()
    return sum(ms for op, ms in times if op.endswith(f"IGEMM #{index}"))


convolutions = {}  # (model, layer): share of the fp32 call, fp32 ms, int8 ms
for capacity in ["tiny", "full"]:
    fp32_total = sum(operators[f"{capacity}_fp32"].values())
    for index in range(1, 7):
        fp32_ms = conv_ms(f"{capacity}_fp32", index)
        int8_ms = conv_ms(f"{capacity}_int8", index)
        convolutions[capacity, index] = fp32_ms / fp32_total, fp32_ms, int8_ms
        print(f"{capacity} conv{index}: {fp32_ms / fp32_total:4.0%} of the fp32 call, "
              f"int8 {fp32_ms / int8_ms:.2f}x as fast")
# [end crepe_convolutions]

# sphinx_gallery_start_ignore
conv_rows, timed = [], []
for (capacity, index), (share, fp32_ms, int8_ms) in convolutions.items():
    assert fp32_ms > 0 and int8_ms > 0, (capacity, index, operators[f"{capacity}_int8"])
    conv_rows.append([capacity, f"conv{index}", f"{share:.0%}", timings.latency_cell(fp32_ms, load),
                      timings.latency_cell(int8_ms, load), timings.speedup_cell(fp32_ms / int8_ms, load)])
    timed += [{"kind": "latency", "subject": f"CREPE {capacity} conv{index}, {precision} (ETDump)",
               "threads": default_threads, "batch": 1} for precision in ["fp32", "int8"]]
    timings.record_speedup(f"{capacity}_conv{index}_speedup", fp32_ms / int8_ms, threads=default_threads,
                           subject=f"CREPE {capacity} conv{index}, int8 against fp32 (ETDump)", batch=1, load=load)
    if index == 2:
        facts.record(f"{capacity}_conv2_fp32_share", share, f"{share:.0%}")
timings.record_timing_table("convolutions", ["Model", "Layer", "Share of the fp32 call", "fp32 (ETDump median)",
                            "int8 (ETDump median)", "int8 speed-up"], conv_rows, timed=timed, load=load)
# What the page says: int8 slows the first convolution in both sizes; the second holds most of full's fp32 time.
assert all(convolutions[capacity, 1][1] < convolutions[capacity, 1][2] for capacity in ["tiny", "full"])
assert convolutions["full", 2][0] > 0.5, convolutions
# sphinx_gallery_end_ignore

# %%
# The tiny int8 program's first layer
# -----------------------------------
# In ``tiny`` the first convolution, which reads the raw frame through a
# 512-sample kernel, is the one int8 slows down, and in the int8 program it
# is most of the call. The trace of its first layer, in the order the call
# runs it, up to the next layer's padding: the convolution dwarfs the rest.
# A ``Convert`` turns fp32 into int8 or back, and the batch norm runs as a
# 1×1 depthwise convolution in fp32.

# [gallery-only crepe_first_layer]
# [start crepe_first_layer]
int8_operators = operators["tiny_int8"]
names = list(int8_operators)
first_layer = names[: names.index("Constant Pad (ND, X32) #2")]
for name in first_layer:
    print(f"{int8_operators[name]:7.3f} ms  {name}")
converts = [ms for name, ms in int8_operators.items() if name.startswith("Convert")]
total = sum(int8_operators.values())
print(f"{len(converts)} conversions a call: {sum(converts) / total:.1%} of its time")
# [end crepe_first_layer]

# sphinx_gallery_start_ignore
facts.record("first_layer_trace", "\n".join(f"{int8_operators[name]:7.3f} ms  {name}" for name in first_layer))
facts.record("int8_converts", len(converts))
facts.record("int8_convert_share", sum(converts) / total, f"{sum(converts) / total:.1%}")
first_share = convolutions["tiny", 1][2] / total
facts.record("int8_first_conv_share", first_share, f"{first_share:.0%}")
# What the page says: two conversions per layer at least, a small share of the time, none in fp32;
# and int8 pays on the full model.
assert len(converts) >= 2 * 6 and sum(converts) / total < 0.10, converts
assert first_share > 0.5, first_share  # "in the int8 program it is most of the call"
assert not any(name.startswith("Convert") for name in operators["tiny_fp32"]), operators["tiny_fp32"]
assert latency["full_int8", 1] < latency["full_fp32", 1], latency
# sphinx_gallery_end_ignore

# %%
# The measurements
# ----------------
#
# .. fact-table:: profile_crepe_int8_latency_with_etdump/latency
#    :caption: CREPE, median latency of one frame and .pte size
#
# .. fact-table:: profile_crepe_int8_latency_with_etdump/convolutions
#    :caption: CREPE's convolutions in the ETDump trace
#
# Why int8 does not pay on the tiny model: its first convolution takes
# :fact:`profile_crepe_int8_latency_with_etdump/int8_first_conv_share` of the
# int8 program's operator time, and int8 runs it
# :fact:`profile_crepe_int8_latency_with_etdump/tiny_conv1_speedup` as fast
# as fp32; the :fact:`profile_crepe_int8_latency_with_etdump/int8_converts`
# conversions take :fact:`profile_crepe_int8_latency_with_etdump/int8_convert_share`.
# Keeping that convolution in fp32 is what makes the tiny model pay:
# :doc:`remove_int8_conversions_from_crepe_tiny`.
