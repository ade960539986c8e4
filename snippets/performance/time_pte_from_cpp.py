"""
Time a .pte from C++ and from Python
====================================

How long does one MobileNet V2 image take when a C++ program runs the
``.pte``, and what does Python add? This recipe builds the runner of
:doc:`build_and_run_pte_from_cpp` and times the fp32 program that recipe
lowered with it, then times the same ``.pte`` on the Python runtime, with
the same threads and number of timed calls, one after the other.
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

fp32_pte = "mobilenet_v2_cpp/fp32.pte"
eager_outputs = torch.load("mobilenet_v2_cpp/eager_outputs.pt")
ones = torch.ones(1, 3, 224, 224)  # the runner's input when it is given no input file

# %%
# The runner
# ----------
# Configured and built with CMake and Ninja from PyPI against the installed
# ``executorch`` package, in the build folder of
# :doc:`build_and_run_pte_from_cpp`, ``cpp_runner/build``: after that recipe
# CMake only checks the configuration and Ninja finds the runner up to date.

import importlib.util
import subprocess
from pathlib import Path

import cmake
import ninja

executorch_dir = Path(
    importlib.util.find_spec("executorch").submodule_search_locations[0]
)
cmake_exe = str(Path(cmake.CMAKE_BIN_DIR) / "cmake")
build_dir = Path("cpp_runner") / "build"
subprocess.run(
    [
        cmake_exe,
        "-S",
        "cpp_runner",
        "-B",
        str(build_dir),
        "-G",
        "Ninja",
        f"-DCMAKE_MAKE_PROGRAM={Path(ninja.BIN_DIR) / 'ninja'}",
        f"-DCMAKE_PREFIX_PATH={executorch_dir}",
        "-DCMAKE_BUILD_TYPE=Release",
    ],
    check=True,
    capture_output=True,
)
subprocess.run(
    [cmake_exe, "--build", str(build_dir), "--target", "runner"],
    check=True,
    capture_output=True,
)
runner = build_dir / "runner"

# sphinx_gallery_start_ignore
# A change to the runner's sources runs this recipe again:
# xnnguide_depends_on = cpp_runner/main.cpp cpp_runner/CMakeLists.txt
# sphinx_gallery_end_ignore

# %%
# Does the C++ runner compute the model?
# --------------------------------------
# Before timing it: the runner prints each output as a line ``output I:
# DTYPE [SHAPE]`` and one value per line, which is read back and compared
# with eager PyTorch on the same input, a tensor of ones.

printed = subprocess.run(
    [str(runner), fp32_pte], check=True, capture_output=True, text=True
).stdout.splitlines()
start = printed.index("output 0: Float [1, 1000]") + 1
cpp_output = torch.tensor(
    [float(value) for value in printed[start : start + 1000]]
).reshape(1, 1000)
eager_output = eager_outputs["fp32_on_ones"]
torch.testing.assert_close(cpp_output, eager_output, atol=1e-4, rtol=1e-4)

# %%
# Time it from C++ and from Python
# --------------------------------
# ``--iterations N`` runs the method N more times after the printed run and
# prints the median latency; ``--threads T`` sizes ExecuTorch's thread pool,
# which XNNPACK runs on. The same fp32 program is then timed from Python on
# the ExecuTorch runtime, with as many threads (the Python runtime's pool
# has one thread per core by default, as PyTorch's does here) and the same
# number of timed calls, one image per call. Eager PyTorch is timed for the
# whole site by :doc:`benchmark_xnnpack_speedup`.

# sphinx_gallery_start_ignore
from xnnguide.core import facts, machine_hold

held = machine_hold.pause_other_recipes()  # the other recipes of the build stop while this one times
# sphinx_gallery_end_ignore

# [start cpp_latency]
import statistics
import time

from executorch.runtime import Runtime

threads = torch.get_num_threads()
runs = 20
timed = subprocess.run(
    [str(runner), fp32_pte, "--iterations", str(runs), "--threads", str(threads)],
    check=True,
    capture_output=True,
    text=True,
).stdout
latency_line = next(
    line for line in timed.splitlines() if line.startswith("median latency: ")
)
cpp_ms = float(latency_line.split()[2])


def median_ms(call):
    call()  # warm-up
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


method = Runtime.get().load_program(fp32_pte).load_method("forward")
python_ms = median_ms(lambda: method.execute([ones]))
print(latency_line)
print(
    f"C++ runner {cpp_ms:.2f} ms, Python runtime {python_ms:.2f} ms "
    f"({threads} threads, batch 1, median of {runs})"
)
# [end cpp_latency]

# sphinx_gallery_start_ignore
held.release()
hold = facts.record("timing_hold", held.record())
assert (
    latency_line.startswith("median latency: ")
    and f"over {runs} runs, {threads} threads" in latency_line
)
assert cpp_ms > 0 and python_ms > 0
from xnnguide.core import timings
from xnnguide.recipe_checks import python_runtime

# The Python runtime's pool has the threads the runner was given, so the two compare.
assert python_runtime.pool_threads() == threads, (python_runtime.pool_threads(), threads)
facts.record("latency_line", latency_line)
facts.record("threads", threads, f"{threads} thread{'s' * (threads != 1)}")
facts.record("runs", runs)
timings.record_latency(
    "cpp_ms",
    cpp_ms,
    subject="MobileNet V2, XNNPACK fp32 .pte from the C++ runner",
    threads=threads,
    batch=1,
    load=hold["load"],
)
# The Python runtime's own figure is the benchmark's to quote (one source per
# quantity); this recipe's is the ratio, taken in one window with the runner's.
timings.record_speedup(
    "cpp_speedup",
    python_ms / cpp_ms,
    subject="MobileNet V2 XNNPACK fp32 .pte, the C++ runner against the Python runtime",
    threads=threads,
    batch=1,
    load=hold["load"],
)
# sphinx_gallery_end_ignore
