"""
Troubleshoot: the runtime has no XNNPACK backend
================================================

A ``.pte`` file with XNNPACK delegates can only run on a runtime that was
built with the XNNPACK backend registered. This recipe shows what a runtime
says when a ``.pte`` names a backend it does not have, how to tell before
loading, and the working case next to it.
"""

# %%
# Ask the runtime which backends it has
# -------------------------------------
# The runtime in the ``executorch`` wheel registers its backends when it is
# first loaded; ``backend_registry`` lists them by the ids a ``.pte`` uses.

# [start missing_backend_registry]
from executorch.runtime import Runtime

runtime = Runtime.get()
print("registered backends:", runtime.backend_registry.registered_backend_names)
print(
    "XnnpackBackend available:", runtime.backend_registry.is_available("XnnpackBackend")
)
# [end missing_backend_registry]

# sphinx_gallery_start_ignore
from xnnguide.core import facts

registered = runtime.backend_registry.registered_backend_names
assert "XnnpackBackend" in registered, registered
facts.record("registered_backends", registered, ", ".join(registered))
# sphinx_gallery_end_ignore

# %%
# A small model lowered to XNNPACK
# --------------------------------

import torch

from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
).eval()
example_inputs = (torch.randn(2, 16),)

executorch_program = to_edge_transform_and_lower(
    torch.export.export(model, example_inputs),
    transform_passes=get_transform_passes(),
    partitioner=[XnnpackPartitioner()],
).to_executorch()
with open("missing_backend_mlp.pte", "wb") as file:
    file.write(executorch_program.buffer)

# %%
# Which backends does a ``.pte`` need?
# ------------------------------------
# Every delegate in a ``.pte`` names its backend by id. The program manager
# that wrote the file holds the program it serialised
# (``executorch_program``), so the ids can be read there before the file ships. ExecuTorch 1.5.1 has no public
# reader for a ``.pte`` someone else made; loading its methods (below) is
# the check that remains.

# [start missing_backend_needs]
needed = sorted(
    {
        delegate.id
        for plan in executorch_program.executorch_program.execution_plan
        for delegate in plan.delegates
    }
)
missing = [
    backend for backend in needed if not runtime.backend_registry.is_available(backend)
]
print("the .pte needs:", needed, "- missing from this runtime:", missing)
# [end missing_backend_needs]

# sphinx_gallery_start_ignore
assert needed == ["XnnpackBackend"], needed
assert missing == [], missing
facts.record("needed_backends", needed, ", ".join(needed))
# sphinx_gallery_end_ignore

# %%
# Load it where the backend is missing
# ------------------------------------
# This runtime does have XNNPACK. To see what a runtime built without it
# says, overwrite the delegate's backend id in the file with a name of the
# same length that no runtime registers: a
# runtime without XNNPACK meets ``XnnpackBackend`` exactly the way this one
# meets the made-up name. The program loads (a ``.pte`` is checked for
# backends only when a method is loaded); loading ``forward`` fails. The
# exception carries only an error code (a value of the runtime's ``Error``
# enum); the sentence that explains it is logged by the runtime through
# Python's ``sys.stderr``, collected here with ``redirect_stderr`` so the
# recipe can print and check it.

# [start missing_backend_load]
import io
from contextlib import redirect_stderr

# A flatbuffer string can be overwritten in place by one of the same length.
with open("missing_backend_mlp.pte", "rb") as file:
    pte_bytes = file.read()
with open("missing_backend_mlp_renamed.pte", "wb") as file:
    file.write(pte_bytes.replace(b"XnnpackBackend", b"XnnpackMissing"))

program = runtime.load_program("missing_backend_mlp_renamed.pte")
runtime_log = io.StringIO()
with redirect_stderr(runtime_log):
    try:
        program.load_method("forward")
    except RuntimeError as error:
        load_error = str(error)
print("exception:", load_error)
print("runtime log:", runtime_log.getvalue(), sep="\n")
# [end missing_backend_load]

# sphinx_gallery_start_ignore
# The page names the code; read the name from the installed runtime's Error enum.
from xnnguide.recipe_checks.runtime_errors import error_name

assert load_error == "Failed to load method forward, error: 0x:20", load_error
assert error_name(load_error) == "NotFound"
(log_line,) = [
    line for line in runtime_log.getvalue().splitlines() if "not registered" in line
]
assert b"XnnpackBackend" in pte_bytes
assert log_line.endswith("Backend XnnpackMissing is not registered."), log_line
facts.record("load_error", load_error)
facts.record("load_error_name", error_name(load_error))
facts.record("log_line", log_line)
# sphinx_gallery_end_ignore

# %%
# The same file with its backend present
# --------------------------------------
# The original ``.pte`` loads and matches eager PyTorch.

forward = runtime.load_program("missing_backend_mlp.pte").load_method("forward")
pte_output = forward.execute(list(example_inputs))[0]
with torch.no_grad():
    eager_output = model(*example_inputs)
torch.testing.assert_close(pte_output, eager_output, atol=1e-5, rtol=1e-5)
print("max abs error against eager:", (pte_output - eager_output).abs().max().item())
