"""
Profile a .pte run from C++ with ETDump
=======================================

Where does the time of a run go, and which operators run outside XNNPACK,
on which CPU kernels? This recipe builds the runner of
:doc:`build_and_run_pte_from_cpp`, profiles runs of the fp32 MobileNet V2
that recipe lowered with ExecuTorch's ETDump event tracer and reads the
profile with ``executorch.devtools.Inspector``. Then it profiles a small
model that leaves operators outside XNNPACK, and finds the kernel each of
them ran on in the wheel's kernel library.
"""

# %%
# The program
# -----------
# The fp32 MobileNet V2 ``.pte`` that :doc:`build_and_run_pte_from_cpp`
# lowered to XNNPACK (random weights, batch-norm statistics measured on a
# few random images), its example input as raw bytes, and what eager
# PyTorch computed on it, in ``mobilenet_v2_cpp/``: run that recipe first,
# in the same folder. ``write_pte`` lowers a second model below.

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import shared_files
shared_files.ensure("mobilenet_v2_cpp", "build_and_run_pte_from_cpp.py")
# xnnguide_depends_on = build_and_run_pte_from_cpp.py
# sphinx_gallery_end_ignore
import torch
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower

fp32_pte = "mobilenet_v2_cpp/fp32.pte"
input_file = "mobilenet_v2_cpp/input.bin"
eager_outputs = torch.load("mobilenet_v2_cpp/eager_outputs.pt")


def write_pte(module, example_input, path):
    """Export *module*, lower it to XNNPACK and write the program to *path*."""
    lowered = to_edge_transform_and_lower(
        torch.export.export(module, (example_input,)),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )
    with open(path, "wb") as file:
        file.write(lowered.to_executorch().buffer)
    return path


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
configure = [
    *(cmake_exe, "-S", "cpp_runner", "-B", str(build_dir), "-G", "Ninja"),
    f"-DCMAKE_MAKE_PROGRAM={Path(ninja.BIN_DIR) / 'ninja'}",
    f"-DCMAKE_PREFIX_PATH={executorch_dir}",
    "-DCMAKE_BUILD_TYPE=Release",
]
subprocess.run(configure, check=True, capture_output=True)
build = [cmake_exe, "--build", str(build_dir), "--target", "runner"]
subprocess.run(build, check=True, capture_output=True)
runner = build_dir / "runner"


def run_runner(*arguments):
    """Run the runner; return its outputs, read back from what it prints."""
    command = [str(runner), *map(str, arguments)]
    stdout = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    outputs, lines = [], iter(stdout.splitlines())
    for line in lines:  # "output I: DTYPE [SHAPE]", then one value per line
        if line.startswith("output "):
            sizes = line.split("[")[1].rstrip("]").split(",")
            shape = [int(size) for size in sizes if size.strip()]
            values = [float(next(lines)) for _ in range(torch.Size(shape).numel())]
            outputs.append(torch.tensor(values).reshape(shape))
    return outputs


# sphinx_gallery_start_ignore
# A change to the runner's sources runs this recipe again:
# xnnguide_depends_on = cpp_runner/main.cpp cpp_runner/CMakeLists.txt
# sphinx_gallery_end_ignore

# %%
# Profile MobileNet V2
# --------------------
# With ``--etdump FILE.etdp`` the runner gives its ``Module`` an
# ``ETDumpGen`` event tracer and writes what it recorded after the runs.
# ``Inspector`` reads that file in Python. Its events are the delegate calls
# (``DELEGATE_CALL``), the operators XNNPACK ran inside them (recorded by the
# XNNPACK backend itself) and the operators the runtime ran outside XNNPACK
# (``native_call_...``). The program is profiled over five runs, the printed
# one and four timed ones; the table sums the median time of each kind of
# event. The printed output is checked against eager PyTorch first.

# sphinx_gallery_start_ignore
from xnnguide.core import facts, machine_hold

held = machine_hold.pause_other_recipes()  # the other recipes stop while this one times
# sphinx_gallery_end_ignore

# [start cpp_etdump]
from executorch.devtools import Inspector

threads = torch.get_num_threads()
outputs = run_runner(
    fp32_pte,
    *("--input", input_file),
    *("--iterations", 4, "--threads", threads),
    *("--etdump", "mobilenet_v2_cpp_profile.etdp"),
)
eager_output = eager_outputs["fp32"]
torch.testing.assert_close(outputs[0], eager_output, atol=1e-4, rtol=1e-4)

events = Inspector(etdump_path="mobilenet_v2_cpp_profile.etdp").to_dataframe()
events = events[events["event_block_name"] == "Execute"]
events = events.assign(kind=events["event_name"].str.replace(r" #\d+$", "", regex=True))
profile = (
    events.groupby(["kind", "is_delegated_op"])["p50 (ms)"]
    .agg(["count", "sum"])
    .sort_values("sum", ascending=False)
    .reset_index()
)
print(f"{threads} threads, batch 1, five runs")
print(profile.to_string(index=False))
# [end cpp_etdump]

# sphinx_gallery_start_ignore
held.release()
hold = facts.record("timing_hold", held.record())
facts.record("threads", threads, f"{threads} thread{'s' * (threads != 1)}")
assert (profile["kind"] == "DELEGATE_CALL").any() and profile["is_delegated_op"].any(), profile
runs_recorded = {len(raw) for raw in events["raw"]}
assert runs_recorded == {5}, runs_recorded  # the printed run and the four timed ones
mobilenet_outside = sorted(k.removeprefix("native_call_") for k in profile["kind"] if k.startswith("native_call_"))
assert not mobilenet_outside, mobilenet_outside  # the page: MobileNet V2 leaves nothing outside XNNPACK
facts.record("etdump_runs", 5)
calls = int(profile.loc[profile["kind"] == "DELEGATE_CALL", "count"].sum())
facts.record("etdump_delegate_calls", calls, f"{calls} delegate call{'s' * (calls != 1)}")
facts.record("etdump_xnnpack_kinds", int(profile["is_delegated_op"].sum()))
facts.record("etdump_outside_ops", ", ".join(mobilenet_outside) or "no operator")
from xnnguide.core import timings

