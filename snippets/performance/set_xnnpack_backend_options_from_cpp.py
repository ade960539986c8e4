"""
Set XNNPACK's runtime backend options from C++
==============================================

The XNNPACK backend takes two options at run time that matter when one
process loads several programs: a weight cache and workspace sharing. This
recipe builds the runner of :doc:`build_and_run_pte_from_cpp`, loads the
fp32 MobileNet V2 that recipe lowered twice in one process under each
setting, and measures what the options change: load time and resident
memory.
"""

# %%
# The program
# -----------
# The fp32 MobileNet V2 ``.pte`` that :doc:`build_and_run_pte_from_cpp`
# lowered to XNNPACK (random weights, batch-norm statistics measured on a
# few random images): a model whose weights are large enough for a second
# packed copy of them to show in the process's resident memory. That
# recipe writes it into ``mobilenet_v2_cpp/``: run it first, in the same folder.

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks import shared_files
shared_files.ensure("mobilenet_v2_cpp", "build_and_run_pte_from_cpp.py")
# xnnguide_depends_on = build_and_run_pte_from_cpp.py
# sphinx_gallery_end_ignore
import torch

fp32_pte = "mobilenet_v2_cpp/fp32.pte"
eager_outputs = torch.load("mobilenet_v2_cpp/eager_outputs.pt")

# %%
# The runner
# ----------
# Built with CMake and Ninja from PyPI against the installed
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
# The C++ that sets them
# ----------------------
# A backend's options go to it by name: a ``BackendOptions`` holds the
# key-value pairs and ``executorch::runtime::set_option`` hands them to the
# backend registered as ``XnnpackBackend``; ``get_option`` reads them back.
# These are the lines of the runner's ``main.cpp`` that do it, printed from
# the file the build above compiled; ``main()`` calls ``set_xnnpack_options``
# before it loads any program.

import textwrap

cpp_source = Path("cpp_runner/main.cpp").read_text()


def cpp_region(name):
    """The lines of main.cpp between its ``// [start NAME]`` and ``// [end NAME]``."""
    body = cpp_source.split(f"// [start {name}]\n")[1].split(f"// [end {name}]")[0]
    return textwrap.dedent(body).rstrip()


print(cpp_region("cpp-backend-options"))
print("\nint main(int argc, char** argv) {  // ...")
print(textwrap.indent(cpp_region("cpp-set-options"), "  "))

# %%
# Two copies under each setting
# -----------------------------
# ``weight_cache_enabled`` (a bool) lets delegates share the weights XNNPACK
# has packed; ``workspace_sharing_mode`` (0 disabled, 1 per program, 2
# global) lets the delegates of one program, or of all programs, share one
# workspace for their intermediate tensors. The runner sets them before it
# loads anything (``--weight-cache on|off``, ``--workspace-sharing 0|1|2``)
# and prints the values the backend reports back. ``--copies 2`` loads the
# fp32 program twice, as two independent programs, each with its own load
# time and the resident memory after it; ``--iterations 10`` then runs the
# two copies in turn. Each copy's first output is checked against eager
# PyTorch.

# sphinx_gallery_start_ignore
from xnnguide.core import facts, machine_hold

held = (
    machine_hold.pause_other_recipes()
)  # the load times below: the other recipes of the build stop while this one loads
# sphinx_gallery_end_ignore

# [start cpp_options]
settings = {
    "defaults": [],
    "weight cache on": ["--weight-cache", "on"],
    "workspace sharing 0": ["--workspace-sharing", "0"],
    "workspace sharing 1": ["--workspace-sharing", "1"],
}
threads = torch.get_num_threads()
eager_output = eager_outputs["fp32_on_ones"]  # the runner's input: ones


def number(line):
    return float(line.split(":", 1)[1].split()[0])


