"""
Quantize a small decoder with torchao 8da4w
===========================================

Language models spend their memory on the weights of linear layers and of
the token embedding. The ``8da4w`` scheme stores linear weights in 4 bits
with one scale per group of 32 values and quantizes activations to 8 bits
per token at run time (XNNPACK runs these layers), and stores the embedding
table in 4 bits too (ExecuTorch's quantized kernel library looks rows up
from it). This recipe applies it with torchao's ``quantize_`` to a small
decoder, lowers it, runs the ``.pte`` on the ExecuTorch runtime, and proves
from the runtime's own trace that the quantized embedding ran.
"""

# %%
# A small decoder
# ---------------
# Token embedding, one pre-norm causal self-attention block with a
# feed-forward layer, and a linear head over the vocabulary: the layout of a
# decoder-only language model, shrunk. Every linear layer's input width is a
# multiple of 32, the group size. The weights are random; the seed fixes them.

import copy
import math

import torch


class TinyDecoder(torch.nn.Module):
    def __init__(self, vocab=512, dim=128, heads=4, context=32):
        super().__init__()
        self.heads = heads
        self.embed = torch.nn.Embedding(vocab, dim)
        self.norm1 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.norm2 = torch.nn.LayerNorm(dim)
        self.ffn = torch.nn.Sequential(
            torch.nn.Linear(dim, 4 * dim),
            torch.nn.GELU(),
            torch.nn.Linear(4 * dim, dim),
        )
        self.norm3 = torch.nn.LayerNorm(dim)
        self.head = torch.nn.Linear(dim, vocab)
        # Additive causal mask: a token attends to itself and earlier tokens.
        mask = torch.full((context, context), float("-inf")).triu(1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, tokens):
        batch, length = tokens.shape
        x = self.embed(tokens)
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (
            t.reshape(batch, length, self.heads, -1).transpose(1, 2) for t in (q, k, v)
        )
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        scores = scores + self.mask[:length, :length]
        attended = (scores.softmax(dim=-1) @ v).transpose(1, 2)
        attended = attended.reshape(batch, length, -1)
        x = x + self.proj(attended)
        x = x + self.ffn(self.norm2(x))
        return self.head(self.norm3(x))


torch.manual_seed(0)
model = TinyDecoder().eval()
example_inputs = (torch.randint(0, 512, (1, 32)),)

# %%
# Quantize with ``quantize_``
# ---------------------------
# torchao quantizes in eager mode, before export, and in place, so the fp32
# model is copied first: it is needed below as the reference. Two calls of
# ``quantize_`` make up the scheme. ``IntxWeightOnlyConfig`` stores the
# embedding table in int4 with one scale per group of 32 values (a lookup
# has no activation to quantize); ``quantize_`` only changes ``nn.Linear``
# layers unless a ``filter_fn`` picks other modules, so the first call names
# the embedding. ``Int8DynamicActivationIntxWeightConfig`` then gives every
# linear layer int4 weights, grouped the same way, and int8 activations
# quantized per token at run time. No calibration: weights are quantized from
# their own values and activations from theirs, at run time.

# [start quant_8da4w]
from torchao.quantization import Int8DynamicActivationIntxWeightConfig, PerGroup
from torchao.quantization import IntxWeightOnlyConfig, quantize_

quantized_model = copy.deepcopy(model)
quantize_(
    quantized_model,
    IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32)),
    filter_fn=lambda module, fqn: isinstance(module, torch.nn.Embedding),
)
quantize_(
    quantized_model,
    Int8DynamicActivationIntxWeightConfig(
        weight_dtype=torch.int4, weight_granularity=PerGroup(32)
    ),
)
print("embedding:", type(quantized_model.embed.weight).__name__)
print("linear:", type(quantized_model.head.weight).__name__)
# [end quant_8da4w]

