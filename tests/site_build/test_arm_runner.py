"""The C++ runner on ARM: cross-built from the page's files with the toolchain file, outside the repository.

``snippets/performance/run_pte_on_arm_under_qemu.py`` builds the runner for aarch64 at site build time and
runs the site's MobileNet V2 programs under QEMU; ``find_which_xnnpack_kernels_ran_on_arm.py`` reads which
kernels those runs took. These tests copy the page's three files (``CMakeLists.txt``,
``main.cpp`` and ``aarch64-linux-gnu.cmake``) into an empty folder, cross-build them against the unpacked
aarch64 wheel, check by its ELF header that the ``runner`` is an aarch64 program, and run a model no recipe
lowers under QEMU against the x86-64 runtime. They need ``make aarch64`` (a set-up step of ``make test``);
without it they fail and say so.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, SNIPPETS, shown_facts, table_rows
from xnnguide.core import facts
from xnnguide.core.records import records_dir
from xnnguide.recipe_checks import elf
from xnnguide.site.timing_sources import one_busy_note

RUNNER_SOURCES = SNIPPETS / "performance" / "cpp_runner"
TOOLCHAIN = "aarch64-linux-gnu.cmake"
RECIPE = "run_pte_on_arm_under_qemu"
KERNELS_RECIPE = "find_which_xnnpack_kernels_ran_on_arm"
SYSROOT = "/usr/aarch64-linux-gnu"


def aarch64_executorch() -> Path:
    """The unpacked aarch64 wheel's ``executorch`` folder: where ``make aarch64`` puts it, or $EXECUTORCH_AARCH64."""
    version = importlib.metadata.version("executorch")
    found = Path(os.environ.get("EXECUTORCH_AARCH64") or ROOT / ".aarch64" / f"executorch-{version}" / "executorch")
    missing = [tool for tool in ("aarch64-linux-gnu-g++", "qemu-aarch64") if shutil.which(tool) is None]
    if not (found / "share" / "cmake" / "executorch-config.cmake").is_file():
        missing.append(str(found))
    assert not missing, f"missing {', '.join(missing)}: run `make aarch64` (a set-up step of `make test`)"
    return found


def cross_build(source: Path, toolchain: Path) -> Path:
    """Configure and build ``runner`` in *source*/build with *toolchain*; return the program."""
    import cmake
    import ninja

    cmake_exe = str(Path(cmake.CMAKE_BIN_DIR) / "cmake")
    build = source / "build"
    subprocess.run([cmake_exe, "-S", str(source), "-B", str(build), "-G", "Ninja",
                    f"-DCMAKE_MAKE_PROGRAM={Path(ninja.BIN_DIR) / 'ninja'}", f"-DCMAKE_TOOLCHAIN_FILE={toolchain}",
                    f"-DCMAKE_PREFIX_PATH={aarch64_executorch()}"], check=True, capture_output=True)
    subprocess.run([cmake_exe, "--build", str(build), "--target", "runner"], check=True, capture_output=True)
    return build / "runner"


def copy_sources(folder: Path) -> Path:
    for name in ("CMakeLists.txt", "main.cpp", TOOLCHAIN):
        shutil.copy(RUNNER_SOURCES / name, folder / name)
    return folder


@pytest.fixture(scope="module")
def arm_runner(tmp_path_factory) -> Path:
    """The runner cross-built from a copy of the page's files, in an empty folder outside the repository."""
    source = copy_sources(tmp_path_factory.mktemp("arm_runner"))
    return cross_build(source, source / TOOLCHAIN)


def test_the_toolchain_file_makes_an_aarch64_runner(arm_runner):
    assert elf.machine(arm_runner) == "aarch64"


def test_a_toolchain_file_without_the_cross_compiler_makes_no_aarch64_runner(tmp_path):
    # The drift the check above guards against: the toolchain file loses its compiler line and CMake falls
    # back to the build machine's c++, whose x86-64 objects do not link against the aarch64 libraries (or,
    # had they linked, would make an x86-64 runner).
    source = copy_sources(tmp_path)
    toolchain = source / TOOLCHAIN
    line = "set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)"
    text = toolchain.read_text(encoding="utf-8")
    assert line in text
    toolchain.write_text(text.replace(line, ""), encoding="utf-8")
    try:
        runner = cross_build(source, toolchain)
    except subprocess.CalledProcessError:
        runner = None
    assert runner is None or elf.machine(runner) != "aarch64", "an aarch64 runner without the cross-compiler"


