"""
Find which XNNPACK kernels ran on which ARM core
================================================

XNNPACK carries several versions of its ARM kernels (plain NEON, the
dot-product instructions, i8mm, SME) and picks among them when a program is
loaded, from the features the CPU reports. A CPU model's name says which
instructions XNNPACK could use, not which it did. This recipe reads the
instruction logs QEMU wrote while
:doc:`run_pte_on_arm_under_qemu` ran the fp32 and int8 MobileNet V2 programs
on four CPU models, and counts, by kernel family, the instructions translated
inside XNNPACK's library.
"""

# %%
# The logs of the emulated runs
# -----------------------------
# The ARM recipe ran its cross-compiled runner once per program and CPU model
# under ``qemu-aarch64 -d in_asm -strace -D LOG``: ``-d in_asm`` writes every
# instruction QEMU translates, with its address and its 32-bit encoding, and
# ``-strace`` every system call, among them where the dynamic loader mapped
# each library. That recipe writes the logs into ``mobilenet_v2_arm/``: run it
# first, in the same folder.

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import shared_files

shared_files.ensure("mobilenet_v2_arm", "run_pte_on_arm_under_qemu.py")
# xnnguide_depends_on = run_pte_on_arm_under_qemu.py
# The logs are those of the runner built from these; a change to one runs both recipes again:
# xnnguide_depends_on = cpp_runner/main.cpp cpp_runner/CMakeLists.txt cpp_runner/aarch64-linux-gnu.cmake
# sphinx_gallery_end_ignore
from pathlib import Path

CPU_MODELS = ["cortex-a53", "neoverse-n1", "max,sme=off", "max"]
PROGRAMS = ["fp32", "int8"]
log_dir = Path("mobilenet_v2_arm")

# %%
# Sort XNNPACK's instructions into kernel families
# ------------------------------------------------
# In ``-strace``'s lines the loader opens ``libexecutorch_backend_xnnpack.so``,
# which holds XNNPACK and all its kernels, and reserves the library's address
# range with an anonymous ``mmap``; every instruction translated inside that
# range is XNNPACK's. Each is sorted by its encoding into a family, the most
# specific first (QEMU 7.2's disassembler prints the newer ones as ``.byte``):
# SME (the encoding space whose bits 31 and 28 to 25 are ``1`` and ``0000``,
# and ``smstart``/``smstop``), SVE (bits 28 to 25 ``0010``, the vector code
# SME's streaming mode runs), i8mm (``smmla``, ``ummla``, ``usmmla``,
# ``usdot``, ``sudot``), dot product (``sdot``, ``udot``), and NEON: any
# other instruction on vector registers. An instruction counts each time QEMU
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
    for name in PROGRAMS:
        log = log_dir / f"qemu-{cpu}-{name}.log"
        kernels[cpu, name] = xnnpack_instructions(log.read_text())
        seen = ", ".join(f"{kind} {kernels[cpu, name][kind]}" for kind in FAMILIES)
        print(f"{cpu:12} {name}: {seen}")
# [end arm_kernels]

# %%
# Each CPU model reached the family it stands for: the int8 program NEON on
# Cortex-A53, dot product on Neoverse N1, i8mm on ``max,sme=off`` and SME on
# ``max``. The fp32 program has no dot-product or i8mm kernels (those are
# integer instructions), so it runs NEON everywhere but on ``max``, where it
# takes SME's. SVE code appears only with SME, in its streaming mode.

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import arm_runs

arm_runs.check_kernel_families(kernels, FAMILIES)
# sphinx_gallery_end_ignore
