"""
Link the XNNPACK backend so that it registers
=============================================

The XNNPACK backend registers itself with the runtime from a static
initializer in its library; the program that runs a ``.pte`` never calls
it. A linker that drops libraries nothing calls drops the backend too, and
the ``.pte`` then fails to load with "Backend XnnpackBackend is not
registered". This recipe links the C++ runner of
:doc:`build_and_run_pte_from_cpp` by hand against the wheel's libraries,
once the way a linker drops the backend and once with the fix, and runs
both; then does the same with a static archive, as an app build links
one, of a stand-in backend. The how-to page :doc:`/guides/run_on_device`
walks through it.
"""

# %%
# A small program to run
# ----------------------
# A two-layer convolutional network, lowered to XNNPACK in fp32.

import torch
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 8, 3),
    torch.nn.ReLU(),
    torch.nn.Flatten(),
    torch.nn.Linear(8 * 14 * 14, 10),
).eval()
ones = torch.ones(1, 3, 16, 16)  # the runner's input when it is given no input file
lowered = to_edge_transform_and_lower(
    torch.export.export(model, (ones,)),
    transform_passes=get_transform_passes(),
    partitioner=[XnnpackPartitioner()],
)
pte = "small_cnn_link.pte"
with open(pte, "wb") as file:
    file.write(lowered.to_executorch().buffer)

# %%
# Compile the runner once
# -----------------------
# The wheel's CMake package would do this for us, and keeps the backend
# (see the end of this page); an app's own build system often links by
# hand, with the compiler, the wheel's headers and the definitions its
# libraries were built with.

# [gallery-only compile_runner]
# [start compile_runner]
import importlib.util
import shutil
import subprocess
from pathlib import Path

executorch_dir = Path(
    importlib.util.find_spec("executorch").submodule_search_locations[0]
)
include = executorch_dir / "include"
lib = executorch_dir / "lib"
compiler = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
build_dir = Path("cpp_runner") / "build-link"
build_dir.mkdir(parents=True, exist_ok=True)
subprocess.run(
    [compiler, "-std=c++17", "-O2", "-c", "cpp_runner/main.cpp",
     "-o", str(build_dir / "main.o"),
     f"-I{include}",
     f"-I{include}/executorch/runtime/core/portable_type/c10",
     "-DC10_USING_CUSTOM_GENERATED_MACROS", "-DET_EVENT_TRACER_ENABLED"],
    check=True, capture_output=True,
)
# [end compile_runner]

# sphinx_gallery_start_ignore
# A change to the runner's sources runs this recipe again:
# xnnguide_depends_on = cpp_runner/main.cpp
from xnnguide.core import facts

assert compiler is not None, "no C++ compiler (c++, g++ or clang++)"
# sphinx_gallery_end_ignore

# %%
# Link it the way a linker drops the backend
# ------------------------------------------
# ``-Wl,--as-needed`` (the default of some Linux distributions' compilers)
# records a shared library as a dependency only when the program calls
# something in it. The runner calls nothing in the XNNPACK backend's
# library, nor in the kernels' library: both only register themselves.

def needed(program):
    """The shared libraries the program asks the loader for (its DT_NEEDED entries)."""
    dynamic = subprocess.run(["readelf", "-d", str(program)], check=True,
                             capture_output=True, text=True).stdout
    return [
        line.split("[")[1].rstrip("]")
        for line in dynamic.splitlines()
        if "(NEEDED)" in line
    ]


# [start link_dropped]
LIBRARIES = [
    "-lexecutorch",                    # the runtime: the runner calls it
    "-lexecutorch_kernels_optimized",  # registers CPU kernels
    "-lexecutorch_backend_xnnpack",    # registers XnnpackBackend
    "-lexecutorch_threadpool",
    "-lexecutorch_etdump",
]


def link(name, libraries):
    program = build_dir / name
    subprocess.run(
        [compiler, str(build_dir / "main.o"), "-o", str(program), "-Wl,--as-needed",
         f"-L{lib}", f"-Wl,-rpath,{lib}", *libraries],
        check=True, capture_output=True,
    )
    return program


dropped = link("runner_dropped", LIBRARIES)
print("needs:", ", ".join(needed(dropped)))
failed = subprocess.run([str(dropped), pte], capture_output=True, text=True)
print(f"exit status {failed.returncode}")
print(failed.stderr.strip())
# [end link_dropped]

# sphinx_gallery_start_ignore
assert "libexecutorch_backend_xnnpack.so" not in needed(dropped), needed(dropped)
assert failed.returncode == 1, failed
not_registered = next(line for line in failed.stderr.splitlines() if "not registered" in line)
assert "Backend XnnpackBackend is not registered." in not_registered, failed.stderr
facts.record("dropped_message", not_registered.split("] ", 1)[1])
facts.record("dropped_log_line", not_registered)
facts.record("dropped_needs", ", ".join(needed(dropped)))
# sphinx_gallery_end_ignore

# %%
# Keep the libraries that only register
# -------------------------------------
# ``--no-as-needed`` between ``--push-state`` and ``--pop-state`` keeps the
# libraries named in between, whether or not the program calls them, and
# leaves the rest of the link as it was. The same program then loads the
# backend and computes the model.

