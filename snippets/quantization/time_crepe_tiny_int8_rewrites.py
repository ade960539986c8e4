"""
Trace and time tiny CREPE's int8 rewrites
=========================================

:doc:`remove_int8_conversions_from_crepe_tiny` rewrote the tiny CREPE pitch
tracker so that int8 covers every layer, and kept its first convolution in
fp32. This recipe reads ExecuTorch's ETDump trace of each program, fp32,
int8 and the two rewrites, for the two places int8 could lose time: the
first convolution and the conversions between fp32 and int8. Then it times
each program on one frame per call.
"""

# %%
# The programs and the trace
# --------------------------
# The four programs are files of the folder ``crepe/``, which
# :doc:`quantize_crepe_pitch_tracker` and
# :doc:`remove_int8_conversions_from_crepe_tiny` write: run them first, in
# that order, in the same folder. The trace lists every
# XNNPACK operator a call ran, with its median time over 20 traced calls;
# XNNPACK names its operators ``Kind (layout) #n``, and a ``Convert`` turns
# fp32 into int8 or back. Latency does not depend on what the frame holds,
# so a normalised frame of noise will do.

# sphinx_gallery_start_ignore
from xnnguide.core import facts
from xnnguide.recipe_checks import shared_files

shared_files.ensure("crepe", "quantize_crepe_pitch_tracker.py", "remove_int8_conversions_from_crepe_tiny.py")
# xnnguide_depends_on = quantize_crepe_pitch_tracker.py remove_int8_conversions_from_crepe_tiny.py
# sphinx_gallery_end_ignore
# [gallery-only crepe_tiny_trace]
# [start crepe_tiny_trace]
import torch
from executorch.devtools import Inspector
from executorch.runtime import Runtime

PROGRAMS = {
    "fp32": "crepe/crepe_tiny_fp32.pte",
    "int8": "crepe/crepe_tiny_int8.pte",
    "folded int8": "crepe/crepe_tiny_folded_int8.pte",
    "folded int8, first conv fp32": "crepe/crepe_tiny_mixed_int8.pte",
}
frame = torch.randn(1, 1024, generator=torch.Generator().manual_seed(0))
example_inputs = ((frame - frame.mean()) / frame.std(),)
runtime = Runtime.get()


def xnnpack_operators(path, calls=20):
    """Each XNNPACK operator a call of *path* runs, in order, with its median time in
    milliseconds over *calls* traced calls."""
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
# [end crepe_tiny_trace]

# %%
# Timed
# -----
# Each program is timed on one frame per call (batch 1): the median of 200
# calls after a few untimed ones, with one thread and with the threads this
# run was given (``_unsafe_reset_threadpool`` resizes the pool XNNPACK runs
# on; a program is loaded after each reset). Then each is traced.

# [gallery-only crepe_tiny_timing]
# [start crepe_tiny_timing]
import statistics
import time

from executorch.extension.pybindings.portable_lib import (
    _threadpool_get_thread_count,
    _unsafe_reset_threadpool,
)

default_threads = _threadpool_get_thread_count()
thread_counts = sorted({1, default_threads})


def median_ms(path, runs=200, warmup=5):
    method = runtime.load_program(path).load_method("forward")
    for _ in range(warmup):
        method.execute(list(example_inputs))
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        method.execute(list(example_inputs))
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)
# [end crepe_tiny_timing]


# sphinx_gallery_start_ignore
from xnnguide.core import machine_hold, timings

held = machine_hold.pause_other_recipes()  # the build's other recipes stop while this one times
# sphinx_gallery_end_ignore
latency = {}
for threads in thread_counts:
    _unsafe_reset_threadpool(threads)
    for variant, path in PROGRAMS.items():
        latency[variant, threads] = median_ms(path)
