"""
Run the same .pte on XNNPACK's ARM kernels, under QEMU
======================================================

The programs on this site are lowered and run on an x86-64 machine, but a
phone has an ARM CPU, on which XNNPACK runs other kernels: plain NEON,
dot-product, i8mm or SME code, chosen when the program is loaded from what
the CPU reports. This recipe cross-compiles the C++ runner of
:doc:`/guides/run_pte_from_cpp` for 64-bit ARM Linux (aarch64), against the
runtime of the aarch64 build of the same ``executorch`` wheel, runs an fp32
and an int8 MobileNet V2 with it under QEMU's user-mode emulator on four CPU
models, and compares every output with the x86-64 runtime's on the same
input. The instruction logs of these runs say which kernels XNNPACK took on
each CPU model: :doc:`find_which_xnnpack_kernels_ran_on_arm` reads them. The
times are those of an emulator and say nothing about ARM speed.
"""

# %%
# Two programs, lowered on this machine
# -------------------------------------
# The fp32 and int8 MobileNet V2 programs that
# :doc:`/gallery/performance/build_and_run_pte_from_cpp` lowered to XNNPACK
# (random weights, batch-norm statistics measured on a few random images,
# PT2E static quantization for the int8 one), with its example input and
# what eager PyTorch computed on it. The same ``.pte`` files are what the
# ARM runner is given: a program does not depend on the CPU that will run it.
# That recipe writes them into ``mobilenet_v2_cpp/``: run it first, in the
# same folder.

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import shared_files
shared_files.ensure("mobilenet_v2_cpp", "build_and_run_pte_from_cpp.py")
# xnnguide_depends_on = build_and_run_pte_from_cpp.py
# sphinx_gallery_end_ignore
import torch

programs = {"fp32": "mobilenet_v2_cpp/fp32.pte", "int8": "mobilenet_v2_cpp/int8.pte"}
input_file = "mobilenet_v2_cpp/input.bin"
eager_outputs = torch.load("mobilenet_v2_cpp/eager_outputs.pt")
example_input = eager_outputs["input"]  # input.bin holds its bytes

# %%
# What x86-64 computes
# --------------------
# The reference for every ARM run is the same ``.pte`` on the x86-64 runtime
# of the installed wheel, on the same input. Each program is checked against
# eager PyTorch first: the fp32 one at an explicit tolerance, the int8 one
# by its signal-to-quantization-noise ratio against the quantized eager
# model, which simulates int8 in float arithmetic.

from executorch.runtime import Runtime
from torchao.quantization.utils import compute_error

runtime = Runtime.get()
x86_outputs = {
    name: runtime.load_program(path).load_method("forward").execute([example_input])[0]
    for name, path in programs.items()
}
eager_fp32 = eager_outputs["fp32"]
eager_int8 = eager_outputs["int8"]
torch.testing.assert_close(x86_outputs["fp32"], eager_fp32, atol=1e-4, rtol=1e-4)
int8_sqnr = compute_error(eager_int8, x86_outputs["int8"]).item()
assert int8_sqnr >= 10.0, f"SQNR {int8_sqnr:.1f} dB against the quantized eager model"

# sphinx_gallery_start_ignore
from xnnguide.core import facts

assert eager_fp32.abs().max().item() > 0.1, "outputs too small for the tolerances"
facts.record("x86_int8_sqnr", int8_sqnr, f"{int8_sqnr:.1f} dB")
# sphinx_gallery_end_ignore

# %%
# The tools and the aarch64 runtime
# ---------------------------------
# Three things, none of which this script downloads: a cross-compiler
# (Debian's ``g++-aarch64-linux-gnu``, with ``libc6-arm64-cross`` and
# ``libstdc++-12-dev-arm64-cross``), QEMU's user-mode emulator
# (``qemu-user``, which provides ``qemu-aarch64``), and the aarch64 build of
# the ``executorch`` wheel, unpacked rather than installed, since it cannot
# run on this machine::
#
#     pip download --no-deps --only-binary=:all: --python-version 3.11 \
#         --platform manylinux_2_28_aarch64 -d wheels executorch==1.5.1
#     python -m zipfile -e wheels/executorch-1.5.1-*.whl executorch-aarch64
#
# Its ``executorch`` folder holds the same headers and CMake package as the
# installed wheel, and aarch64 builds of the same libraries. The variable
# ``EXECUTORCH_AARCH64`` names that folder (the code below falls back to
# ``executorch-aarch64/executorch``, where the two commands above put it).

