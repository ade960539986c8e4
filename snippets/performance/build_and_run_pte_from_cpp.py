"""
Build a C++ runner and run a .pte with it
=========================================

A ``.pte`` file is made to be run by a C++ program. This recipe exports
MobileNet V2 to two programs, fp32 and int8, compiles the small runner in
``cpp_runner/`` next to it (``main.cpp`` and ``CMakeLists.txt``) against the
C++ runtime that the ``executorch`` wheel ships, runs both programs with it
and checks what it prints against eager PyTorch and the Python runtime. It
ends with the failure of a runner linked without the XNNPACK backend. The
how-to page :doc:`/guides/run_pte_from_cpp` walks through the C++ side; the
other recipes of this section time, tune and profile the same runner.
"""

# %%
# Two programs to run
# -------------------
# MobileNet V2 with random weights (nothing is downloaded) whose batch-norm
# layers have measured their statistics on a few random images, so that its
# outputs are not vanishingly small. It is lowered twice: in fp32, and after
# PT2E static quantization to int8, which a few random images calibrate
# (:doc:`/gallery/quantization/quantize_mobilenet_v2_int8_static` explains
# each step). The runner only needs the two ``.pte`` files.

from pathlib import Path

import torch
import torchvision
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    XNNPACKQuantizer, get_symmetric_quantization_config)
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e


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
model = calibrate_batchnorm(torchvision.models.mobilenet_v2(weights=None))
example_input = torch.randn(1, 3, 224, 224)

captured = torch.export.export(model, (example_input,)).module()
quantizer = XNNPACKQuantizer()
quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True))
# Its QAT-only patterns match nothing in inference mode; tracing them takes seconds.
quantizer.SUPPORTED_PATTERNS = [p for p in quantizer.SUPPORTED_PATTERNS if not p.is_qat]
prepared = prepare_pt2e(captured, quantizer)
with torch.no_grad():
    for _ in range(4):  # calibration: the observers record value ranges
        prepared(torch.randn(1, 3, 224, 224))
quantized_model = convert_pt2e(prepared)


def write_pte(module, path):
    lowered = to_edge_transform_and_lower(
        torch.export.export(module, (example_input,)),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )
    path.write_bytes(lowered.to_executorch().buffer)
    return path


folder = Path("mobilenet_v2_cpp")
folder.mkdir(exist_ok=True)
fp32_pte = write_pte(model, folder / "fp32.pte")
int8_pte = write_pte(quantized_model, folder / "int8.pte")
with torch.no_grad():  # what the other recipes of this section check their runs against
    eager = {"input": example_input, "fp32_on_ones": model(torch.ones(1, 3, 224, 224)),
             "fp32": model(example_input), "int8": quantized_model(example_input),
             "int8_quantum": list(quantized_model.graph.nodes)[-1].args[0][0].args[1]}
torch.save(eager, folder / "eager_outputs.pt")

# %%
# Build the runner
# ----------------
# ``find_package(executorch)`` finds the wheel's CMake package through
# ``CMAKE_PREFIX_PATH``: the folder of the installed ``executorch`` package,
# which holds ``share/cmake/executorch-config.cmake``, the headers under
# ``include/`` and the shared libraries under ``lib/``. Its imported targets
# need CMake 3.28 or newer; ``pip install cmake ninja`` provides both tools,
# and their Python packages say where the executables are. The compiler is
# the system's. The build starts from an empty folder, so the times below
# are those of a first build: ``main.cpp`` is compiled once and linked into
# two programs, ``runner`` and ``runner_without_xnnpack``.

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
    raise SystemExit("error: no C++ compiler found (c++, g++, clang++): install g++")

executorch_spec = importlib.util.find_spec("executorch")
executorch_dir = Path(executorch_spec.submodule_search_locations[0])
assert (executorch_dir / "share" / "cmake" / "executorch-config.cmake").is_file()

cmake_exe = str(Path(cmake.CMAKE_BIN_DIR) / "cmake")
source_dir, build_dir = Path("cpp_runner"), Path("cpp_runner") / "build"
shutil.rmtree(build_dir, ignore_errors=True)
configure = [
    *(cmake_exe, "-S", str(source_dir), "-B", str(build_dir), "-G", "Ninja"),
    f"-DCMAKE_MAKE_PROGRAM={Path(ninja.BIN_DIR) / 'ninja'}",
    f"-DCMAKE_CXX_COMPILER={compiler}",
    f"-DCMAKE_PREFIX_PATH={executorch_dir}",
    "-DCMAKE_BUILD_TYPE=Release",
]
build = [cmake_exe, "--build", str(build_dir)]

