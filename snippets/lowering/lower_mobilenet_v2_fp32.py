"""
Lower MobileNet V2 to XNNPACK in fp32
=====================================

This recipe takes torchvision's MobileNet V2 from eager PyTorch to a ``.pte``
file whose operators run on XNNPACK, runs that file on the ExecuTorch
runtime, and checks it against eager PyTorch. It is the recipe the
:doc:`Get-started tutorial </tutorial/get_started>` walks through.
"""

# %%
# Build the model
# ---------------
# ``weights=None`` gives randomly initialised weights, so nothing is
# downloaded. Export needs the model in ``eval()`` mode, so that batch norm
# and dropout are captured with their inference behaviour, and one example
# input per argument of ``forward``.

# [start model]
import torch
import torchvision

torch.manual_seed(0)
model = torchvision.models.mobilenet_v2(weights=None).eval()
example_inputs = (torch.randn(1, 3, 224, 224),)
# [end model]

# %%
# Random weights need batch-norm statistics
# -----------------------------------------
# A random network's batch-norm layers still hold their initial statistics
# (mean 0, variance 1), which do not match its activations: the outputs
# shrink layer by layer to about ``1e-9``, where any tolerance passes. One
# batch of random images in training mode lets each layer measure real
# statistics; ``momentum=None`` makes it keep that batch's statistics instead
# of blending them with the initial ones. No weight changes. A trained model
# skips this step.

# [start batchnorm_statistics]
for layer in model.modules():
    if isinstance(layer, torch.nn.BatchNorm2d):
        layer.momentum = None  # keep the batch's statistics, not a blend
with torch.no_grad():
    model.train()(torch.randn(16, 3, 224, 224))
model.eval()
# [end batchnorm_statistics]

# %%
# Export, lower to XNNPACK, serialise
# -----------------------------------
# ``torch.export.export`` captures the model as a graph of ATen operators.
# ``to_edge_transform_and_lower`` converts it to the Edge dialect, applies the
# XNNPACK transform passes, and hands every subgraph the partitioner accepts
# to XNNPACK. ``to_executorch`` then produces the program that is written to
# the ``.pte`` file.

# [start lower]
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower

exported_program = torch.export.export(model, example_inputs)
edge_program = to_edge_transform_and_lower(
    exported_program,
    transform_passes=get_transform_passes(),
    partitioner=[XnnpackPartitioner()],
)
executorch_program = edge_program.to_executorch()

with open("mobilenet_v2_xnnpack_fp32.pte", "wb") as file:
    file.write(executorch_program.buffer)
# [end lower]

# %%
# Run the ``.pte`` and compare with eager PyTorch
# -----------------------------------------------
# ``Runtime.get()`` returns the ExecuTorch runtime compiled into the
# ``executorch`` wheel, XNNPACK included. The tolerance is explicit: XNNPACK
# may reorder floating-point sums, so results agree closely but not bitwise.

# [start run]
from executorch.runtime import Runtime

runtime = Runtime.get()
program = runtime.load_program("mobilenet_v2_xnnpack_fp32.pte")
forward = program.load_method("forward")
pte_output = forward.execute(list(example_inputs))[0]

with torch.no_grad():
    eager_output = model(*example_inputs)

max_abs_error = (pte_output - eager_output).abs().max().item()
print(f"max abs error against eager: {max_abs_error:.2e}")
torch.testing.assert_close(pte_output, eager_output, atol=1e-4, rtol=1e-4)
# [end run]

# %%
# What XNNPACK took
# -----------------
# ``get_delegation_info`` counts the nodes of the lowered graph that now sit
# inside an XNNPACK delegate and those left to ExecuTorch's CPU kernels.

# [start summary]
import os

from executorch.devtools.backend_debug import get_delegation_info

delegation = get_delegation_info(edge_program.exported_program().graph_module)
print(delegation.get_summary())
print(f".pte size: {os.path.getsize('mobilenet_v2_xnnpack_fp32.pte'):,} bytes")
# [end summary]

# sphinx_gallery_start_ignore
from xnnguide.core import facts

assert delegation.num_delegated_subgraphs >= 1, "XNNPACK took nothing"
assert delegation.num_delegated_nodes > 10 * delegation.num_non_delegated_nodes
pte_size = os.path.getsize("mobilenet_v2_xnnpack_fp32.pte")
subgraphs, outside = delegation.num_delegated_subgraphs, delegation.num_non_delegated_nodes
# The summary counts a getitem reading a delegate's result as non-delegated; it computes nothing.
operators = outside - delegation.delegation_by_operator["getitem"].non_delegated
facts.record("delegated_subgraphs", subgraphs)
facts.record("delegated_subgraphs_text", subgraphs, f"{subgraphs} subgraph" + "s" * (subgraphs != 1))
facts.record("delegated_nodes", delegation.num_delegated_nodes)
facts.record("non_delegated_nodes", outside)
named = {0: "no operator", 1: "one operator"}.get(operators, f"{operators} operators")
facts.record("operators_outside_text", operators, named)
# The quantization recipe lowers the same model: the pages must show one size for it.
facts.record("pte_size_bytes", pte_size, f"{pte_size:,} bytes", quantity="MobileNet V2 fp32 .pte, size")
facts.record("pte_size_mb", pte_size / 1e6, f"{pte_size / 1e6:.1f} MB")

# The run's figures, read after the last shown block, so that no hidden call runs between the blocks the
# tutorial shows.
scale = eager_output.abs().max().item()
assert scale > 0.1, "outputs too small for atol=1e-4 to mean anything"
facts.record("output_scale", scale, f"{scale:.2f}")
facts.record("max_abs_error", max_abs_error, f"{max_abs_error:.1e}")
facts.record("tolerance", 1e-4, "1e-4")
# sphinx_gallery_end_ignore
