"""
Run a .pte from C++
===================

A ``.pte`` file is made to be run by a C++ program. This recipe builds one,
the small runner in ``cpp_runner/`` next to it (``main.cpp`` and
``CMakeLists.txt``), against the C++ runtime that the ``executorch`` wheel
ships, with CMake and Ninja from PyPI and the system's C++ compiler. It
lowers MobileNet V2 to XNNPACK in fp32 and in int8, runs both programs with
the runner, reads the values the runner prints, and compares them with eager
PyTorch at an explicit tolerance. Last it times the same program from C++,
from the Python runtime and in eager PyTorch. The how-to page
:doc:`/guides/run_pte_from_cpp` walks through the C++ side.
"""

# %%
# The model, in fp32 and int8
# ---------------------------
# The same MobileNet V2 as in :doc:`/gallery/lowering/lower_mobilenet_v2_fp32`
# (random weights, batch-norm statistics measured on random images so that
# the outputs are not vanishingly small), lowered to XNNPACK once in fp32 and
# once quantized to int8 with the XNNPACK quantizer as in
# :doc:`/gallery/quantization/quantize_mobilenet_v2_int8_static`.

# [gallery-only cpp_model]
# [start cpp_model]
import torch
import torchvision
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
from torchao.quantization.utils import compute_error

torch.manual_seed(0)
model = torchvision.models.mobilenet_v2(weights=None)
batch_norms = [module for module in model.modules() if isinstance(module, torch.nn.BatchNorm2d)]
for batch_norm in batch_norms:
    batch_norm.reset_running_stats()
    batch_norm.momentum = None  # a plain average over the batches below
model.train()
with torch.no_grad():
    for _ in range(4):
        model(torch.randn(8, 3, 224, 224))
for batch_norm in batch_norms:
    batch_norm.momentum = 0.1
model.eval()

example_inputs = (torch.randn(1, 3, 224, 224),)

exported = torch.export.export(model, example_inputs)
quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))
prepared = prepare_pt2e(exported.module(), quantizer)
with torch.no_grad():
    for _ in range(8):  # calibration
        prepared(torch.randn(1, 3, 224, 224))
quantized_model = convert_pt2e(prepared)


def lower_to_pte(exported_program, path):
    edge_program = to_edge_transform_and_lower(
        exported_program,
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )
    with open(path, "wb") as file:
        file.write(edge_program.to_executorch().buffer)


lower_to_pte(exported, "mobilenet_v2_cpp_fp32.pte")
lower_to_pte(torch.export.export(quantized_model, example_inputs), "mobilenet_v2_cpp_int8.pte")
# [end cpp_model]

# %%
# Build the runner
# ----------------
# ``find_package(executorch)`` finds the wheel's CMake package through
# ``CMAKE_PREFIX_PATH``: the folder of the installed ``executorch`` package,
# which holds ``share/cmake/executorch-config.cmake``, the headers under
# ``include/`` and the shared libraries under ``lib/``. Its imported targets
# need CMake 3.28 or newer; ``pip install cmake ninja`` provides both tools,
# and their Python packages say where the executables are. The compiler is
# the system's. The build folder is kept, so a second build compiles only
# what changed.

# [start cpp_build]
import importlib.util
import shutil
import subprocess
import time
from pathlib import Path

import cmake
import ninja

compiler = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
if compiler is None:
    raise SystemExit("error: no C++ compiler found (c++, g++ or clang++); install one, e.g. apt-get install g++")

executorch_dir = Path(importlib.util.find_spec("executorch").submodule_search_locations[0])
assert (executorch_dir / "share" / "cmake" / "executorch-config.cmake").is_file()

