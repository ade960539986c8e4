"""
Choose the number of threads XNNPACK runs on
============================================

ExecuTorch runs XNNPACK on one thread pool per process. This recipe finds
how many threads that pool has when nobody sets it, in the C++ runner and in
the Python runtime, then times, with the C++ runner of
:doc:`build_and_run_pte_from_cpp`, the fp32 MobileNet V2 that recipe
lowered, on 1 to 4 threads of this machine. The
how-to page :doc:`/guides/run_on_device` says what to choose on a phone.
"""

# %%
# The program
# -----------
# The fp32 MobileNet V2 ``.pte`` that :doc:`build_and_run_pte_from_cpp`
# lowered to XNNPACK (random weights, batch-norm statistics measured on a
# few random images), and what eager PyTorch computed on an image of ones,
# in ``mobilenet_v2_cpp/``: run that recipe first, in the same folder.

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import shared_files
shared_files.ensure("mobilenet_v2_cpp", "build_and_run_pte_from_cpp.py")
# xnnguide_depends_on = build_and_run_pte_from_cpp.py
# sphinx_gallery_end_ignore
import torch

pte = "mobilenet_v2_cpp/fp32.pte"
eager_outputs = torch.load("mobilenet_v2_cpp/eager_outputs.pt")
ones = torch.ones(1, 3, 224, 224)  # the runner's input when it is given no input file

# %%
# The runner, and a check that it computes the model
# --------------------------------------------------
# Built with CMake and Ninja from PyPI against the installed
# ``executorch`` package, in the build folder of
# :doc:`build_and_run_pte_from_cpp`, ``cpp_runner/build``: after that recipe
# CMake only checks the configuration and Ninja finds the runner up to date.
# Its ``--threads T`` option resets the pool before anything is loaded;
# ``--iterations N`` times N runs and prints their median and the pool's
# thread count.

import importlib.util
import subprocess
from pathlib import Path

import cmake
import ninja
from executorch.runtime import Runtime

executorch_dir = Path(
    importlib.util.find_spec("executorch").submodule_search_locations[0]
)
cmake_exe = str(Path(cmake.CMAKE_BIN_DIR) / "cmake")
build_dir = Path("cpp_runner") / "build"
subprocess.run(
    [cmake_exe, "-S", "cpp_runner", "-B", str(build_dir), "-G", "Ninja",
     f"-DCMAKE_MAKE_PROGRAM={Path(ninja.BIN_DIR) / 'ninja'}",
     f"-DCMAKE_PREFIX_PATH={executorch_dir}", "-DCMAKE_BUILD_TYPE=Release"],
    check=True, capture_output=True,
)
subprocess.run(
    [cmake_exe, "--build", str(build_dir), "--target", "runner"],
    check=True, capture_output=True,
)
runner = build_dir / "runner"


