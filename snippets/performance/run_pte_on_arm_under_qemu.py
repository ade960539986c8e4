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
input. QEMU's instruction log shows which kernel family XNNPACK took on each
CPU. The times are those of an emulator and say nothing about ARM speed.
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
from xnnguide.recipe_checks import elf

# A toolchain file that stopped working would leave an x86-64 runner, or none.
assert elf.machine(runner) == "aarch64", f"{runner} is built for {elf.machine(runner)}"
facts.record("runner_machine", elf.machine(runner))
facts.record("cross_build_seconds", build_seconds, f"{build_seconds:.1f} s")
compiler_version = subprocess.run(
    ["aarch64-linux-gnu-g++", "-dumpfullversion"], capture_output=True, text=True
).stdout.strip()
facts.record("cross_compiler", f"aarch64-linux-gnu-g++ {compiler_version}")
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
# translates to the log file of ``-D`` (in the build folder), and
# ``-strace`` the system calls, among them where the dynamic loader mapped
# each library.

# sphinx_gallery_start_ignore
from xnnguide.core import machine_hold

# The other recipes of the build stop while the emulated runs are timed (some 20 s).
held = machine_hold.pause_other_recipes()
# sphinx_gallery_end_ignore

# [start arm_run]
CPU_MODELS = ["cortex-a53", "neoverse-n1", "max,sme=off", "max"]


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
        log = build_dir / f"qemu-{cpu}-{name}.log"
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
held.release()
hold = facts.record("timing_hold", held.record())
assert set(arm_outputs) == {(cpu, name) for cpu in CPU_MODELS for name in programs}
first_qemu = subprocess.run(["qemu-aarch64", "--version"], capture_output=True, text=True)
qemu_version = first_qemu.stdout.split()[2]
facts.record("qemu_version", qemu_version)
# The int8 outputs sit on the grid of the quantum (x86 too), so "differing" counts whole quanta.
grid = x86_outputs["int8"] / quantum
assert (grid - grid.round()).abs().max().item() < 1e-3, "int8 outputs off their quantum grid"
facts.record("int8_quantum", quantum, f"{quantum:.2e}")
FP32_TOLERANCE = 1e-5
fp32_errors, int8_differing, int8_quanta = {}, {}, {}
for cpu in CPU_MODELS:
    fp32_errors[cpu] = (arm_outputs[cpu, "fp32"] - x86_outputs["fp32"]).abs().max().item()
    difference = (arm_outputs[cpu, "int8"] - x86_outputs["int8"]).abs() / quantum
    int8_differing[cpu] = int((difference > 0.5).sum())
    int8_quanta[cpu] = round(difference.max().item())
    # fp32 agrees on every CPU model, SME included, to a float rounding error.
    torch.testing.assert_close(
        arm_outputs[cpu, "fp32"], x86_outputs["fp32"], atol=FP32_TOLERANCE, rtol=0
    )
facts.record("fp32_tolerance", FP32_TOLERANCE, f"{FP32_TOLERANCE:g}")
facts.record(
    "fp32_worst_error",
    max(fp32_errors.values()),
    f"{max(fp32_errors.values()):.1e}",
)
# Without SME the int8 program computes exactly what x86-64 computes.
for cpu in ("cortex-a53", "neoverse-n1", "max,sme=off"):
    assert int8_differing[cpu] == 0, (cpu, int8_differing[cpu], int8_quanta[cpu])