cmake_exe = str(Path(cmake.CMAKE_BIN_DIR) / "cmake")
source_dir, build_dir = Path("cpp_runner"), Path("cpp_runner") / "build"
configure = [cmake_exe, "-S", str(source_dir), "-B", str(build_dir), "-G", "Ninja",
             f"-DCMAKE_MAKE_PROGRAM={Path(ninja.BIN_DIR) / 'ninja'}",
             f"-DCMAKE_CXX_COMPILER={compiler}",
             f"-DCMAKE_PREFIX_PATH={executorch_dir}", "-DCMAKE_BUILD_TYPE=Release"]
build = [cmake_exe, "--build", str(build_dir)]

start = time.perf_counter()
subprocess.run(configure, check=True, capture_output=True, text=True)
configure_seconds = time.perf_counter() - start
start = time.perf_counter()
build_log = subprocess.run(build, check=True, capture_output=True, text=True).stdout
build_seconds = time.perf_counter() - start
runner = build_dir / "runner"
print(build_log.strip())
print(f"configured in {configure_seconds:.1f} s, built in {build_seconds:.1f} s: {runner}")
# [end cpp_build]

# sphinx_gallery_start_ignore
import hashlib
import re
import shlex

from xnnguide.recipe_checks import facts, quantization

assert runner.is_file()
compiled = len(re.findall(r"Building CXX object", build_log))
site_packages = str(executorch_dir.parent)


def shell(command):
    """A command as a reader types it: tools by name, the wheel's folder by role."""
    words = [Path(word).name if word in (cmake_exe, compiler) else word for word in command]
    words = [word.replace(str(Path(ninja.BIN_DIR) / "ninja"), "ninja").replace(site_packages, "$SITE_PACKAGES")
             for word in words]
    return shlex.join(words).replace("'", "")


facts.record("configure_command", shell(configure))
facts.record("build_command", shell(build))
facts.record("configure_seconds", configure_seconds, f"{configure_seconds:.1f} s")
facts.record("build_seconds", build_seconds, f"{build_seconds:.1f} s")
facts.record("compiled_files", compiled)
# What a first build costs: the same two commands in an empty build folder.
import tempfile

with tempfile.TemporaryDirectory() as cold_dir:
    cold_configure = [cold_dir if word == str(build_dir) else word for word in configure]
    start = time.perf_counter()
    subprocess.run(cold_configure, check=True, capture_output=True)
    cold_configure_seconds = time.perf_counter() - start
    start = time.perf_counter()
    subprocess.run([cmake_exe, "--build", cold_dir], check=True, capture_output=True)
    cold_build_seconds = time.perf_counter() - start
facts.record("cold_configure_seconds", cold_configure_seconds, f"{cold_configure_seconds:.1f} s")
facts.record("cold_build_seconds", cold_build_seconds, f"{cold_build_seconds:.1f} s")
assert cold_build_seconds < 60, f"a cold build of the runner took {cold_build_seconds:.0f} s"
facts.record("compiler", Path(compiler).name)
cmake_version = subprocess.run([cmake_exe, "--version"], capture_output=True, text=True).stdout.split()[2]
facts.record("cmake_version", cmake_version)
# A change to the runner's sources runs this recipe again:
# xnnguide_depends_on = cpp_runner/main.cpp cpp_runner/CMakeLists.txt
# The sources this run compiled; tests/test_cpp_runner.py compares them with the checkout.
for source_file in ("main.cpp", "CMakeLists.txt"):
    digest = hashlib.sha256((source_dir / source_file).read_bytes()).hexdigest()
    facts.record(source_file.replace(".", "_").lower() + "_sha256", digest)
# sphinx_gallery_end_ignore

# %%
# Run it and compare with eager PyTorch
# -------------------------------------
# Without ``--input`` the runner fills every input with ones, in the shape
# and dtype the program's metadata gives. With ``--input FILE.bin`` it reads
# the raw bytes of one input per file: a tensor's ``numpy().tobytes()``. It
# prints each output as a line ``output I: DTYPE [SHAPE]`` followed by one
# value per line, at full precision, which is all a script needs to parse.
# fp32 runs on ones; int8 on this recipe's example input, and is checked
# against the quantized eager model it was lowered from by the SQNR of its
# output, in dB, as :doc:`/gallery/quantization/quantize_mobilenet_v2_int8_static`
# explains (int8 arithmetic lands values near a rounding boundary one step apart).