start = time.perf_counter()
subprocess.run(configure, check=True, capture_output=True, text=True)
configure_seconds = time.perf_counter() - start
start = time.perf_counter()
build_log = subprocess.run(build, check=True, capture_output=True, text=True).stdout
build_seconds = time.perf_counter() - start
runner = build_dir / "runner"
print(build_log.strip())
print(f"configured in {configure_seconds:.1f} s, built in {build_seconds:.1f} s")
# [end cpp_build]

# sphinx_gallery_start_ignore
import re
from xnnguide.core import facts, machine_load
from xnnguide.recipe_checks import cpp_runner, quantization

assert runner.is_file() and (build_dir / "runner_without_xnnpack").is_file()
compiled = len(re.findall(r"Building CXX object", build_log))
assert compiled == 1, build_log  # main.cpp, once for both programs
assert build_seconds < 120, f"a first build of the runner took {build_seconds:.0f} s"  # on a shared machine
facts.record("cold_configure_seconds", configure_seconds, f"{configure_seconds:.1f} s")
facts.record("cold_build_seconds", build_seconds, f"{build_seconds:.1f} s")
facts.record("compiled_files", compiled)
facts.record("compiler", Path(compiler).name)
facts.record_table("build_log", ["What the first build printed"], [[line] for line in build_log.strip().splitlines()])
cpp_runner.record_build(configure, build, cmake_exe=cmake_exe, source_dir=source_dir,
                        programs={cmake_exe: "cmake", compiler: Path(compiler).name},
                        paths={str(Path(ninja.BIN_DIR) / "ninja"): "ninja", str(executorch_dir.parent): "$SITE_PACKAGES"})
# xnnguide_depends_on = cpp_runner/main.cpp cpp_runner/CMakeLists.txt

run_window = machine_load.watch()  # the transcript shows a load time: say how busy the machine was
# sphinx_gallery_end_ignore

# %%
# Run it and compare
# ------------------
# Without ``--input`` the runner fills every input with ones, in the shape
# and dtype the program's metadata gives. With ``--input FILE.bin`` it reads
# the raw bytes of one input per file: a tensor's ``numpy().tofile()``. It
# first prints the XNNPACK backend's options and, for each program it loads,
# the load time and the process's resident memory; then each output as a
# line ``output I: DTYPE [SHAPE]`` followed by one value per line, at full
# precision, which is all a script needs to parse. The fp32 program runs on
# ones and is checked against eager PyTorch. The int8 program runs on the
# example input and is checked against the same ``.pte`` run by the Python
# runtime, which is the question here: does C++ compute what Python
# computes? Its distance from the quantized eager model, as a
# signal-to-quantization-noise ratio, is checked too.

# [start cpp_run]
from executorch.runtime import Runtime
from torchao.quantization.utils import compute_error


def run_runner(*arguments, program=runner):
    """Run a runner program; return its outputs as tensors, and what it printed."""
    command = [str(program), *map(str, arguments)]
    stdout = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    outputs, lines = [], iter(stdout.splitlines())
    for line in lines:
        if line.startswith("output "):
            sizes = line.split("[")[1].rstrip("]").split(",")
            shape = [int(size) for size in sizes if size.strip()]
            values = [float(next(lines)) for _ in range(torch.Size(shape).numel())]
            outputs.append(torch.tensor(values).reshape(shape))
    return outputs, stdout


MIN_SQNR_DB = 10.0  # the int8 program against the quantized eager model it came from
fp32_outputs, fp32_stdout = run_runner(fp32_pte)
fp32_eager = eager["fp32_on_ones"]  # the runner's input: ones
torch.testing.assert_close(fp32_outputs[0], fp32_eager, atol=1e-4, rtol=1e-4)

input_file = folder / "input.bin"
example_input.numpy().tofile(input_file)
int8_outputs, int8_stdout = run_runner(int8_pte, "--input", input_file)
int8_program = Runtime.get().load_program(int8_pte)
int8_python = int8_program.load_method("forward").execute([example_input])[0]
torch.testing.assert_close(int8_outputs[0], int8_python, atol=1e-6, rtol=0)
int8_sqnr = compute_error(eager["int8"], int8_outputs[0]).item()
assert int8_sqnr >= MIN_SQNR_DB, f"SQNR {int8_sqnr:.1f} dB vs the quantized eager model"

print("\n".join(fp32_stdout.splitlines()[:6]), "...", sep="\n")
fp32_error = (fp32_outputs[0] - fp32_eager).abs().max().item()
int8_error = (int8_outputs[0] - int8_python).abs().max().item()
print(f"fp32: max abs error against eager PyTorch {fp32_error:.2e} (tolerance 1e-4)")
print(f"int8: max abs difference from the Python runtime {int8_error:.2e} (atol 1e-6),")
print(f"SQNR vs the quantized eager model {int8_sqnr:.1f} dB (min {MIN_SQNR_DB:g} dB)")
# [end cpp_run]

