"""
Troubleshoot: wrong input shape or dtype at run time
====================================================

A ``.pte`` method accepts exactly the input shapes and dtypes it was exported
for, unless a dimension was exported as dynamic. This recipe feeds a method
the wrong shape and the wrong dtype, prints what the runtime answers, and
shows the two fixes: export a dynamic dimension, or convert the input.
"""

# %%
# A model exported for a batch of two
# -----------------------------------

# [start inputs_model]
import torch

from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime

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
with open("runtime_inputs_static.pte", "wb") as file:
    file.write(executorch_program.buffer)

program = Runtime.get().load_program("runtime_inputs_static.pte")
forward = program.load_method("forward")
# [end inputs_model]

# %%
# Ask the method what it expects
# ------------------------------
# ``Program.metadata`` reads its inputs and outputs without running it.

# [start inputs_metadata]
print(program.metadata("forward"))
# [end inputs_metadata]

# sphinx_gallery_start_ignore
from xnnguide.core import facts

meta = str(program.metadata("forward"))
assert "sizes=[2, 16], dtype=Float" in meta, meta
facts.record("expected_input", "sizes=[2, 16], dtype=Float")
# sphinx_gallery_end_ignore

# %%
# A batch of three
# ----------------
# The exception says only that ``set_inputs`` failed, with a code (a value
# of the runtime's ``Error`` enum). The reason is a separate line the runtime logs through Python's ``sys.stderr``:
# a terminal or a notebook shows it next to the traceback. Here it is
# collected with ``redirect_stderr`` so the recipe can print and check it.

# [start inputs_wrong_shape]
import io
from contextlib import redirect_stderr

shape_log = io.StringIO()
with redirect_stderr(shape_log):
    try:
        forward.execute([torch.randn(3, 16)])
    except RuntimeError as error:
        shape_error = str(error)
print("exception:", shape_error)
print("runtime log:", shape_log.getvalue(), sep="\n")
# [end inputs_wrong_shape]

# sphinx_gallery_start_ignore
# The page names the codes; read the names from the installed runtime's Error enum.
from xnnguide.recipe_checks.runtime_errors import error_name

assert error_name(shape_error) == "NotSupported", shape_error
assert (
    shape_error == "method->set_inputs() for method 'forward' failed with error 0x10"
), shape_error
(shape_line,) = [
    line for line in shape_log.getvalue().splitlines() if "static tensor" in line
]
assert shape_line.endswith(
    "Attempted to resize a static tensor. Expected shape (2, 16), but received (3, 16)."
), shape_line
facts.record("shape_error", shape_error)
facts.record("shape_error_name", error_name(shape_error))
facts.record("shape_log", shape_line)
# sphinx_gallery_end_ignore

# %%
# Float64 instead of float32
# --------------------------
# ``torch.from_numpy`` on a NumPy array gives float64 unless asked
# otherwise: the most common way to hand a float32 model the wrong dtype.

# [start inputs_wrong_dtype]
import numpy as np

batch = torch.from_numpy(np.random.default_rng(0).standard_normal((2, 16)))
dtype_log = io.StringIO()
with redirect_stderr(dtype_log):
    try:
        forward.execute([batch])
    except RuntimeError as error:
        dtype_error = str(error)
print("input dtype:", batch.dtype)
print("exception:", dtype_error)
print("runtime log:", dtype_log.getvalue(), sep="\n")
# [end inputs_wrong_dtype]

# sphinx_gallery_start_ignore
assert batch.dtype == torch.float64
assert error_name(dtype_error) == "InvalidArgument", dtype_error
assert (
    dtype_error == "method->set_inputs() for method 'forward' failed with error 0x12"
), dtype_error
(dtype_line,) = [
    line for line in dtype_log.getvalue().splitlines() if "scalar type" in line
]
assert dtype_line.endswith(
    "Input 0 has unexpected scalar type: expected Float but was Double."
), dtype_line
facts.record("dtype_error", dtype_error)
facts.record("dtype_error_name", error_name(dtype_error))
facts.record("dtype_log", dtype_line)
# sphinx_gallery_end_ignore

# %%
# The fixes
# ---------
# Convert the input to the dtype the method expects. For a batch size that
# varies, export the batch dimension as dynamic with an upper bound: the
# runtime then accepts any batch up to that bound. Both results match eager
# PyTorch.

# [start inputs_fix]
from torch.export import Dim

batch32 = batch.to(torch.float32)
torch.testing.assert_close(
    forward.execute([batch32])[0], model(batch32), atol=1e-5, rtol=1e-5
)

dynamic_program = to_edge_transform_and_lower(
    torch.export.export(
        model, example_inputs, dynamic_shapes=({0: Dim("batch", min=1, max=8)},)
    ),
    transform_passes=get_transform_passes(),
    partitioner=[XnnpackPartitioner()],
).to_executorch()
with open("runtime_inputs_dynamic.pte", "wb") as file:
    file.write(dynamic_program.buffer)

dynamic_forward = (
    Runtime.get().load_program("runtime_inputs_dynamic.pte").load_method("forward")
)
for batch_size in (1, 3, 8):
    inputs = torch.randn(batch_size, 16)
    with torch.no_grad():
        eager_output = model(inputs)
    pte_output = dynamic_forward.execute([inputs])[0]
    torch.testing.assert_close(pte_output, eager_output, atol=1e-5, rtol=1e-5)
    print(f"batch of {batch_size}: output {tuple(pte_output.shape)}, matches eager")
# [end inputs_fix]
