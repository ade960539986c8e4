"""
Quantize an MLP with PT2E dynamic int8
======================================

Dynamic quantization stores weights in int8 ahead of time but measures each
activation's range while the program runs, so it needs no calibration data
and adapts to every input. It pays off where the weights dominate the cost:
linear layers. This recipe applies the ``int8-dynamic`` scheme to a
linear-heavy model, lowers it to XNNPACK, runs the ``.pte`` on the
ExecuTorch runtime, and compares it with the quantized eager model and with
fp32.
"""

# %%
# A linear-heavy model
# --------------------
# Four linear layers with GELU in between, applied to a batch of 16 feature
# vectors: the shape of a transformer's feed-forward block. Its weights are
# PyTorch's default random initialisation; the seed fixes them.

import torch


class FeedForward(torch.nn.Module):
    def __init__(self, features=256, hidden=1024, outputs=64):
        super().__init__()
        self.layers = torch.nn.Sequential(
            torch.nn.Linear(features, hidden),
            torch.nn.GELU(),
            torch.nn.Linear(hidden, hidden),
            torch.nn.GELU(),
            torch.nn.Linear(hidden, features),
            torch.nn.GELU(),
            torch.nn.Linear(features, outputs),
        )

    def forward(self, x):
        return self.layers(x)


torch.manual_seed(0)
model = FeedForward().eval()
example_inputs = (torch.randn(16, 256),)

# %%
# Quantize with dynamic activations
# ---------------------------------
# The PT2E steps of static quantization, with one change in the quantizer's
# configuration: ``is_dynamic=True`` leaves every activation's scale to be
# computed from each input at run time. Only the weights are observed ahead
# of time, so there is no calibration data; but the weight observers record
# nothing until a forward pass runs, so the prepared model is called once,
# on the example input. (Without that call ``convert_pt2e`` only warns
# ``must run observer before calling calculate_qparams``, and lowering then
# fails with ``Invalid size of per channel quantization scales``.)

# [start quant_dynamic_quantize]
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

captured = torch.export.export(model, example_inputs).module()
quantizer = XNNPACKQuantizer().set_global(
    get_symmetric_quantization_config(is_per_channel=True, is_dynamic=True)
)
prepared = prepare_pt2e(captured, quantizer)
with torch.no_grad():
    prepared(*example_inputs)  # observes the weights; activation ranges are not kept
quantized_model = convert_pt2e(prepared)
# [end quant_dynamic_quantize]

# %%
# Lower fp32 and int8
# -------------------
# The same lowering function for both: export, ``to_edge_transform_and_lower``
# with the XNNPACK transform passes and partitioner, write the ``.pte``, and
# return ``get_delegation_info`` of the lowered graph. In the int8 graph each
# linear layer is preceded by ``choose_qparams``, ``quantize`` and
# ``dequantize`` of its input and a ``dequantize`` of its weight; the
# partitioner turns each such group into one XNNPACK dynamically quantized
# fully-connected operator.

from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.devtools.backend_debug import get_delegation_info
from executorch.exir import to_edge_transform_and_lower


