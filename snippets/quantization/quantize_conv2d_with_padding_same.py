"""
Quantize conv2d with padding same
=================================

One paragraph for the reader: what this recipe shows, and what they can take
from it. ``make new-recipe`` wrote this file; it passes as written, so change
one step at a time and run ``make recipe`` after each.
"""

# %%
# Export a model and lower it to XNNPACK
# --------------------------------------
# Prose goes in comment blocks that start with ``# %%``. The lines between
# the two marker comments below form the region ``lower``, which a page
# shows with ``literalinclude``.

# [start lower]
import torch

from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
).eval()
example_inputs = (torch.randn(2, 16),)

edge_program = to_edge_transform_and_lower(
    torch.export.export(model, example_inputs),
    transform_passes=get_transform_passes(),
    partitioner=[XnnpackPartitioner()],
)
with open("quantize_conv2d_with_padding_same.pte", "wb") as file:
    file.write(edge_program.to_executorch().buffer)
# [end lower]

# %%
# Run the ``.pte`` and compare with eager PyTorch
# -----------------------------------------------
# The ``.pte`` runs on the ExecuTorch runtime of the ``executorch`` wheel.
# The tolerance is explicit: XNNPACK may sum in another order than PyTorch.

# [gallery-only run]
# [start run]
from executorch.runtime import Runtime

program = Runtime.get().load_program("quantize_conv2d_with_padding_same.pte")
pte_output = program.load_method("forward").execute(list(example_inputs))[0]
with torch.no_grad():
    eager_output = model(*example_inputs)

max_abs_error = (pte_output - eager_output).abs().max().item()
print(f"max abs error against eager: {max_abs_error:.2e}")
torch.testing.assert_close(pte_output, eager_output, atol=1e-5, rtol=1e-5)
# [end run]

# sphinx_gallery_start_ignore
# The site's own lines: readers never see or download them.
from xnnguide.core import facts

# The tolerance means something only if the outputs are not tiny.
assert eager_output.abs().max().item() > 0.1, "outputs too small for atol=1e-5 to mean anything"
facts.record("max_abs_error", max_abs_error, f"{max_abs_error:.1e}")
# sphinx_gallery_end_ignore
