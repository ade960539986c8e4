"""
Match the .pte's format to the runtime that loads it
====================================================

A ``.pte`` file names its format in its first bytes, and the runtime that
loads it refuses a format it was not built for. This recipe reads the
format of a ``.pte`` that this release writes, loads it, then loads a copy
that names a later format, as a file from a newer exporter would, and shows
the refusal. It ends with the app packages of the same release. The how-to
page :doc:`/guides/run_on_device` says which versions to pin together.
"""

# %%
# What a .pte says about itself
# -----------------------------
# Bytes 4 to 8 of the file are the identifier of its schema (``ET`` and
# a two-digit format number); bytes 8 to 12 begin ExecuTorch's extended
# header, which says where the program's data segments lie.

import torch
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU()).eval()
example = torch.randn(1, 16)
lowered = to_edge_transform_and_lower(
    torch.export.export(model, (example,)),
    transform_passes=get_transform_passes(),
    partitioner=[XnnpackPartitioner()],
)
# [start read_format]
data = lowered.to_executorch().buffer
with open("small_mlp.pte", "wb") as file:
    file.write(data)
print("format:", data[4:8].decode(), " extended header:", data[8:12].decode())
# [end read_format]

method = Runtime.get().load_program("small_mlp.pte").load_method("forward")
output = method.execute([example])[0]
with torch.no_grad():
    torch.testing.assert_close(output, model(example), atol=1e-5, rtol=1e-5)

# sphinx_gallery_start_ignore
from xnnguide.core import facts

facts.record("pte_format", data[4:8].decode())
# sphinx_gallery_end_ignore

# %%
# A format the runtime was not built for
# --------------------------------------
# The same bytes with the next format number in the identifier. The runtime
# checks the identifier before it reads anything else, logs the two
# identifiers on standard error and refuses the file.

# [start other_format]
later = bytearray(data)
later[4:8] = b"ET%02d" % (int(data[6:8]) + 1)
with open("small_mlp_later_format.pte", "wb") as file:
    file.write(later)
try:
    Runtime.get().load_program("small_mlp_later_format.pte")
except RuntimeError as error:
    print("refused:", error)
# [end other_format]

# sphinx_gallery_start_ignore
import subprocess
import sys

# The page quotes the runtime's log line, which goes to standard error: load the file in a child.
child = subprocess.run([sys.executable, "-c", "from executorch.runtime import Runtime; Runtime"
                        ".get().load_program('small_mlp_later_format.pte')"], capture_output=True, text=True)
logged = next(line for line in child.stderr.splitlines() if "Program identifier" in line)
assert child.returncode != 0 and "Failed to load program" in child.stderr, child.stderr
assert f"'{later[4:8].decode()}' != expected '{data[4:8].decode()}'" in logged, logged
facts.record("refusal_log", logged.split("] ", 1)[1])
# sphinx_gallery_end_ignore

# %%
# The app packages of this release
# --------------------------------
# On a phone, the runtime comes with the app: ExecuTorch's Android library
# (AAR) from Maven Central, or its Swift package for iOS and macOS, whose
# branches are named after the release. Pin them to the release that
# wrote the ``.pte``, the one installed here.

# [gallery-only app_packages]
# [start app_packages]
from importlib.metadata import version

release = version("executorch").split("+")[0]  # "1.5.1+cpu" is the CPU wheel of 1.5.1
gradle = f'implementation("org.pytorch:executorch-android:{release}")'
swift_package = (
    '.package(url: "https://github.com/pytorch/executorch.git",\n'
    f'         branch: "swiftpm-{release}")'
)
print(gradle)
print(swift_package)
# [end app_packages]

# sphinx_gallery_start_ignore
assert release.count(".") == 2 and "+" not in release, release
facts.record("gradle_dependency", gradle)
facts.record("swift_package", swift_package)
# sphinx_gallery_end_ignore