# [start link_kept]
REGISTERING = ["-lexecutorch_kernels_optimized", "-lexecutorch_backend_xnnpack"]
kept = link("runner_kept", [
    "-lexecutorch",
    "-Wl,--push-state,--no-as-needed", *REGISTERING, "-Wl,--pop-state",
    "-lexecutorch_threadpool", "-lexecutorch_etdump",
])
print("needs:", ", ".join(needed(kept)))
printed = subprocess.run([str(kept), pte], check=True, capture_output=True,
                         text=True).stdout.splitlines()
start = printed.index("output 0: Float [1, 10]") + 1
values = [float(value) for value in printed[start : start + 10]]
cpp_output = torch.tensor(values).reshape(1, 10)
with torch.no_grad():
    eager_output = model(ones)
torch.testing.assert_close(cpp_output, eager_output, atol=1e-5, rtol=1e-5)
print("the output matches eager PyTorch (atol 1e-5)")
# [end link_kept]

# sphinx_gallery_start_ignore
import re

from xnnguide.recipe_checks import python_runtime

assert "libexecutorch_backend_xnnpack.so" in needed(kept)
assert "xnnpack: backend not registered" not in printed
python_output = python_runtime.forward_output(pte, [ones])
torch.testing.assert_close(python_output, model(ones), atol=1e-5, rtol=1e-5)
facts.record("kept_needs", ", ".join(needed(kept)))
# The wheel ships shared libraries only: no static archive to link with or without --whole-archive.
archives = sorted(path.name for path in executorch_dir.rglob("*.a"))
assert archives == [], archives
shipped = sorted(path.name for path in lib.glob("*.so"))
assert "libexecutorch_backend_xnnpack.so" in shipped
facts.record("shipped_libraries", ", ".join(shipped))
# The kernel levels the x86-64 backend library names (the overview's "what XNNPACK needs of a CPU"):
# XNNPACK's microkernels are named xnn_<op>_ukernel_<tile>__<isa>_<variant>.
binary = (lib / "libexecutorch_backend_xnnpack.so").read_bytes()
levels = set(re.findall(rb"xnn_\w+?_ukernel\w*?__((?:sse|avx|fma|f16c)[a-z0-9]*)", binary))
levels = sorted(level.decode() for level in levels)
assert {"sse2", "avx", "avx2", "avx512f"} <= set(levels), levels
facts.record("x86_kernel_levels", ", ".join(levels))
# The CMake package's imported targets wrap each library in the same retention (why the CMake-built
# runner of the other recipes keeps its backend).
config = (executorch_dir / "share" / "cmake" / "executorch-config.cmake").read_text()
assert re.search(r'"LINKER:--push-state,--no-as-needed,\$\{_library\},--pop-state"', config)
# sphinx_gallery_end_ignore

# %%
# With CMake
# ----------
# The CMake package in the wheel adds ``--push-state,--no-as-needed`` around
# each of its libraries for you, which is why the runner the other recipes
# build with CMake keeps its backend.
#
# Static archives: the same drop, and the fix
# -------------------------------------------
# An app that builds ExecuTorch from source for a phone links *static
# archives* (``libxnnpack_backend.a``). From an archive the linker takes
# only the object files that define something the program calls, so the
# object that registers the backend stays out. The wheel ships no static
# archive, so this recipe makes one of a stand-in: ``static_backend/``
# holds a backend that registers itself the way XNNPACK's does, and a
# program that lists the backends the runtime has. Linked plainly, then
# with ``--whole-archive``:

# [start static_archive]
source = Path("cpp_runner") / "static_backend"
for name in ("registering_backend", "list_backends"):
    subprocess.run(
        [compiler, "-std=c++17", "-O2", "-c", str(source / f"{name}.cpp"),
         "-o", str(build_dir / f"{name}.o"),
         f"-I{include}",
         f"-I{include}/executorch/runtime/core/portable_type/c10",
         "-DC10_USING_CUSTOM_GENERATED_MACROS", "-DET_EVENT_TRACER_ENABLED"],
        check=True, capture_output=True,
    )
archive = build_dir / "libstand_in_backend.a"
archive.unlink(missing_ok=True)
subprocess.run(["ar", "rcs", str(archive), str(build_dir / "registering_backend.o")],
               check=True)

for name, archive_flags in (
    ("plain", [str(archive)]),
    ("whole", ["-Wl,--whole-archive", str(archive), "-Wl,--no-whole-archive"]),
):
    program = build_dir / f"list_backends_{name}"
    subprocess.run(
        [compiler, str(build_dir / "list_backends.o"), "-o", str(program),
         *archive_flags, f"-L{lib}", f"-Wl,-rpath,{lib}", "-lexecutorch"],
        check=True, capture_output=True,
    )
    listed = subprocess.run([str(program)], check=True, capture_output=True,
                            text=True).stdout
    print(f"{name}: {' / '.join(listed.splitlines())}")
# [end static_archive]

# sphinx_gallery_start_ignore
# xnnguide_depends_on = cpp_runner/static_backend/registering_backend.cpp cpp_runner/static_backend/list_backends.cpp
plain = subprocess.run([str(build_dir / "list_backends_plain")], capture_output=True, text=True).stdout
whole = subprocess.run([str(build_dir / "list_backends_whole")], capture_output=True, text=True).stdout
assert plain.splitlines() == ["registered backends: 0"], plain
assert whole.splitlines() == ["StandInBackend", "registered backends: 1"], whole
facts.record("plain_archive_backends", plain.splitlines()[-1])
facts.record("whole_archive_backends", " / ".join(whole.splitlines()))
# sphinx_gallery_end_ignore