# [start arm_tools]
import os
import shutil
from pathlib import Path

aarch64_executorch = Path(
    os.environ.get("EXECUTORCH_AARCH64", "executorch-aarch64/executorch")
)
tools = ["aarch64-linux-gnu-g++", "qemu-aarch64"]
missing = [tool for tool in tools if shutil.which(tool) is None]
if not (aarch64_executorch / "share" / "cmake" / "executorch-config.cmake").is_file():
    missing.append(f"the unpacked aarch64 executorch wheel ({aarch64_executorch})")
if missing:
    raise SystemExit(f"error: missing {', '.join(missing)}; see the set-up above")
# [end arm_tools]

# sphinx_gallery_start_ignore
# Where these are missing, the build does not run this recipe and the execution ledger says why:
# xnnguide_requires = aarch64-linux-gnu-g++ qemu-aarch64 $EXECUTORCH_AARCH64/share/cmake/executorch-config.cmake
# xnnguide_setup = make aarch64
# sphinx_gallery_end_ignore

# %%
# Cross-compile the runner
# ------------------------
# The runner's ``CMakeLists.txt`` and ``main.cpp`` are those of
# :doc:`build_and_run_pte_from_cpp`, unchanged.
# What makes the build an aarch64 one is a toolchain file,
# ``cpp_runner/aarch64-linux-gnu.cmake``: the target system, the
# cross-compiler, and where ``find_package`` may look. ``CMAKE_PREFIX_PATH``
# points at the aarch64 runtime instead of the installed wheel. Only
# ``runner`` is built.

# [start arm_build]
import subprocess
import time

import cmake
import ninja

cmake_exe = str(Path(cmake.CMAKE_BIN_DIR) / "cmake")
build_dir = Path("cpp_runner") / "build-aarch64"
toolchain_file = Path("cpp_runner", "aarch64-linux-gnu.cmake").resolve()
shutil.rmtree(build_dir, ignore_errors=True)
start = time.perf_counter()
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
        f"-DCMAKE_TOOLCHAIN_FILE={toolchain_file}",
        f"-DCMAKE_PREFIX_PATH={aarch64_executorch}",
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
build_seconds = time.perf_counter() - start
runner = build_dir / "runner"
print(f"cross-compiled {runner} in {build_seconds:.1f} s")
# [end arm_build]

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import arm_runs

arm_runs.record_cross_build(runner, build_seconds)
# A change to the runner's sources or the toolchain file runs this recipe again:
# xnnguide_depends_on = cpp_runner/main.cpp cpp_runner/CMakeLists.txt cpp_runner/aarch64-linux-gnu.cmake
# sphinx_gallery_end_ignore

# %%
# Run it under QEMU, on four CPU models
# -------------------------------------
# ``qemu-aarch64`` runs an aarch64 Linux program on this machine, translating
# its instructions; ``-L`` names the folder of the aarch64 C library, and
# ``-cpu`` the CPU it emulates, which decides the features the program sees
# (XNNPACK reads them from the kernel's hardware capabilities). Each model is
# chosen because XNNPACK takes a different family of kernels on it:
# Cortex-A53 has NEON only, Neoverse N1 adds the dot-product instructions,
# QEMU's ``max`` adds i8mm (8-bit matrix multiply) and SME (the Scalable
# Matrix Extension), and ``max,sme=off`` is ``max`` without SME. The CPU is
# named on every run: QEMU's default is ``max``. One thread, so that each
# run is one sequence of kernels. ``-d in_asm`` writes every instruction QEMU
# translates to the log file of ``-D``, and ``-strace`` the system calls,
# among them where the dynamic loader mapped each library: the logs go into
# ``mobilenet_v2_arm/``, where the kernels recipe reads them.

