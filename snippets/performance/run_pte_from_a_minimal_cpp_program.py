"""
Run a .pte from a minimal C++ program
=====================================

The shortest C++ program that runs a ``.pte`` on XNNPACK: ``main.cpp``
loads the file with ExecuTorch's ``Module`` and runs ``forward`` on a
tensor, and a six-line ``CMakeLists.txt`` builds it against the C++ runtime
that the ``executorch`` wheel ships. This recipe lowers a small network,
builds the program, runs it and checks its output against eager PyTorch.
"""

# %%
# A program to run
# ----------------
# A small convolutional network taking one 224x224 RGB image, the input
# shape ``main.cpp`` makes, lowered to XNNPACK.

import torch
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 16, 3, stride=2),
    torch.nn.ReLU(),
    torch.nn.AdaptiveAvgPool2d(1),
    torch.nn.Flatten(),
    torch.nn.Linear(16, 10),
).eval()
example = (torch.ones(1, 3, 224, 224),)
lowered = to_edge_transform_and_lower(
    torch.export.export(model, example),
    transform_passes=get_transform_passes(),
    partitioner=[XnnpackPartitioner()],
)
with open("small_cnn.pte", "wb") as file:
    file.write(lowered.to_executorch().buffer)

# %%
# Build the program
# -----------------
# ``pip install cmake ninja`` gives CMake 3.28 or newer, which the wheel's
# CMake package needs, and Ninja. ``CMAKE_PREFIX_PATH`` is the folder of the
# installed ``executorch`` package, where ``find_package`` finds it. The
# compiler is the system's C++17 compiler.

import importlib.util
import subprocess
from pathlib import Path

import cmake
import ninja

executorch_dir = importlib.util.find_spec("executorch").submodule_search_locations[0]
cmake_exe = str(Path(cmake.CMAKE_BIN_DIR) / "cmake")
configure = [
    cmake_exe,
    "-S", "cpp_minimal",
    "-B", "cpp_minimal/build",
    "-G", "Ninja",
    f"-DCMAKE_MAKE_PROGRAM={Path(ninja.BIN_DIR) / 'ninja'}",
    f"-DCMAKE_PREFIX_PATH={executorch_dir}",
    "-DCMAKE_BUILD_TYPE=Release",
]
subprocess.run(configure, check=True, capture_output=True, text=True)
subprocess.run([cmake_exe, "--build", "cpp_minimal/build"], check=True,
               capture_output=True, text=True)

# %%
# Run it and compare
# ------------------
# The program prints one value a line; eager PyTorch runs the same input.

done = subprocess.run(["cpp_minimal/build/run_pte", "small_cnn.pte"],
                      check=True, capture_output=True, text=True)
from_cpp = torch.tensor([float(value) for value in done.stdout.split()])
with torch.no_grad():
    expected = model(*example).flatten()
torch.testing.assert_close(from_cpp, expected, rtol=1e-4, atol=1e-5)
print(from_cpp)

# %%
# A file that is not there
# ------------------------
# ``Module`` opens the file when ``forward`` first needs it, so the error
# comes from ``forward``: one line on standard error, exit status 1.

missing = subprocess.run(["cpp_minimal/build/run_pte", "no_such_file.pte"],
                         capture_output=True, text=True)
print(missing.returncode, missing.stderr.strip().splitlines()[-1])

# sphinx_gallery_start_ignore
from xnnguide.core import facts

# A change to the program's sources runs this recipe again:
# xnnguide_depends_on = cpp_minimal/main.cpp cpp_minimal/CMakeLists.txt
assert missing.returncode == 1 and missing.stdout == "", missing
error_line = missing.stderr.strip().splitlines()[-1]
assert error_line.startswith("error: cannot run no_such_file.pte"), missing.stderr
lines = {path: len(Path("cpp_minimal", path).read_text().splitlines())
         for path in ("main.cpp", "CMakeLists.txt")}
assert lines["CMakeLists.txt"] <= 7 and lines["main.cpp"] <= 30, lines
typed = [word.replace(str(Path(executorch_dir).parent), "$SITE_PACKAGES").replace(
    str(Path(ninja.BIN_DIR) / "ninja"), "ninja") for word in ["cmake", *configure[1:]]]
options = [" ".join(typed[i:i + 2]) for i in range(1, 7, 2)] + typed[7:]  # -S, -B, -G, then -D
facts.record("build_commands", configure, " \\\n    ".join(["cmake", *options])
             + "\ncmake --build cpp_minimal/build")
facts.record("outputs", len(from_cpp))
facts.record("max_abs_error", float((from_cpp - expected).abs().max()),
             f"{float((from_cpp - expected).abs().max()):.1e}")
facts.record("missing_file_error", error_line)
facts.record("main_cpp_lines", lines["main.cpp"])
facts.record("cmake_lines", lines["CMakeLists.txt"])
# sphinx_gallery_end_ignore
