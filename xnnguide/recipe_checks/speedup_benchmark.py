"""The benchmark recipe's chart, checks and records, out of the reader's way.

``snippets/performance/benchmark_xnnpack_speedup.py`` teaches how to time programs and read speed-ups; its
page's figures are the tables this module records and the speed-ups it records for other pages to quote. The
chart only pictures the latency table, so its drawing code lives here and the recipe calls it from a hidden line.
The chart and the latency records take the recipe's own ``medians`` and ``speedups`` (keyed by model, program
and threads), so that every figure has one source; the asserts are those of the page's claims that the reader's
code does not make itself (outputs large enough for the tolerances, every configuration timed in full).
"""

from __future__ import annotations

import os
import platform
import statistics

import torch

from xnnguide.core import facts
from xnnguide.core import timings as timing_facts
from xnnguide.core.machine_load import BUSY_SHARE

Timings = dict[tuple[str, str, int], list[float]]
Figures = dict[tuple[str, str, int], float]
#: The programs the page times for every model, at every thread count; the portable one has one thread only.
XNNPACK_PROGRAMS = ("XNNPACK fp32", "XNNPACK int8")


def cpu_name() -> str:
    """The processor model: on Linux from ``/proc/cpuinfo``, elsewhere what ``platform`` knows."""
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def record_int8_agreement(models: dict, quantized_models: dict, outputs: dict, example_inputs: tuple) -> None:
    """Asserts that each model's fp32 outputs are large enough for the page's tolerances to mean anything, and
    records the table of how far each int8 program is from the int8 model and from the fp32 model."""
    rows = []
    with torch.no_grad():
        for name, model in models.items():
            eager, eager_int8 = model(*example_inputs), quantized_models[name](*example_inputs)
            output_int8 = outputs[name, "XNNPACK int8"]
            scale = eager.abs().max().item()
            assert scale > 0.1, f"{name}: outputs too small ({scale:.1e}) for the tolerances to mean anything"
            similarity = torch.nn.functional.cosine_similarity(output_int8, eager_int8).item()
            rows.append([name, f"{(output_int8 - eager_int8).abs().max():.3f}", f"{similarity:.4f}",
                         f"{(output_int8 - eager).abs().max():.3f}", f"{scale:.2f}"])
    facts.record_table("int8_agreement", ["Model", "Max |int8 .pte - int8 eager|", "Cosine similarity",
                                          "Max |int8 .pte - fp32 eager|", "Largest |fp32 output|"], rows)


def check_timings(timings: Timings, runs: dict[str, int], models: dict, portable: set[str],
                  thread_counts: list[int]) -> None:
    """Asserts that every configuration the page names has its full count of positive call times: eager and
    both XNNPACK programs for every model at every thread count, the portable program with one thread."""
    expected = {(name, program, threads) for name in models for program in ("eager", *XNNPACK_PROGRAMS)
                for threads in thread_counts} | {(name, "portable", 1) for name in portable}
    assert set(timings) == expected, f"configurations without a time: {expected - set(timings)}"
    for key, samples in timings.items():
        assert len(samples) == runs[key[1]] and min(samples) > 0, f"{key}: no valid time"


def record_hold(held, load_before: float, load_after: float) -> dict:
    """Records the hold around the timing (recipes stopped, seconds, what other work took of the machine) and
    the load averages; returns the load the timing tables are marked with."""
    facts.record("load_before", load_before, f"{load_before:.2f}")
    facts.record("load_after", load_after, f"{load_after:.2f}")
    hold = facts.record("timing_hold", held.record())  # the page quotes some of its figures
    load = hold["load"]  # what other work took of the machine while the programs were timed
    facts.record("recipes_stopped", hold["stopped"], f"{hold['stopped']}")
    facts.record("held_seconds", hold["seconds"], f"{hold['seconds']:.0f}")
    facts.record("other_share", load["other_share"], f"{load['other_share']:.0%}")
    facts.record("steal_share", load["steal_share"], f"{load['steal_share']:.0%}")
    facts.record("busy_share", BUSY_SHARE, f"{BUSY_SHARE:.0%}")
    return load