def test_machine_refuses_a_file_that_is_not_elf(tmp_path):
    text_file = tmp_path / "runner"
    text_file.write_text("#!/bin/sh\n")
    with pytest.raises(ValueError, match="is not an ELF file"):
        elf.machine(text_file)


@pytest.fixture(scope="module")
def held_out_model(tmp_path_factory):
    """A model no recipe lowers (a small convolution, a pooling and a linear layer), in fp32 and int8."""
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (XNNPACKQuantizer,
                                                                          get_symmetric_quantization_config)
    from executorch.backends.xnnpack.utils.configs import get_transform_passes
    from executorch.exir import to_edge_transform_and_lower
    from executorch.runtime import Runtime
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    folder = tmp_path_factory.mktemp("held_out")
    torch.manual_seed(11)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, stride=2), torch.nn.Hardswish(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 7)).eval()
    example = torch.randn(1, 3, 32, 32)
    prepared = prepare_pt2e(torch.export.export(model, (example,)).module(),
                            XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True)))
    for _ in range(4):
        prepared(torch.randn(1, 3, 32, 32))
    programs = {}
    for name, module in (("fp32", model), ("int8", convert_pt2e(prepared))):
        lowered = to_edge_transform_and_lower(torch.export.export(module, (example,)),
                                              transform_passes=get_transform_passes(),
                                              partitioner=[XnnpackPartitioner()]).to_executorch()
        path = folder / f"held_out_{name}.pte"
        path.write_bytes(lowered.buffer)
        x86 = Runtime.get().load_program(str(path)).load_method("forward").execute([example])[0]
        programs[name] = (path, x86)
    example.numpy().tofile(folder / "input.bin")
    with torch.no_grad():
        torch.testing.assert_close(programs["fp32"][1], model(example), atol=1e-5, rtol=1e-5)
    return programs, folder / "input.bin"


@pytest.mark.parametrize("cpu", ["cortex-a53", "neoverse-n1", "max,sme=off"])
def test_a_model_no_recipe_lowers_runs_on_arm_as_on_x86(arm_runner, held_out_model, cpu):
    import torch

    programs, input_file = held_out_model
    for name, (pte, x86) in programs.items():
        done = subprocess.run(["qemu-aarch64", "-L", SYSROOT, "-cpu", cpu, str(arm_runner), str(pte),
                               "--input", str(input_file), "--threads", "1"],
                              capture_output=True, text=True, check=True)
        lines = done.stdout.splitlines()
        start = lines.index("output 0: Float [1, 7]")
        printed = torch.tensor([float(line) for line in lines[start + 1:start + 8]]).reshape(1, 7)
        # fp32 to a rounding error; int8, without SME, the same integers as x86-64 (the page's claim).
        torch.testing.assert_close(printed, x86, atol=1e-5 if name == "fp32" else 0, rtol=0)


@pytest.mark.build
def test_the_page_shows_this_builds_arm_runs(built_site):
    record, kernels = (facts.load(records_dir(ROOT / "docs" / "gallery") / "facts" / f"{name}.json")
                       for name in (RECIPE, KERNELS_RECIPE))
    assert record and kernels, f"{RECIPE} or {KERNELS_RECIPE} recorded no facts: run `make html` first"
    page = built_site / "guides" / "run_pte_from_cpp.html"
    rows = table_rows(page)
    for key, table in (("arm_runs", record["arm_runs"]), ("arm_instructions", kernels["arm_instructions"])):
        # As the page shows them: a busy window's note said once under the table, its timings marked.
        for row in one_busy_note(table["rows"], table.get("about", {}).get("load"))[0]:
            assert row in rows, f"the page lacks the {key} row {row}"
    shown = shown_facts(page)
    for key in ("runner_machine", "qemu_version", "sme_int8_differing", "fp32_worst_error"):
        assert record[key]["display"] in shown, f"the page does not show {RECIPE}/{key}"
    assert record["runner_machine"]["value"] == "aarch64"