# With SME, under this QEMU, it does not. The page states that finding and its limits; if a QEMU
# release makes this pass (its SME fixes came after 7.2), this assert fails so that the page is reread.
assert int8_differing["max"] > 0, "int8 under SME now agrees with x86: rewrite the page's SME note"
total = int8_difference.numel()
facts.record("int8_elements", total)
facts.record("sme_int8_differing", int8_differing["max"], f"{int8_differing['max']} of {total}")
facts.record("sme_int8_quanta", int8_quanta["max"], f"{int8_quanta['max']} quanta")
sme_error = (arm_outputs["max", "int8"] - x86_outputs["int8"]).abs().max().item()
facts.record("sme_int8_max_abs_error", sme_error, f"{sme_error:.2f}")
sme_sqnr = compute_error(eager_int8, arm_outputs["max", "int8"]).item()
facts.record("sme_int8_sqnr", sme_sqnr, f"{sme_sqnr:.1f} dB")
# Run again, the SME int8 output is the same: the difference is deterministic.
again = subprocess.run(
    ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", "-cpu", "max", str(runner),
     programs["int8"], "--input", input_file, "--threads", "1"],
    check=True, capture_output=True, text=True,
)
assert torch.equal(read_outputs(again.stdout)[0], arm_outputs["max", "int8"])
facts.record("sme_deterministic", "yes")
# sphinx_gallery_end_ignore

# %%
# Which kernels ran
# -----------------
# A CPU model's name says which instructions XNNPACK could use, not which it
# did. The log says: in ``-strace``'s lines the loader opens
# ``libexecutorch_backend_xnnpack.so``, which holds XNNPACK and all its
# kernels, and reserves the library's address range with an anonymous
# ``mmap``; every instruction translated inside that range is XNNPACK's.
# Each is sorted by its encoding into a family, the most specific first
# (QEMU 7.2's disassembler prints the newer ones as ``.byte``): SME (the
# encoding space whose bits 31 and 28 to 25 are ``1`` and ``0000``, and
# ``smstart``/``smstop``), SVE (bits 28 to 25 ``0010``, the vector code SME's
# streaming mode runs), i8mm (``smmla``, ``ummla``, ``usmmla``, ``usdot``,
# ``sudot``), dot product (``sdot``, ``udot``), and NEON: any other
# instruction on vector registers. An instruction counts each time QEMU
# translates the code it is in (usually once), not each time it runs.

# [start arm_kernels]
import re
from collections import Counter


def family(word, text):
    """The kernel family of one aarch64 instruction, from its 32-bit encoding."""
    if word >> 31 and (word >> 25) & 0xF == 0 or word & 0xFFFFF8FF == 0xD503407F:
        return "SME"
    if (word >> 25) & 0xF == 0b0010:
        return "SVE"
    if word & 0xDFE0F400 == 0x4E80A400 or word & 0xBFE0FC00 == 0x0E809C00:
        return "i8mm"  # smmla, ummla, usmmla; usdot (vector)
    if word & 0xBF40F400 == 0x0F00F000:
        return "i8mm"  # usdot, sudot (by element)
    if word & 0xBFE0FC00 in (0x0E809400, 0x2E809400):
        return "dot product"  # sdot, udot (vector)
    if word & 0xBFC0F400 in (0x0F80E000, 0x2F80E000):
        return "dot product"  # sdot, udot (by element)
    if re.search(r"\b[vq]\d+\b|\bv\d+\.", text):
        return "NEON"
    return None


def xnnpack_instructions(log_text):
    """Count, by family, the instructions QEMU translated inside the XNNPACK library."""
    library = r'openat\(.*libexecutorch_backend_xnnpack\.so".*\) = \d+'
    opened = re.search(library, log_text)
    reserved = re.compile(r"mmap\(NULL,(\d+),PROT_NONE,.*\) = (0x[0-9a-f]+)")
    size, base = reserved.search(log_text, opened.end()).groups()
    low, high = int(base, 16), int(base, 16) + int(size)
    counts = Counter()
    line = re.compile(r"^0x([0-9a-f]+):\s+([0-9a-f]{8})\s+(.*)$", re.MULTILINE)
    for address, word, text in line.findall(log_text):
        if low <= int(address, 16) < high:
            counts[family(int(word, 16), text)] += 1
    del counts[None]
    return counts