# [start cpp_run]
def run_runner(*arguments):
    """Run the runner; return its outputs as tensors."""
    stdout = subprocess.run([str(runner), *arguments], check=True, capture_output=True, text=True).stdout
    outputs, lines = [], iter(stdout.splitlines())
    for line in lines:
        if line.startswith("output "):
            shape = [int(size) for size in line.split("[")[1].rstrip("]").split(",") if size.strip()]
            count = 1
            for size in shape:
                count *= size
            values = [float(next(lines)) for _ in range(count)]
            outputs.append(torch.tensor(values).reshape(shape))
    return outputs, stdout


ones = torch.ones(1, 3, 224, 224)
fp32_outputs, fp32_stdout = run_runner("mobilenet_v2_cpp_fp32.pte")
with torch.no_grad():
    fp32_eager = model(ones)
torch.testing.assert_close(fp32_outputs[0], fp32_eager, atol=1e-4, rtol=1e-4)

example_inputs[0].numpy().tofile("mobilenet_v2_cpp_input.bin")
int8_outputs, int8_stdout = run_runner("mobilenet_v2_cpp_int8.pte", "--input", "mobilenet_v2_cpp_input.bin")
with torch.no_grad():
    int8_eager = quantized_model(*example_inputs)
MIN_SQNR_DB = 10.0  # the int8 .pte against its int8 eager model
int8_sqnr = compute_error(int8_eager, int8_outputs[0]).item()
assert int8_sqnr >= MIN_SQNR_DB, f"SQNR {int8_sqnr:.1f} dB against quantized eager"

print("\n".join(fp32_stdout.splitlines()[:4]), "...", sep="\n")
fp32_error = (fp32_outputs[0] - fp32_eager).abs().max().item()
int8_error = (int8_outputs[0] - int8_eager).abs().max().item()
print(f"fp32: max abs error against eager {fp32_error:.2e} (tolerance 1e-4)")
print(f"int8: SQNR against quantized eager {int8_sqnr:.1f} dB (at least {MIN_SQNR_DB:g} dB), "
      f"max abs error {int8_error:.3f}")
# [end cpp_run]

# sphinx_gallery_start_ignore
# The runner's lines are what was compared: one header and 1000 values.
assert fp32_stdout.splitlines()[0] == "output 0: Float [1, 1000]", fp32_stdout.splitlines()[0]
assert len(fp32_stdout.splitlines()) == 1001 and len(fp32_outputs) == 1
# Full precision: each value is its float32 in 9 significant digits (max_digits10), which reads back exactly.
assert all(f"{float(torch.tensor(float(text), dtype=torch.float32)):.9g}" == text
           for text in fp32_stdout.splitlines()[1:])
assert fp32_eager.abs().max().item() > 0.1, "outputs too small for atol=1e-4 to mean anything"
facts.record("fp32_command", "./runner mobilenet_v2_cpp_fp32.pte")
facts.record("int8_command", "./runner mobilenet_v2_cpp_int8.pte --input mobilenet_v2_cpp_input.bin")
facts.record("fp32_header", fp32_stdout.splitlines()[0])
facts.record("fp32_first_value", fp32_stdout.splitlines()[1])
facts.record("fp32_eager_first_value", repr(fp32_eager[0, 0].item()))
facts.record("fp32_max_abs_error", fp32_error, f"{fp32_error:.1e}")
facts.record("fp32_tolerance", 1e-4, "1e-4")
facts.record("output_scale", fp32_eager.abs().max().item(), f"{fp32_eager.abs().max().item():.2f}")
facts.record("int8_max_abs_error", int8_error, f"{int8_error:.3f}")
facts.record("int8_sqnr", int8_sqnr, f"{int8_sqnr:.1f} dB")
quantization.record_min_sqnr(MIN_SQNR_DB)
facts.record("output_lines", len(fp32_stdout.splitlines()))
facts.record_table(
    "runs",
    ["Program", "Input", "First printed line", "Max abs error", "Tolerance"],
    [
        ["fp32", "ones (no input file)", fp32_stdout.splitlines()[0],
         f"{fp32_error:.1e} against eager", "1e-4 (and rtol 1e-4)"],
        ["int8", "the example input, from a file", int8_stdout.splitlines()[0],
         f"{int8_error:.3f} against quantized eager",
         f"SQNR {int8_sqnr:.1f} dB, at least {MIN_SQNR_DB:g} dB"],
    ],
)
facts.record_table("fp32_transcript", ["./runner mobilenet_v2_cpp_fp32.pte"],
                   [[line] for line in fp32_stdout.splitlines()[:4]]
                   + [[f"({len(fp32_stdout.splitlines()) - 4} more lines)"]])