def lower_to_pte(module, path):
    """Export *module*, lower it to XNNPACK, write *path*; return the delegation
    info."""
    edge_program = to_edge_transform_and_lower(
        torch.export.export(module, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )
    with open(path, "wb") as file:
        file.write(edge_program.to_executorch().buffer)
    return get_delegation_info(edge_program.exported_program().graph_module)


fp32_delegation = lower_to_pte(model, "mlp_fp32.pte")
int8_delegation = lower_to_pte(quantized_model, "mlp_int8_dynamic.pte")
print(int8_delegation.get_summary())

# %%
# Run both programs and compare
# -----------------------------
# The int8 program is checked against the quantized eager model by the
# signal-to-quantization-noise ratio (SQNR) of its output, in dB, torchao's
# ``compute_error``: it must reach ``MIN_SQNR_DB``, the floor of every int8
# check in these recipes. The two do not quantize activations
# identically: the eager model computes one scale for a whole activation
# tensor, while XNNPACK has no per-tensor dynamic quantization and the
# backend serialises it as one scale per row (per token), which is finer.
# The test input is a fresh draw, not the example used for export.

# [start quant_dynamic_run]
import os

from executorch.runtime import Runtime
from torchao.quantization.utils import compute_error

MIN_SQNR_DB = 10.0  # the int8 .pte against its int8 eager model
runtime = Runtime.get()
test_input = torch.randn(16, 256, generator=torch.Generator().manual_seed(1))


def run_pte(path):
    # Keep the Program referenced while its method runs: the method lives in it.
    program = runtime.load_program(path)
    return program.load_method("forward").execute([test_input])[0]


with torch.no_grad():
    fp32_output = model(test_input)
    int8_eager_output = quantized_model(test_input)
torch.testing.assert_close(run_pte("mlp_fp32.pte"), fp32_output, atol=1e-4, rtol=1e-4)

int8_pte_output = run_pte("mlp_int8_dynamic.pte")
sqnr_vs_int8_eager = compute_error(int8_eager_output, int8_pte_output).item()
assert sqnr_vs_int8_eager >= MIN_SQNR_DB, (
    f"SQNR {sqnr_vs_int8_eager:.1f} dB against int8 eager"
)


def relative_error(output, reference):
    return ((output - reference).norm() / reference.norm()).item()


error_vs_int8_eager = relative_error(int8_pte_output, int8_eager_output)
error_vs_fp32 = relative_error(int8_pte_output, fp32_output)
size_ratio = os.path.getsize("mlp_int8_dynamic.pte") / os.path.getsize("mlp_fp32.pte")
print(
    f"SQNR against int8 eager: {sqnr_vs_int8_eager:.1f} dB (at least {MIN_SQNR_DB:g} "
    "dB)"
)
print(f"relative error against int8 eager: {error_vs_int8_eager:.4f}")
print(f"relative error against fp32 eager: {error_vs_fp32:.4f}")
print(f".pte size, int8 / fp32: {size_ratio:.2f}")
# [end quant_dynamic_run]

# sphinx_gallery_start_ignore
from xnnguide.core import facts
from xnnguide.recipe_checks import quantization

output_scale = fp32_output.abs().max().item()
# Vanishing outputs (untrained networks can shrink them to ~1e-9) would make
# any comparison pass; these must be of a size where float rounding is small.
assert output_scale > 0.01, "outputs too small for the comparison to mean anything"
assert size_ratio < 0.35, f".pte is {size_ratio:.2f} of fp32"
assert int8_delegation.num_delegated_subgraphs >= 1
assert int8_delegation.num_non_delegated_nodes <= 1, int8_delegation.get_summary()
assert error_vs_fp32 < 0.1, f"dynamic int8 strays {error_vs_fp32:.3f} from fp32"

max_error_int8 = (int8_pte_output - int8_eager_output).abs().max().item()
max_error_fp32 = (int8_pte_output - fp32_output).abs().max().item()
facts.record("output_scale", output_scale, f"{output_scale:.2f}")
quantization.record_min_sqnr(MIN_SQNR_DB)
facts.record("sqnr_vs_int8_eager", sqnr_vs_int8_eager, f"{sqnr_vs_int8_eager:.1f} dB")
facts.record("max_error_vs_int8_eager", max_error_int8, f"{max_error_int8:.1e}")
facts.record("max_error_vs_fp32", max_error_fp32, f"{max_error_fp32:.4f}")
quantization.record_results(
    "int8-dynamic",
    "mlp_fp32.pte",
    "mlp_int8_dynamic.pte",
    fp32_delegation,
    int8_delegation,
    error_vs_int8_eager,
    error_vs_fp32,
)
# sphinx_gallery_end_ignore
