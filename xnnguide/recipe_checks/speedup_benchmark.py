"""The benchmark recipe's chart and timing records, out of the reader's way.

``snippets/performance/benchmark_xnnpack_speedup.py`` teaches how to time programs and read speed-ups; its
page's figures are the table this module records and the speed-ups it records for other pages to quote. The
chart only pictures that table, so its drawing code lives here and the recipe calls it from a hidden line.
Both take the recipe's own ``median_ms`` and ``speedup`` so that every figure has one source.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from xnnguide.core import timings as timing_facts

Timings = dict[tuple[str, str, int], list[float]]


def draw_chart(timings: Timings, thread_counts: list[int], portable: set[str], cpu: str, cores: int,
               median_ms: Callable[[list[float]], float], speedup: Callable[[str, str, int], float]):
    """Speed-up over eager with one thread (left, log scale) and median latency against threads (right);
    asserts that neither legend covers a bar or a plotted point. Returns the figure."""
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(name for name, _, _ in timings))
    compiled = ["portable", "XNNPACK fp32", "XNNPACK int8"]
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    width = 0.8 / len(compiled)
    for index, program in enumerate(compiled):
        rows = [row for row, name in enumerate(names) if (name, program, 1) in timings]
        ratios = [speedup(names[row], program, 1) for row in rows]
        bars = left.barh([row + index * width for row in rows], ratios, height=width, label=program)
        left.bar_label(bars, labels=[f"{ratio:.2g}x" for ratio in ratios], padding=2, fontsize=8)
    left.axvline(1.0, color="gray", linestyle="--", linewidth=1)
    left.set_xscale("log")
    left.set_xlim(right=10 * max(speedup(name, program, 1) for name, program, threads in timings if threads == 1))
    left.set_yticks([row + width for row in range(len(names))], names)
    left.set_xlabel("speed-up over eager PyTorch, one thread (higher is faster)")
    left.set_title("One 224x224 image")
    # Legends go under the axes, where they cannot hide a bar or a line.
    left.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, fontsize=8, frameon=False)
    for name, marker in zip(names, "os"):
        for program, color in zip(("eager", "XNNPACK fp32", "XNNPACK int8"), ("gray", "C1", "C2")):
            medians = [median_ms(timings[name, program, threads]) for threads in thread_counts]
            right.plot(thread_counts, medians, marker=marker, color=color, label=f"{name}, {program}")
    right.set_xticks(thread_counts)
    right.set_yscale("log")
    right.set_xlabel("threads")
    right.set_ylabel("median latency (ms)")
    right.set_title(f"Median latency with {', '.join(map(str, thread_counts))} threads")
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=7, frameon=False)
    # The title says what the chart shows; it is also the image's alternative text.
    figure.suptitle(
        "Speed-up over eager PyTorch, one thread: "
        + "; ".join(f"{name} XNNPACK fp32 {speedup(name, 'XNNPACK fp32', 1):.2g}x, int8 "
                    f"{speedup(name, 'XNNPACK int8', 1):.2g}x"
                    + (f", portable {speedup(name, 'portable', 1):.2g}x" if name in portable else "")
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


def record(timings: Timings, programs: dict[tuple[str, str], str], program_order: list[str],
           thread_counts: list[int], load: dict, median_ms: Callable[[list[float]], float],
           spread_ms: Callable[[list[float]], float], speedup: Callable[[str, str, int], float]) -> None:
    """The latency table (by model, then program in *program_order*, then threads), one latency per
    configuration and one speed-up per compiled program with one thread."""
    names = list(dict.fromkeys(name for name, _, _ in timings))
    order = [(name, program, threads) for name in names for program in program_order for threads in thread_counts
             if (name, program, threads) in timings]
    rows, timed = [], []
    for name, program, threads in order:
        samples = timings[name, program, threads]
        size = f"{os.path.getsize(programs[name, program]) / 1e6:.1f} MB" if program != "eager" else "-"
        rows.append([name, program, threads, 1, timing_facts.latency_cell(median_ms(samples), load, digits=1),
                     f"{spread_ms(samples):.1f}", len(samples),
                     timing_facts.speedup_cell(speedup(name, program, threads), load), size])
        timed.append({"kind": "latency", "subject": subject(name, program), "threads": threads, "batch": 1})
        # One figure per configuration for other pages to quote, under a key that says the thread count:
        # ..._threads_1_ms, and ..._threads_all_ms for the most threads timed (the machine's default).
        which = "all" if threads == thread_counts[-1] and threads > 1 else threads
        timing_facts.record_latency(f"{fact_key(name, program)}_threads_{which}_ms", median_ms(samples),
                                    subject=subject(name, program), threads=threads, batch=1, load=load)
    timing_facts.record_timing_table(
        "latency", ["Model", "Program", "Threads", "Batch", "Median (ms)", "Spread (ms)", "Timed runs",
                    "Speed-up over eager", ".pte size"], rows, timed=timed, load=load)
    for name, program, threads in order:
        if program != "eager" and threads == 1:
            timing_facts.record_speedup(f"{fact_key(name, program)}_speedup", speedup(name, program, 1),
                                        subject=f"{subject(name, program)} against eager PyTorch", threads=1,
                                        batch=1, load=load)