# sphinx_gallery_end_ignore

# %%
# Native latency
# --------------
# ``--iterations N`` runs the method N more times after the printed run and
# prints the median latency; ``--threads T`` sizes ExecuTorch's thread pool,
# which XNNPACK runs on. The same fp32 program is timed from Python on the
# ExecuTorch runtime, and the model in eager PyTorch, each with as many
# threads as PyTorch uses here and the same number of timed calls.

# [start cpp_latency]
import statistics

from executorch.runtime import Runtime

threads = torch.get_num_threads()
runs = 30
timed = subprocess.run([str(runner), "mobilenet_v2_cpp_fp32.pte", "--iterations", str(runs),
                        "--threads", str(threads)], check=True, capture_output=True, text=True).stdout
latency_line = timed.splitlines()[-1]
cpp_ms = float(latency_line.split()[2])


def median_ms(call):
    call()  # warm-up
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


method = Runtime.get().load_program("mobilenet_v2_cpp_fp32.pte").load_method("forward")
python_ms = median_ms(lambda: method.execute([ones]))
with torch.no_grad():
    eager_ms = median_ms(lambda: model(ones))
print(latency_line)
print(f"C++ runner {cpp_ms:.2f} ms, Python runtime {python_ms:.2f} ms, eager PyTorch {eager_ms:.2f} ms "
      f"({threads} threads, median of {runs})")
# [end cpp_latency]

# sphinx_gallery_start_ignore
# Its latency table needs the machine to itself: run alone, not side by side.
# sphinx_gallery_parallel = False
assert latency_line.startswith("median latency: ") and f"over {runs} runs, {threads} threads" in latency_line
assert cpp_ms > 0 and python_ms > 0 and eager_ms > 0
facts.record("latency_line", latency_line)
facts.record("threads", threads)
facts.record("cpp_ms", cpp_ms, f"{cpp_ms:.2f} ms")
facts.record("python_ms", python_ms, f"{python_ms:.2f} ms")
facts.record("eager_ms", eager_ms, f"{eager_ms:.2f} ms")
facts.record_table(
    "latency",
    ["MobileNet V2 fp32, one image", "Median latency", "Against the C++ runner"],
    [
        ["C++ runner (XNNPACK .pte)", f"{cpp_ms:.2f} ms", "1.00×"],
        ["Python runtime (same .pte)", f"{python_ms:.2f} ms", f"{python_ms / cpp_ms:.2f}×"],
        ["eager PyTorch", f"{eager_ms:.2f} ms", f"{eager_ms / cpp_ms:.2f}×"],
    ],
)
# A bad path: one line on stderr, a non-zero exit, nothing on stdout.
missing = subprocess.run([str(runner), "no_such_model.pte"], capture_output=True, text=True)
assert missing.returncode != 0 and missing.stdout == "" and len(missing.stderr.splitlines()) == 1, missing
facts.record("missing_file_error", missing.stderr.strip())
facts.record("missing_file_status", missing.returncode)
# sphinx_gallery_end_ignore