_unsafe_reset_threadpool(default_threads)
operators = {variant: xnnpack_operators(path) for variant, path in PROGRAMS.items()}
# sphinx_gallery_start_ignore
held.release()
# sphinx_gallery_end_ignore
summary = {}  # conversions, their ms, the first convolution's ms, all operators' ms
for variant, times in operators.items():
    converts = [ms for name, ms in times.items() if name.startswith("Convert")]
    # The first convolution the call runs (XNNPACK numbers each data type apart).
    first_conv = next(ms for name, ms in times.items() if "IGEMM" in name)
    summary[variant] = len(converts), sum(converts), first_conv, sum(times.values())
    timed = ", ".join(f"{latency[variant, t]:.3f} ms ({t} thr.)" for t in thread_counts)
    print(f"{variant}: {len(converts)} conversions, {sum(converts):.3f} ms; "
          f"first convolution {first_conv:.3f} ms; median call {timed}")

# sphinx_gallery_start_ignore
assert set(latency) == {(v, t) for v in PROGRAMS for t in thread_counts}
assert _threadpool_get_thread_count() == default_threads, "the thread pool was not restored"
load = facts.record("timing_hold", held.record())["load"]  # what other work took of the machine meanwhile

converts_of = {variant: counts[0] for variant, counts in summary.items()}
rows, timed = [], []
for variant, (converts, converts_ms, first_conv, total) in summary.items():
    rows.append([variant, converts, f"{converts_ms:.3f}", f"{first_conv:.3f}", f"{total:.3f}"]
                + [timings.latency_cell(latency[variant, t], load) for t in thread_counts])
    # Timed in one window with the rewrites: not the figure of profile_crepe_int8_latency_with_etdump's table.
    timed += [{"kind": "latency", "subject": f"CREPE tiny, {variant} .pte, in the rewrites' timing window",
               "threads": t, "batch": 1} for t in thread_counts]
    facts.record(f"{variant.replace(' ', '_').replace(',', '')}_converts", converts_of[variant])
timings.record_timing_table(
    "variants", ["Tiny CREPE program", "XNNPACK Converts", "Converts ms", "First conv ms", "All XNNPACK ops ms"]
    + [f"Median, {t} thread{'s' if t > 1 else ''} (batch 1)" for t in thread_counts], rows, timed=timed, load=load)
# What the page says the trace shows: the rewrite removes most conversions; fp32 has none.
assert converts_of["int8"] >= 2 * 6, converts_of
assert converts_of["folded int8"] < converts_of["int8"], converts_of
assert converts_of["fp32"] == 0, converts_of
# And where the int8 call's time goes: its first convolution outweighs the rest, its conversions are a sliver.
_, int8_converts_ms, int8_first_conv_ms, int8_total_ms = summary["int8"]
assert int8_first_conv_ms > int8_total_ms - int8_first_conv_ms, summary["int8"]
assert int8_converts_ms < 0.05 * int8_total_ms, summary["int8"]
assert 2 * converts_of["folded int8"] < converts_of["int8"], converts_of  # "removes most conversions"
for variant in ["folded int8", "folded int8, first conv fp32"]:
    for other in ["fp32", "int8"]:
        key = f"{'folded' if variant == 'folded int8' else 'mixed'}_vs_{other}_1_thread"
        timings.record_speedup(key, latency[other, 1] / latency[variant, 1],
                               subject=f"CREPE tiny, {variant} .pte against {other} .pte",
                               threads=1, batch=1, load=load)
# sphinx_gallery_end_ignore

# %%
# The programs side by side
# -------------------------
#
# .. fact-table:: time_crepe_tiny_int8_rewrites/variants
#    :caption: Tiny CREPE's programs: the conversions a call runs, the trace's times and the median call
#
# The first convolution is where the time goes. In the int8 program it
# takes longer than the whole rest of the call, and its conversions cost
# almost nothing. The exact rewrite removes most conversions, yet runs only
# :fact:`time_crepe_tiny_int8_rewrites/folded_vs_int8_1_thread` as fast as
# int8 and :fact:`time_crepe_tiny_int8_rewrites/folded_vs_fp32_1_thread` as
# fast as fp32. With the first convolution kept in fp32 as well, the
# program runs :fact:`time_crepe_tiny_int8_rewrites/mixed_vs_fp32_1_thread`
# as fast as fp32 and
# :fact:`time_crepe_tiny_int8_rewrites/mixed_vs_int8_1_thread` as fast as
# int8. The quantize nodes :doc:`remove_int8_conversions_from_crepe_tiny`
# counts say little: a quantize and dequantize pair between two int8
# operators costs nothing, and only the conversions the trace shows are
# work.
