"""The checks and records of the two ARM recipes of ``snippets/performance/``, one call each from their hidden blocks.

``run_pte_on_arm_under_qemu.py`` cross-builds the C++ runner and runs the MobileNet V2 programs under QEMU on four
CPU models (:func:`record_cross_build`, :func:`check_arm_outputs`); ``find_which_xnnpack_kernels_ran_on_arm.py``
reads the instruction logs of those runs (:func:`check_kernel_families`). Each function asserts what the pages
claim of the runs and records the figures they show.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from xnnguide.core import facts
from xnnguide.recipe_checks import elf

if TYPE_CHECKING:  # the kernels recipe reads logs only: it need not import torch
    import torch

#: The largest difference the pages allow between an fp32 output on ARM and on x86-64.
FP32_TOLERANCE = 1e-5
#: The CPU models on which int8 computes x86-64's exact integers (all but ``max``, which has SME).
WITHOUT_SME = ("cortex-a53", "neoverse-n1", "max,sme=off")
#: Kernel families, the most specific first: the one a table names for a run is the first it reached.
FAMILY_ORDER = ("SME", "i8mm", "dot product", "NEON")
#: What each CPU model is on the pages for: the most specific family its int8 run reaches.
EXPECTED_INT8_FAMILY = {"cortex-a53": "NEON", "neoverse-n1": "dot product", "max,sme=off": "i8mm", "max": "SME"}


def record_cross_build(runner: Path, build_seconds: float) -> None:
    """Assert that *runner* is an aarch64 program (a toolchain file that stopped working leaves an x86-64 one, or
    none) and record it, the build's seconds and the cross-compiler's version."""
    found = elf.machine(runner)
    assert found == "aarch64", f"{runner} is built for {found}"
    facts.record("runner_machine", found)
    facts.record("cross_build_seconds", build_seconds, f"{build_seconds:.1f} s")
    version = subprocess.run(["aarch64-linux-gnu-g++", "-dumpfullversion"], capture_output=True, text=True,
                             check=True).stdout.strip()
    facts.record("cross_compiler", f"aarch64-linux-gnu-g++ {version}")


def check_arm_outputs(arm_outputs: Mapping[tuple[str, str], torch.Tensor], x86_outputs: Mapping[str, torch.Tensor],
                      eager_int8: torch.Tensor, quantum: float, cpu_models: Sequence[str]) -> dict[str, list[str]]:
    """Assert the pages' claims on the ARM outputs and record their figures; return, per CPU model, the cells the
    runs table shows (fp32 max abs error, int8 elements differing).

    fp32 agrees with x86-64 on every CPU model to :data:`FP32_TOLERANCE`; int8 gives x86-64's exact integers
    without SME and differs with it, under this QEMU (if a QEMU release makes SME agree, the assert fails so
    that the page's SME note is reread).
    """
    import torch
    from torchao.quantization.utils import compute_error

    assert set(arm_outputs) == {(cpu, name) for cpu in cpu_models for name in x86_outputs}
    qemu = subprocess.run(["qemu-aarch64", "--version"], capture_output=True, text=True, check=True)
    facts.record("qemu_version", qemu.stdout.split()[2])
    # The int8 outputs sit on the grid of the quantum (x86 too), so "differing" counts whole quanta.
    grid = x86_outputs["int8"] / quantum
    assert (grid - grid.round()).abs().max().item() < 1e-3, "int8 outputs off their quantum grid"
    facts.record("int8_quantum", quantum, f"{quantum:.2e}")
    total = x86_outputs["int8"].numel()
    cells, fp32_errors, int8_differing, int8_quanta = {}, {}, {}, {}
    for cpu in cpu_models:
        torch.testing.assert_close(arm_outputs[cpu, "fp32"], x86_outputs["fp32"], atol=FP32_TOLERANCE, rtol=0)
        fp32_errors[cpu] = (arm_outputs[cpu, "fp32"] - x86_outputs["fp32"]).abs().max().item()
        difference = (arm_outputs[cpu, "int8"] - x86_outputs["int8"]).abs() / quantum
        int8_differing[cpu] = int((difference > 0.5).sum())
        int8_quanta[cpu] = round(difference.max().item())
        cells[cpu] = [f"{fp32_errors[cpu]:.1e}", f"{int8_differing[cpu]} of {total}"
                      + (f", up to {int8_quanta[cpu]} quanta" if int8_differing[cpu] else "")]
    facts.record("fp32_tolerance", FP32_TOLERANCE, f"{FP32_TOLERANCE:g}")
    worst = max(fp32_errors.values())
    facts.record("fp32_worst_error", worst, f"{worst:.1e}")
    for cpu in WITHOUT_SME:
        assert int8_differing[cpu] == 0, (cpu, int8_differing[cpu], int8_quanta[cpu])
    # QEMU fixed defects of its SME emulation after 7.2: when a release makes this agree, the page is reread.
    assert int8_differing["max"] > 0, "int8 under SME now agrees with x86: rewrite the page's SME note"
    facts.record("int8_elements", total)
    facts.record("sme_int8_differing", int8_differing["max"], f"{int8_differing['max']} of {total}")
    facts.record("sme_int8_quanta", int8_quanta["max"], f"{int8_quanta['max']} quanta")
    sme_error = (arm_outputs["max", "int8"] - x86_outputs["int8"]).abs().max().item()
    facts.record("sme_int8_max_abs_error", sme_error, f"{sme_error:.2f}")
    sme_sqnr = compute_error(eager_int8, arm_outputs["max", "int8"]).item()
    facts.record("sme_int8_sqnr", sme_sqnr, f"{sme_sqnr:.1f} dB")
    return cells


def top_family(counts: Mapping[str, int]) -> str:
    """The most specific kernel family a run reached: what the tables name."""
    return next(kind for kind in FAMILY_ORDER if counts[kind] > 0)


def check_kernel_families(kernels: Mapping[tuple[str, str], Mapping[str, int]], families: Sequence[str]) -> None:
    """Assert that each CPU model's runs reached the kernel family the pages say (int8: the model's reason to be
    on the page; fp32, which has no dot-product or i8mm kernels: NEON, or SME on ``max``), and record the table
    of instruction counts and each model's int8 family."""
    cpu_models = list(EXPECTED_INT8_FAMILY)
    programs = ("fp32", "int8")
    assert set(kernels) == {(cpu, name) for cpu in cpu_models for name in programs}, sorted(kernels)
    for cpu, expected in EXPECTED_INT8_FAMILY.items():
        assert top_family(kernels[cpu, "int8"]) == expected, (cpu, kernels[cpu, "int8"])
        assert top_family(kernels[cpu, "fp32"]) == ("SME" if cpu == "max" else "NEON"), (cpu, kernels[cpu, "fp32"])
    # Cortex-A53 reached no instruction beyond NEON; SVE only with SME, in its streaming mode.
    assert not any(kernels["cortex-a53", name][kind] for name in programs for kind in families if kind != "NEON")
    for cpu in WITHOUT_SME:
        assert not any(kernels[cpu, name]["SVE"] + kernels[cpu, name]["SME"] for name in programs)
    facts.record_table(
        "arm_instructions",
        ["QEMU CPU model", "Program", "Kernel family", *families],
        [[f"-cpu {cpu}", name, top_family(kernels[cpu, name]), *(str(kernels[cpu, name][kind]) for kind in families)]
         for cpu in cpu_models for name in programs],
    )
    for cpu in cpu_models:
        key = cpu.replace("-", "_").replace(",", "_").replace("=", "_")
        facts.record(f"{key}_int8_family", top_family(kernels[cpu, "int8"]))
    facts.record("sme_fp32_instructions", kernels["max", "fp32"]["SME"])
    facts.record("sme_int8_instructions", kernels["max", "int8"]["SME"])