timings.record_timing_table(
    "etdump_profile",
    ["Event", "Inside XNNPACK", "Events",
     f"Sum of medians ({timings.conditions(threads, 1)})"],
    [[row.kind, "yes" if row.is_delegated_op else "no", int(row.count),
      timings.latency_cell(row.sum, hold["load"], 3)] for row in profile.itertuples()],
    timed=[{"kind": "latency", "subject": f"MobileNet V2 fp32 in the C++ runner, ETDump events {row.kind}",
            "threads": threads, "batch": 1} for row in profile.itertuples()],
    load=hold["load"],
)
# sphinx_gallery_end_ignore

# %%
# Which kernels run outside XNNPACK
# ---------------------------------
# MobileNet V2 leaves nothing outside XNNPACK. A small head that does (a
# comparison, a ``where`` and a cumulative sum, none of which XNNPACK takes,
# after a linear layer it does take) shows the ``native_call_...`` events of
# the operators the runtime ran itself, on a kernel library it links. The
# wheel has one CPU kernel library, ``libexecutorch_kernels_optimized.so``,
# which the Python runtime links too. It holds ExecuTorch's optimized
# kernels, whose functions are named ``opt_...``, and ExecuTorch's portable
# kernels for every other operator. ``nm`` (from binutils, installed with the
# compiler) lists what the library defines; ``ldd`` what the Python
# runtime's extensions link.

# [start cpp_kernels]
import re

import executorch.extension.pybindings.portable_lib as portable_lib


class ClippedCumulativeHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(16, 8)

    def forward(self, x):
        y = self.linear(x)
        return torch.where(y <= 0, torch.zeros_like(y), y).cumsum(dim=1)


head, head_input = ClippedCumulativeHead().eval(), torch.randn(4, 16)
write_pte(head, head_input, "clipped_cumulative_head.pte")
head_input.numpy().tofile("clipped_cumulative_head_input.bin")
head_outputs = run_runner(
    "clipped_cumulative_head.pte",
    *("--input", "clipped_cumulative_head_input.bin"),
    *("--etdump", "clipped_cumulative_head.etdp"),
)
with torch.no_grad():
    torch.testing.assert_close(head_outputs[0], head(head_input), atol=1e-5, rtol=1e-5)
head_events = Inspector(etdump_path="clipped_cumulative_head.etdp").to_dataframe()
outside = sorted(
    {
        name.removeprefix("native_call_")
        for name in head_events["event_name"]
        if name.startswith("native_call_")
    }
)

kernels_library = executorch_dir / "lib" / "libexecutorch_kernels_optimized.so"
nm = ["nm", "-DC", "--defined-only", str(kernels_library)]
symbols = subprocess.run(nm, check=True, capture_output=True, text=True).stdout
optimized = sorted(set(re.findall(r"native::opt_(\w+?)_out\b", symbols)))
portable = sorted(
    set(re.findall(r"native::(?!opt_)(\w+?)_out\(", symbols)) - set(optimized)
)
# The Python runtime's compiled extensions sit beside portable_lib.
extensions = sorted(Path(portable_lib.__file__).parent.glob("*.so"))
linked = []
for extension in extensions:
    ldd = subprocess.run(["ldd", extension], check=True, capture_output=True, text=True)
    for line in ldd.stdout.splitlines():
        if "libexecutorch" in line and line.split()[0] not in linked:
            linked.append(line.split()[0])
print(f"{len(optimized)} optimized kernels: {', '.join(optimized)}")
print(
    f"{len(portable)} other operators, portable kernels: {', '.join(portable[:8])}, ..."
)
print(f"the Python runtime links: {', '.join(linked)}")


def kernel_of(operator):
    """The library function of an operator such as le.Scalar_out: opt_le_scalar_out
    or a portable one."""
    name, overload = operator.split(".")
    short = f"{name}_{overload.removesuffix('out').rstrip('_')}".lower().rstrip("_")
    names = [short, name]
    for candidate in names:
        if candidate in optimized:
            return f"opt_{candidate}_out (optimized)"
    return f"{next(c for c in names if c in portable)}_out (portable)"


for operator in outside:
    print(f"ran outside XNNPACK: {operator} -> {kernel_of(operator)}")
# [end cpp_kernels]

# sphinx_gallery_start_ignore
assert "libexecutorch_kernels_optimized.so" in linked and not any("portable" in n for n in linked), linked
assert len(optimized) > 10 and len(portable) > 100 and "linear" in optimized and "cumsum" in portable
facts.record("optimized_kernel_count", len(optimized))
facts.record("optimized_kernels", ", ".join(optimized))
facts.record("portable_kernel_count", len(portable))
facts.record("python_runtime_libraries", ", ".join(linked))
kinds = {kernel_of(op).endswith("(optimized)") for op in outside}
assert kinds == {True, False}, outside  # at least one optimized and one portable kernel ran
facts.record("head_outside_ops", ", ".join(outside))
facts.record_table("outside_kernels", ["Operator that ran outside XNNPACK",
                                       "Kernel in libexecutorch_kernels_optimized.so"],
                   [[op, kernel_of(op)] for op in outside])
# sphinx_gallery_end_ignore