# %%
# What the quantized embedding needs
# ----------------------------------
# Exported, the quantized embedding is a ``torchao.dequantize_affine`` of the
# int4 table followed by an ordinary ``embedding``. XNNPACK has no embedding
# operator, so this pair stays outside the delegate, and ExecuTorch has no
# kernel for ``dequantize_affine``. ``to_executorch`` with its default
# settings therefore refuses the program; the recipe tries it and prints the
# error. Two things, both part of the ``executorch`` wheel, make it run:
#
# 1. ``ExecutorchBackendConfig(do_quant_fusion_and_const_prop=True)`` makes
#    ``to_executorch`` fuse the pair into one
#    ``quantized_decomposed::embedding_4bit`` operator and pack the table two
#    values per byte at export time.
# 2. Importing ``executorch.kernels.quantized`` loads the quantized kernel
#    library, which registers that operator's kernel with the runtime in this
#    process (a C++ application links the ``quantized_ops_lib`` kernel
#    library instead). The recipe first loads the program without it, and
#    prints what the runtime says.

# [start quant_8da4w_lower]
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.devtools.backend_debug import get_delegation_info
from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower


def lower_to_pte(module, path):
    """Lower *module* to XNNPACK, write *path*; return the program and delegation."""
    edge_program = to_edge_transform_and_lower(
        torch.export.export(module, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )
    delegation = get_delegation_info(edge_program.exported_program().graph_module)
    executorch_program = edge_program.to_executorch(
        ExecutorchBackendConfig(do_quant_fusion_and_const_prop=True)
    )
    with open(path, "wb") as file:
        file.write(executorch_program.buffer)
    return executorch_program, delegation


_, fp32_delegation = lower_to_pte(model, "decoder_fp32.pte")
executorch_program, int8_delegation = lower_to_pte(quantized_model, "decoder_8da4w.pte")
print(int8_delegation.get_summary())
# [end quant_8da4w_lower]

# %%
# Without the fusion, and without the kernels
# -------------------------------------------
# The same quantized model, lowered the same way, but written with
# ``to_executorch()``'s default settings; then the fused program, loaded
# before the quantized kernel library is imported. The runtime's operator
# registry says which kernels it has.

# [start quant_8da4w_failures]
from executorch.runtime import Runtime

edge_program = to_edge_transform_and_lower(
    torch.export.export(quantized_model, example_inputs),
    transform_passes=get_transform_passes(),
    partitioner=[XnnpackPartitioner()],
)
try:
    edge_program.to_executorch()
except RuntimeError as error:
    unfused_error = f"{type(error).__name__}: {error}"
print(unfused_error)

KERNEL = "quantized_decomposed::embedding_4bit.out"
runtime = Runtime.get()
registry = runtime.operator_registry
print("embedding_4bit kernel registered:", KERNEL in registry.operator_names)
try:
    runtime.load_program("decoder_8da4w.pte").load_method("forward")
except RuntimeError as error:
    load_error = f"{type(error).__name__}: {error}"
print(load_error)

# registers embedding_4bit.out with the runtime
import executorch.kernels.quantized  # noqa: F401, E402

print("embedding_4bit kernel registered:", KERNEL in registry.operator_names)
# [end quant_8da4w_failures]

# sphinx_gallery_start_ignore
from xnnguide.recipe_checks.runtime_errors import error_name

assert unfused_error.startswith("RuntimeError: Missing out variants: {"), unfused_error
assert "torchao::dequantize_affine" in unfused_error, unfused_error
assert error_name(load_error) == "OperatorMissing", load_error
# sphinx_gallery_end_ignore

# %%
# The program's operators outside XNNPACK
# ---------------------------------------
# The ``.pte`` lists every operator it calls outside a delegate. The fused
# embedding must be one of them.

operators = [
    f"{operator.name}.{operator.overload}"
    for operator in executorch_program.executorch_program.execution_plan[0].operators
]
print(operators)
assert KERNEL in operators

# %%
# Run it, and trace what ran
# --------------------------
# The program is loaded with ``enable_etdump=True``, so the runtime records
# every operator call and every XNNPACK operator it executes; the
# ``Inspector`` reads that trace. The int8 program is checked against the
# quantized eager model: both quantize each token's activations with its own
# scale and accumulate int4 × int8 products, so they differ by float rounding
# and the odd activation that rounds to a neighbouring value. The check is
# the signal-to-quantization-noise ratio (SQNR) of the logits, torchao's
# ``compute_error``, at least ``MIN_SQNR_DB``, the floor of every int8 check
# in these recipes.

# [start quant_8da4w_run]
import os

from executorch.devtools import Inspector
from torchao.quantization.utils import compute_error

MIN_SQNR_DB = 10.0  # the 8da4w .pte against its quantized eager model
test_tokens = torch.randint(0, 512, (1, 32), generator=torch.Generator().manual_seed(1))

fp32_method = runtime.load_program("decoder_fp32.pte").load_method("forward")
fp32_pte_output = fp32_method.execute([test_tokens])[0]
torch.testing.assert_close(
    fp32_pte_output, model(test_tokens).detach(), atol=1e-4, rtol=1e-4
)

int8_program = runtime.load_program("decoder_8da4w.pte", enable_etdump=True)
int8_pte_output = int8_program.load_method("forward").execute([test_tokens])[0]
int8_program.write_etdump_result_to_file("decoder_8da4w.etdp", "decoder_8da4w.debug")
inspector = Inspector(etdump_path="decoder_8da4w.etdp")
events = [event.name for block in inspector.event_blocks for event in block.events]
print([name for name in events if "embedding" in name or "QB4W" in name])
assert "native_call_embedding_4bit.out" in events

with torch.no_grad():
    fp32_output = model(test_tokens)
    int8_eager_output = quantized_model(test_tokens)
sqnr_vs_int8_eager = compute_error(int8_eager_output, int8_pte_output).item()
assert sqnr_vs_int8_eager >= MIN_SQNR_DB, f"SQNR {sqnr_vs_int8_eager:.1f} dB"


def relative_error(output, reference):
    return ((output - reference).norm() / reference.norm()).item()


error_vs_int8_eager = relative_error(int8_pte_output, int8_eager_output)
error_vs_fp32 = relative_error(int8_pte_output, fp32_output)
size_ratio = os.path.getsize("decoder_8da4w.pte") / os.path.getsize("decoder_fp32.pte")
print(f"relative error against 8da4w eager: {error_vs_int8_eager:.4f}")
print(f"relative error against fp32 eager:  {error_vs_fp32:.4f}")
print(f".pte size, 8da4w / fp32: {size_ratio:.2f}")
# [end quant_8da4w_run]

# sphinx_gallery_start_ignore
from xnnguide.core import facts
from xnnguide.recipe_checks import quantization

# Groups of 32 must tile every quantized row: the prose promises it.
widths = [m.in_features for m in model.modules() if isinstance(m, torch.nn.Linear)]
assert all(width % 32 == 0 for width in widths + [model.embed.embedding_dim]), widths
output_scale = fp32_output.abs().max().item()
assert output_scale > 0.1, "outputs too small for a relative tolerance"
# 4-bit weights and embedding: well under a quarter of the fp32 program.
assert size_ratio < 0.25, f".pte is {size_ratio:.2f} of fp32"
# Every linear layer ran as an XNNPACK int8 x int4 fully-connected operator.
qb4w_ops = [name for name in events if "QB4W" in name]
assert len(qb4w_ops) == 5, qb4w_ops
assert int8_delegation.num_delegated_subgraphs >= 1
assert error_vs_fp32 < 0.2, f"8da4w strays {error_vs_fp32:.3f} from fp32"

max_error_int8 = (int8_pte_output - int8_eager_output).abs().max().item()
max_error_fp32 = (int8_pte_output - fp32_output).abs().max().item()
facts.record("output_scale", output_scale, f"{output_scale:.2f}")
quantization.record_min_sqnr(MIN_SQNR_DB)
facts.record("sqnr_vs_int8_eager", sqnr_vs_int8_eager, f"{sqnr_vs_int8_eager:.1f} dB")
facts.record("max_error_vs_int8_eager", max_error_int8, f"{max_error_int8:.1e}")
facts.record("max_error_vs_fp32", max_error_fp32, f"{max_error_fp32:.3f}")
facts.record("qb4w_operator", qb4w_ops[0], qb4w_ops[0])
facts.record("qb4w_count", len(qb4w_ops))
facts.record("outside_operators", operators, ", ".join(operators))
facts.record("unfused_error", unfused_error, unfused_error)
facts.record("load_error", load_error, load_error)
facts.record("load_error_name", error_name(load_error), error_name(load_error))
quantization.record_results(
    "8da4w", "decoder_fp32.pte", "decoder_8da4w.pte", fp32_delegation, int8_delegation,
    error_vs_int8_eager, error_vs_fp32, eager="8da4w",
)
# sphinx_gallery_end_ignore