def draw_chart(medians: Figures, speedups: Figures, thread_counts: list[int], cpu: str, cores: int):
    """Speed-up over eager with one thread (left, log scale) and median latency against threads (right);
    asserts that neither legend covers a bar or a plotted point. Returns the figure."""
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(name for name, _, _ in medians))
    portable = {name for name, program, _ in medians if program == "portable"}
    compiled = ["portable", *XNNPACK_PROGRAMS]
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    width = 0.8 / len(compiled)
    for index, program in enumerate(compiled):
        rows = [row for row, name in enumerate(names) if (name, program, 1) in speedups]
        ratios = [speedups[names[row], program, 1] for row in rows]
        bars = left.barh([row + index * width for row in rows], ratios, height=width, label=program)
        left.bar_label(bars, labels=[f"{ratio:.2g}x" for ratio in ratios], padding=2, fontsize=8)
    left.axvline(1.0, color="gray", linestyle="--", linewidth=1)
    left.set_xscale("log")
    left.set_xlim(right=10 * max(ratio for (_, _, threads), ratio in speedups.items() if threads == 1))
    left.set_yticks([row + width for row in range(len(names))], names)
    left.set_xlabel("speed-up over eager PyTorch, one thread (higher is faster)")
    left.set_title("One 224x224 image")
    # Legends go under the axes, where they cannot hide a bar or a line.
    left.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, fontsize=8, frameon=False)
    for name, marker in zip(names, "os"):
        for program, color in zip(("eager", "XNNPACK fp32", "XNNPACK int8"), ("gray", "C1", "C2")):
            latencies = [medians[name, program, threads] for threads in thread_counts]
            right.plot(thread_counts, latencies, marker=marker, color=color, label=f"{name}, {program}")
    right.set_xticks(thread_counts)
    right.set_yscale("log")
    right.set_xlabel("threads")
    right.set_ylabel("median latency (ms)")
    right.set_title(f"Median latency with {', '.join(map(str, thread_counts))} threads")
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=7, frameon=False)
    # The title says what the chart shows; it is also the image's alternative text.
    figure.suptitle(
        "Speed-up over eager PyTorch, one thread: "
        + "; ".join(f"{name} XNNPACK fp32 {speedups[name, 'XNNPACK fp32', 1]:.2g}x, int8 "
                    f"{speedups[name, 'XNNPACK int8', 1]:.2g}x"
                    + (f", portable {speedups[name, 'portable', 1]:.2g}x" if name in portable else "")
                    for name in names)
        + f"; measured on {cpu} ({cores} logical cores)",
        fontsize=9, wrap=True)
    # The legends are clear of what they label: no bar and no plotted point under either.
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    for axes in (left, right):
        legend_box = axes.get_legend().get_window_extent(renderer)
        for bar in axes.patches:
            assert not legend_box.overlaps(bar.get_window_extent(renderer)), axes.get_title()
        for line in axes.get_lines():
            points = line.get_transform().transform(line.get_xydata())
            assert not any(legend_box.contains(x, y) for x, y in points), axes.get_title()
    return figure


def fact_key(name: str, program: str) -> str:
    """``("MobileNet V2", "XNNPACK fp32")`` -> ``"mobilenet_v2_xnnpack_fp32"``."""
    return f"{name} {program}".lower().replace(" ", "_").replace("-", "")


def subject(name: str, program: str) -> str:
    """What was timed, as every page that quotes it names it."""
    return f"{name}, {'eager PyTorch' if program == 'eager' else program + ' .pte'}"


def spread_ms(samples: list[float]) -> float:
    """Half the interquartile range of *samples*: the table's spread, which one slow call does not move."""
    quartile_1, _, quartile_3 = statistics.quantiles(samples, n=4)
    return (quartile_3 - quartile_1) / 2


def record(timings: Timings, medians: Figures, speedups: Figures, programs: dict[tuple[str, str], str],
           program_order: list[str], thread_counts: list[int], load: dict) -> None:
    """The latency table (by model, then program in *program_order*, then threads), one latency per
    configuration and one speed-up per compiled program with one thread."""
    names = list(dict.fromkeys(name for name, _, _ in timings))
    order = [(name, program, threads) for name in names for program in program_order for threads in thread_counts
             if (name, program, threads) in timings]
    rows, timed = [], []
    for name, program, threads in order:
        samples = timings[name, program, threads]
        size = f"{os.path.getsize(programs[name, program]) / 1e6:.1f} MB" if program != "eager" else "-"
        median = medians[name, program, threads]
        rows.append([name, program, threads, 1, timing_facts.latency_cell(median, load, digits=1),
                     f"{spread_ms(samples):.1f}", len(samples),
                     timing_facts.speedup_cell(speedups[name, program, threads], load), size])
        timed.append({"kind": "latency", "subject": subject(name, program), "threads": threads, "batch": 1})
        # One figure per configuration for other pages to quote, under a key that says the thread count:
        # ..._threads_1_ms, and ..._threads_all_ms for the most threads timed (the machine's default).
        which = "all" if threads == thread_counts[-1] and threads > 1 else threads
        timing_facts.record_latency(f"{fact_key(name, program)}_threads_{which}_ms", median,
                                    subject=subject(name, program), threads=threads, batch=1, load=load)
    timing_facts.record_timing_table(
        "latency", ["Model", "Program", "Threads", "Batch", "Median (ms)", "Spread (ms)", "Timed runs",
                    "Speed-up over eager", ".pte size"], rows, timed=timed, load=load)
    for name, program, threads in order:
        if program != "eager" and threads == 1:
            timing_facts.record_speedup(f"{fact_key(name, program)}_speedup", speedups[name, program, 1],
                                        subject=f"{subject(name, program)} against eager PyTorch", threads=1,
                                        batch=1, load=load)