option_runs = {}
for name, flags in settings.items():
    lines = subprocess.run(
        [
            str(runner),
            fp32_pte,
            "--copies",
            "2",
            "--iterations",
            "10",
            "--threads",
            str(threads),
            *flags,
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    start = lines.index("output 0: Float [1, 1000]") + 1
    output = torch.tensor(
        [float(value) for value in lines[start : start + 1000]]
    ).reshape(1, 1000)
    torch.testing.assert_close(output, eager_output, atol=1e-4, rtol=1e-4)
    loads = [line for line in lines if line.startswith("load ")]
    option_runs[name] = {
        "options": [
            line.removeprefix("xnnpack ")
            for line in lines
            if line.startswith("xnnpack ")
        ],
        "first load ms": float(loads[0].split(": ")[1].split()[0]),
        "second load ms": float(loads[1].split(": ")[1].split()[0]),
        "resident after loading MiB": float(loads[1].split("resident ")[1].split()[0]),
        "resident after running MiB": number(
            next(line for line in lines if line.startswith("resident after"))
        ),
    }
for name, run in option_runs.items():
    print(
        f"{name:22} {', '.join(run['options'])}: second load "
        f"{run['second load ms']:.1f} ms, "
        f"{run['resident after loading MiB']:.1f} MiB loaded, "
        f"{run['resident after running MiB']:.1f} MiB after running"
    )
# [end cpp_options]

# sphinx_gallery_start_ignore
held.release()
hold = facts.record("timing_hold", held.record())
facts.record("threads", threads, f"{threads} thread{'s' * (threads != 1)}")
defaults, cached = option_runs["defaults"], option_runs["weight cache on"]
# What the backend reports it was set to: each flag reached it.
assert defaults["options"] == ["weight_cache_enabled: 0", "workspace_sharing_mode: 2"], defaults["options"]
assert cached["options"][0] == "weight_cache_enabled: 1"
assert option_runs["workspace sharing 0"]["options"][1] == "workspace_sharing_mode: 0"
assert option_runs["workspace sharing 1"]["options"][1] == "workspace_sharing_mode: 1"
# Memory is what the options change, and memory does not depend on the machine's load.
after_running = {name: run["resident after running MiB"] for name, run in option_runs.items()}
weights_saved = defaults["resident after loading MiB"] - cached["resident after loading MiB"]
workspace_saved = after_running["workspace sharing 0"] - after_running["defaults"]
per_program_saved = after_running["workspace sharing 0"] - after_running["workspace sharing 1"]
assert weights_saved > 5, f"the weight cache saved {weights_saved:.1f} MiB only"
assert workspace_saved > 1, f"global workspace sharing saved {workspace_saved:.1f} MiB only"
facts.record("default_options", ", ".join(defaults["options"]))
facts.record("weights_saved_mib", weights_saved, f"{weights_saved:.1f} MiB")
facts.record("workspace_saved_mib", workspace_saved, f"{workspace_saved:.1f} MiB")
facts.record("per_program_saved_mib", abs(per_program_saved), f"{abs(per_program_saved):.1f} MiB")
from xnnguide.core import timings

for key, run, setting in (("cached_second_load_ms", cached, "weight cache on"),
                          ("default_second_load_ms", defaults, "default options")):
    timings.record_latency(key, run["second load ms"], threads=threads, batch=None, load=hold["load"], digits=1,
                           subject=f"loading a second copy of the MobileNet V2 fp32 .pte in C++, {setting}")
conditions = timings.conditions(threads, None)
timings.record_timing_table(
    "backend_options",
    ["Setting (two copies of the fp32 program)", "Options the backend reports", f"First load ({conditions})",
     f"Second load ({conditions})", "Resident after both loads", "Resident after running"],
    [[name, ", ".join(run["options"]), timings.latency_cell(run["first load ms"], hold["load"], 1),
      timings.latency_cell(run["second load ms"], hold["load"], 1), f"{run['resident after loading MiB']:.1f} MiB",
      f"{run['resident after running MiB']:.1f} MiB"] for name, run in option_runs.items()],
    timed=[{"kind": "latency", "subject": f"loading the MobileNet V2 fp32 .pte in C++, {which}, {name}",
            "threads": threads, "batch": None}
           for name in option_runs for which in ("first copy", "second copy")],
    load=hold["load"],
)
# sphinx_gallery_end_ignore

# %%
# The keys the backend knows
# --------------------------
# The option keys are strings in the backend's shared library, which the
# wheel ships under ``executorch/lib``: the two set above, and two more that
# write packed weights to a file for a later process.

# [start cpp_option_keys]
backend_library = (
    executorch_dir / "lib" / "libexecutorch_backend_xnnpack.so"
).read_bytes()
option_keys = [
    key
    for key in (
        "weight_cache_enabled",
        "workspace_sharing_mode",
        "packed_cache_path",
        "save_weight_cache_on_disk",
    )
    if b"\0" + key.encode() + b"\0" in backend_library
]
print("option keys in the library:", ", ".join(option_keys))
# [end cpp_option_keys]

# sphinx_gallery_start_ignore
assert option_keys[:2] == ["weight_cache_enabled", "workspace_sharing_mode"], option_keys
facts.record("xnnpack_option_keys", ", ".join(option_keys))
# sphinx_gallery_end_ignore