def run_runner(*arguments):
    """What the runner printed for the program, with *arguments* after it."""
    return subprocess.run(
        [str(runner), pte, *map(str, arguments)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()


printed = run_runner()
start = printed.index("output 0: Float [1, 1000]") + 1
cpp_output = torch.tensor([float(value) for value in printed[start : start + 1000]])
method = Runtime.get().load_program(pte).load_method("forward")
python_output = method.execute([ones])[0]
eager_output = eager_outputs["fp32_on_ones"]
cpp_output = cpp_output.reshape(1, 1000)
torch.testing.assert_close(cpp_output, eager_output, atol=1e-4, rtol=1e-4)
torch.testing.assert_close(python_output, eager_output, atol=1e-4, rtol=1e-4)

# sphinx_gallery_start_ignore
# A change to the runner's sources runs this recipe again:
# xnnguide_depends_on = cpp_runner/main.cpp cpp_runner/CMakeLists.txt
from xnnguide.core import facts

assert eager_output.abs().max().item() > 0.1, "outputs too small for atol=1e-4"
# sphinx_gallery_end_ignore

# %%
# The default
# -----------
# Without ``--threads`` the runner leaves the pool as the runtime sized it
# on first use. The runtime counts the CPU's *performance* cores: all of
# its cores, less those it knows as efficiency cores (Cortex-A53, A55,
# A510, A520 and Apple's efficiency cores, among others). On a machine
# whose cores are all alike, such as this one, that is every core. The
# Python runtime uses the same thread pool library, sized the same way.

# [start default_threads]
import os

# The line before the last: "median latency: ... ms over 1 runs, N threads"
last_line = run_runner("--iterations", 1)[-2]
default_threads = int(last_line.split(", ")[-1].split()[0])
print(f"{os.cpu_count()} cores here; the runtime's pool has {default_threads} threads")
# [end default_threads]

# sphinx_gallery_start_ignore
from xnnguide.core import machine_hold
from xnnguide.recipe_checks import python_runtime

assert last_line.startswith("median latency: ") and last_line.endswith(" threads"), last_line
# The Python runtime's pool, sized by the same library (in a fresh process: in the build, another recipe
# of this process may have reset this one's).
assert python_runtime.fresh_pool_threads() == default_threads
assert default_threads == os.cpu_count(), (default_threads, os.cpu_count())
facts.record("cores", os.cpu_count())
facts.record("default_threads", default_threads)
# The Python runtime offers no public way to set the count: its public modules name no thread function.
named = python_runtime.thread_function_names()
assert all(name.startswith("_") for name in named), named
facts.record("python_thread_functions", ", ".join(named))

held = machine_hold.pause_other_recipes()  # the other recipes of the build stop while this one times
# sphinx_gallery_end_ignore

# %%
# Speed against threads
# ---------------------
# One image per call, the median of 30 timed calls after the printed run,
# for 1 to 4 threads. Threads beyond the machine's cores (the table's
# header says how many) compete for them, as the threads a pool sized for
# all of a phone's cores puts on its slow ones hold the fast ones back.
# The four counts take turns, five rounds, and each keeps its fastest
# median: other work on the machine slows a round down, never up.

# [start thread_sweep]
RUNS, ROUNDS = 30, 5
median_ms = {}
for _ in range(ROUNDS):
    for threads in (1, 2, 3, 4):
        line = run_runner("--iterations", RUNS, "--threads", threads)[-2]
        assert line.endswith(f"over {RUNS} runs, {threads} threads"), line
        ms = float(line.split()[2])
        median_ms[threads] = min(ms, median_ms.get(threads, ms))
for threads, ms in median_ms.items():
    print(f"{threads} threads: {ms:.2f} ms, {median_ms[1] / ms:.2f}x one thread")
# [end thread_sweep]

# sphinx_gallery_start_ignore
from xnnguide.core import timings

held.release()
hold = facts.record("timing_hold", held.record())
# No claim of an order: on a machine shared with other work, more threads need not be faster. The
# page reads the table, flagged by the load measured meanwhile.
assert all(ms > 0 for ms in median_ms.values()), median_ms
subject = ("MobileNet V2, XNNPACK fp32 .pte, the C++ runner in a thread-count sweep "
           "(fastest of 5 medians of 30)")
timings.record_timing_table(
    "thread_sweep", [f"Threads ({os.cpu_count()} cores)", "Median latency, batch 1", "Against 1 thread"],
    [[str(threads), timings.latency_cell(ms, hold["load"]), timings.speedup_cell(median_ms[1] / ms, hold["load"])]
     for threads, ms in median_ms.items()],
    timed=[{"kind": "latency", "subject": subject, "threads": threads, "batch": 1} for threads in median_ms],
    load=hold["load"],
)
# sphinx_gallery_end_ignore

# %%
# Setting it
# ----------
# In C++ the pool is ExecuTorch's ``get_threadpool()``; the runner resets
# it from its ``--threads`` option before it loads anything
# (``main.cpp`` of :doc:`build_and_run_pte_from_cpp` declares the two thread
# pool functions it calls, whose header the wheel does not ship). These are
# its lines, printed from the file the build above compiled:

import textwrap

cpp_source = Path("cpp_runner/main.cpp").read_text()


def cpp_region(name):
    """The lines of main.cpp between its ``// [start NAME]`` and ``// [end NAME]``."""
    body = cpp_source.split(f"// [start {name}]\n")[1].split(f"// [end {name}]")[0]
    return textwrap.dedent(body).rstrip()


print(cpp_region("cpp-threadpool"))
print("\nint main(int argc, char** argv) {  // ...")
print(textwrap.indent(cpp_region("cpp-threads"), "  "))

# %%
# In Python, ``executorch.runtime`` has no public function for it in this
# release; the experimental ``_unsafe_reset_threadpool(n)`` of
# ``executorch.extension.pybindings.portable_lib`` replaces the pool, before
# any program is loaded, as :doc:`benchmark_xnnpack_speedup` does.