# sphinx_gallery_start_ignore
from xnnguide.core import machine_hold

# The other recipes of the build stop while the emulated runs are timed (some 20 s).
held = machine_hold.pause_other_recipes()
# sphinx_gallery_end_ignore

# [start arm_run]
CPU_MODELS = ["cortex-a53", "neoverse-n1", "max,sme=off", "max"]
log_dir = Path("mobilenet_v2_arm")
log_dir.mkdir(exist_ok=True)


def read_outputs(stdout):
    """The tensors the runner printed: ``output I: DTYPE [SHAPE]``, then values."""
    outputs, lines = [], iter(stdout.splitlines())
    for line in lines:
        if line.startswith("output "):
            shape = [int(size) for size in line.split("[")[1].rstrip("]").split(",")]
            values = [float(next(lines)) for _ in range(torch.Size(shape).numel())]
            outputs.append(torch.tensor(values).reshape(shape))
    return outputs


arm_outputs, seconds = {}, {}
for cpu in CPU_MODELS:
    for name, path in programs.items():
        command = ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", "-cpu", cpu]
        log = log_dir / f"qemu-{cpu}-{name}.log"
        command += ["-d", "in_asm", "-strace", "-D", str(log)]
        command += [str(runner), path, "--input", input_file]
        start = time.perf_counter()
        done = subprocess.run(
            [*command, "--threads", "1"], check=True, capture_output=True, text=True
        )
        seconds[cpu, name] = time.perf_counter() - start
        arm_outputs[cpu, name] = read_outputs(done.stdout)[0]

# The int8 program's outputs are multiples of one quantum, its output scale,
# saved with the programs.
quantum = eager_outputs["int8_quantum"]
for cpu in CPU_MODELS:
    fp32_error = (arm_outputs[cpu, "fp32"] - x86_outputs["fp32"]).abs().max().item()
    int8_difference = (arm_outputs[cpu, "int8"] - x86_outputs["int8"]).abs()
    differing = int((int8_difference > quantum / 2).sum())
    quanta = int8_difference.max() / quantum
    print(
        f"{cpu:12} fp32: max abs error {fp32_error:.1e}   int8: {differing} of "
        f"{int8_difference.numel()} differ, by up to {quanta:.0f} quanta"
    )
# [end arm_run]

# sphinx_gallery_start_ignore
from xnnguide.core import timings
from xnnguide.recipe_checks import shared_files

held.release()
hold = facts.record("timing_hold", held.record())
compared = arm_runs.check_arm_outputs(arm_outputs, x86_outputs, eager_int8, quantum, CPU_MODELS)
# Run again, the SME int8 output is the same: the difference is deterministic.
again = subprocess.run(["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", "-cpu", "max", str(runner),
                        programs["int8"], "--input", input_file, "--threads", "1"],
                       check=True, capture_output=True, text=True)
assert torch.equal(read_outputs(again.stdout)[0], arm_outputs["max", "int8"])
facts.record("sme_deterministic", "yes")


def emulated_seconds(cpu, name):  # seconds of QEMU on the build's x86-64 machine, not of an ARM CPU
    busy = timings.busy_note(hold["load"])
    return f"{seconds[cpu, name]:.1f} s" + (f" ({busy})" if busy else "")


timings.record_timing_table(
    "arm_runs",
    ["QEMU CPU model", "fp32 max abs error", "int8 elements differing",
     "Emulated run, whole process (fp32 / int8; batch 1, 1 thread)"],
    [[f"-cpu {cpu}", *compared[cpu], f"{emulated_seconds(cpu, 'fp32')} / {emulated_seconds(cpu, 'int8')}"]
     for cpu in CPU_MODELS],
    timed=[{"kind": "latency", "subject": f"the C++ runner under qemu-aarch64 -cpu {cpu}, {name} .pte, "
            "whole emulated process", "threads": 1, "batch": 1} for cpu in CPU_MODELS for name in programs],
    load=hold["load"],
)
shared_files.mark(log_dir, "run_pte_on_arm_under_qemu.py")
# sphinx_gallery_end_ignore