# sphinx_gallery_start_ignore
fp32_lines = fp32_stdout.splitlines()
header_index = next(i for i, line in enumerate(fp32_lines) if line.startswith("output 0: "))
fp32_header, value_lines = fp32_lines[header_index], fp32_lines[header_index + 1 : header_index + 1001]
assert fp32_header == "output 0: Float [1, 1000]" and len(fp32_outputs) == 1 and len(value_lines) == 1000
cpp_runner.assert_full_precision(value_lines)  # the page: values printed at full precision
assert fp32_eager.abs().max().item() > 0.1, "outputs too small for atol=1e-4 to mean anything"
int8_header = next(line for line in int8_stdout.splitlines() if line.startswith("output 0: "))
facts.record("fp32_command", f"./runner {fp32_pte}")
facts.record("int8_command", f"./runner {int8_pte} --input {input_file}")
facts.record("fp32_header", fp32_header)
facts.record("fp32_first_value", value_lines[0])
facts.record("fp32_eager_first_value", repr(fp32_eager[0, 0].item()))
facts.record("fp32_max_abs_error", fp32_error, f"{fp32_error:.1e}")
facts.record("fp32_tolerance", 1e-4, "1e-4")
facts.record("output_scale", fp32_eager.abs().max().item(), f"{fp32_eager.abs().max().item():.2f}")
facts.record("int8_max_abs_error", int8_error, f"{int8_error:.1e}")
facts.record("int8_tolerance", 1e-6, "1e-6")
facts.record("int8_sqnr", int8_sqnr, f"{int8_sqnr:.1f} dB")
# the site's one floor, recorded as min_sqnr_db
quantization.record_min_sqnr(MIN_SQNR_DB)
facts.record_table("runs", ["Program", "Input", "First printed output line", "Max abs difference",
                            "Tolerance (atol)"], [
    ["fp32", "ones (no input file)", fp32_header, f"{fp32_error:.1e} from eager PyTorch", "1e-4 (and rtol 1e-4)"],
    ["int8", "the example input, from a file", int8_header, f"{int8_error:.1e} from the Python runtime", "1e-6"]])
cpp_runner.record_transcript(f"./runner {fp32_pte}", fp32_lines, header_index + 3, run_window.close())
# sphinx_gallery_end_ignore

# %%
# A file that does not exist
# --------------------------
# The runner checks the path before the runtime opens it, so that a wrong
# path is one line on standard error and a non-zero exit status, with
# nothing on standard output for a script to misread.

# [start cpp_missing_file]
missing = subprocess.run([runner, "no_such_model.pte"], capture_output=True, text=True)
print(f"exit status {missing.returncode}: {missing.stderr.strip()}")
# [end cpp_missing_file]

# sphinx_gallery_start_ignore
assert missing.returncode != 0 and missing.stdout == "" and len(missing.stderr.splitlines()) == 1, missing
facts.record("missing_file_error", missing.stderr.strip())
facts.record("missing_file_status", missing.returncode)
# sphinx_gallery_end_ignore

# %%
# Troubleshooting: a program built without the XNNPACK backend
# ------------------------------------------------------------
# ``runner_without_xnnpack`` is the same ``main.cpp`` linked without
# ``executorch::backend_xnnpack``. The program file loads, but its method
# does not: the runtime logs which backend is missing on standard error.

# [start cpp_missing_backend]
without_xnnpack = [str(build_dir / "runner_without_xnnpack"), str(fp32_pte)]
failed = subprocess.run(without_xnnpack, capture_output=True, text=True)
stderr_lines = failed.stderr.splitlines()
runtime_message = next(line for line in stderr_lines if "not registered" in line)
print(f"exit status {failed.returncode}")
print(runtime_message)
# [end cpp_missing_backend]

# sphinx_gallery_start_ignore
assert failed.returncode == 1 and "XnnpackBackend" in runtime_message, failed.stderr
assert "xnnpack: backend not registered" in failed.stdout
facts.record("missing_backend_status", failed.returncode)
facts.record("missing_backend_message", runtime_message.split("] ", 1)[1])
facts.record("missing_backend_log_line", runtime_message)
facts.record("missing_backend_runner_error", failed.stderr.strip().splitlines()[-1])
from xnnguide.recipe_checks import shared_files

shared_files.mark(folder, "build_and_run_pte_from_cpp.py")
# sphinx_gallery_end_ignore