FAMILIES = ["SME", "SVE", "i8mm", "dot product", "NEON"]
kernels = {}
for cpu in CPU_MODELS:
    for name in programs:
        log = build_dir / f"qemu-{cpu}-{name}.log"
        kernels[cpu, name] = xnnpack_instructions(log.read_text())
        seen = ", ".join(f"{kind} {kernels[cpu, name][kind]}" for kind in FAMILIES)
        print(f"{cpu:12} {name}: {seen}")
# [end arm_kernels]

# sphinx_gallery_start_ignore
ORDER = ["SME", "i8mm", "dot product", "NEON"]


def top_family(counts):
    """The most specific family the run reached: what the table names."""
    return next(kind for kind in ORDER if counts[kind] > 0)


# What each model is on the page for, checked against what ran (int8; fp32 has no dot-product
# or i8mm kernels, so it runs NEON without SME).
EXPECTED = {"cortex-a53": "NEON", "neoverse-n1": "dot product", "max,sme=off": "i8mm", "max": "SME"}
for cpu, expected in EXPECTED.items():
    assert top_family(kernels[cpu, "int8"]) == expected, (cpu, kernels[cpu, "int8"])
    assert top_family(kernels[cpu, "fp32"]) == ("SME" if cpu == "max" else "NEON"), (
        cpu, kernels[cpu, "fp32"])
# Cortex-A53 reached no instruction beyond NEON; SVE only with SME, in its streaming mode.
assert not any(kernels["cortex-a53", name][kind] for name in programs for kind in FAMILIES[:4])
for cpu in ("cortex-a53", "neoverse-n1", "max,sme=off"):
    assert not any(kernels[cpu, name]["SVE"] + kernels[cpu, name]["SME"] for name in programs)


def family_cell(counts):
    kind = top_family(counts)
    return f"{kind} ({counts[kind]} instructions)"


from xnnguide.core import timings


def emulated_seconds(cpu, name):  # seconds of QEMU on the build's x86-64 machine, not of an ARM CPU
    busy = timings.busy_note(hold["load"])
    return f"{seconds[cpu, name]:.1f} s" + (f" ({busy})" if busy else "")


timings.record_timing_table(
    "arm_runs",
    ["QEMU CPU model", "Kernel family seen (int8 / fp32)", "fp32 max abs error",
     "int8 elements differing", "Emulated run, whole process (fp32 / int8; batch 1, 1 thread)"],
    [
        [
            f"-cpu {cpu}",
            f"{family_cell(kernels[cpu, 'int8'])} / {family_cell(kernels[cpu, 'fp32'])}",
            f"{fp32_errors[cpu]:.1e}",
            f"{int8_differing[cpu]} of {total}"
            + (f", up to {int8_quanta[cpu]} quanta" if int8_differing[cpu] else ""),
            f"{emulated_seconds(cpu, 'fp32')} / {emulated_seconds(cpu, 'int8')}",
        ]
        for cpu in CPU_MODELS
    ],
    timed=[{"kind": "latency", "subject": f"the C++ runner under qemu-aarch64 -cpu {cpu}, {name} .pte, "
            "whole emulated process", "threads": 1, "batch": 1} for cpu in CPU_MODELS for name in programs],
    load=hold["load"],
)
facts.record_table(
    "arm_instructions",
    ["QEMU CPU model", "Program", *FAMILIES],
    [[f"-cpu {cpu}", name, *(str(kernels[cpu, name][kind]) for kind in FAMILIES)]
     for cpu in CPU_MODELS for name in programs],
)
for cpu in CPU_MODELS:
    key = cpu.replace("-", "_").replace(",", "_").replace("=", "_")
    facts.record(f"{key}_int8_family", top_family(kernels[cpu, "int8"]))
facts.record("sme_fp32_instructions", kernels["max", "fp32"]["SME"])
facts.record("sme_int8_instructions", kernels["max", "int8"]["SME"])
# sphinx_gallery_end_ignore
