"""
Verify the operators the XNNPACK partitioner claims
===================================================

The partitioner's configs say which Edge operators, at which precisions,
XNNPACK takes. A claim is easy to test: lower a tiny model that uses the
operator, count what ended up inside an XNNPACK delegate, run the ``.pte`` on
the ExecuTorch runtime and compare it with eager PyTorch. This recipe shows
that check with public APIs on a few operators, two of them set up to fail.

The table on the :doc:`operator support page </reference/operators>` is the
same check run for every claim by this site's own list of probe models,
which that page names; you do not need it to probe an operator yourself.
"""

# %%
# The claims
# ----------
# ``ALL_PARTITIONER_CONFIGS`` is the list of configs ``XnnpackPartitioner``
# uses when it is given none. Each config names one Edge operator
# (``target_name``) and the precisions it accepts
# (``supported_precision_types()``): one claim per (operator, precision) pair.

from collections import Counter

from executorch.backends.xnnpack.partition.config import ALL_PARTITIONER_CONFIGS

claims = [
    (config.target_name, precision.name)
    for config in ALL_PARTITIONER_CONFIGS
    for precision in config().supported_precision_types()
]
print(
    f"{len({target for target, _ in claims})} operators, {len(claims)} (operator, "
    "precision) claims"
)
print(Counter(precision for _, precision in claims))
print(
    "fp32:",
    ", ".join(sorted(target for target, precision in claims if precision == "FP32")),
)

# sphinx_gallery_start_ignore
from xnnguide.core import facts
from xnnguide.recipe_checks import operator_probe_models, operator_probes

# The reader's list of claims is the one the operator support table probes.
precision_names = {
    "FP32": operator_probes.FP32,
    "STATIC_QUANT": operator_probes.INT8,
    "DYNAMIC_QUANT": operator_probes.DYNAMIC_INT8,
}
assert sorted(
    (target, precision_names.get(precision, precision.lower()))
    for target, precision in claims
) == sorted((claim.target, claim.precision) for claim in operator_probes.claims()), (
    "the recipe's claims differ from xnnguide.recipe_checks.operator_probes.claims()"
)
# sphinx_gallery_end_ignore

# %%
# Probe one operator
# ------------------
# ``probe`` lowers a model the way any recipe on this site does, then asks
# ``get_delegation_info`` how many nodes of the operator landed inside an
# XNNPACK delegate and how many stayed outside. It names operators after
# their graph nodes: ``"hardswish.default"`` is counted as
# ``"aten_hardswish_default"``. The ``.pte`` runs either way (nodes left
# outside run on ExecuTorch's CPU kernels), so the comparison with
# eager PyTorch is made for every probe.
#
# The tolerance is absolute plus relative to the largest output: XNNPACK
# may sum in a different order, and it evaluates ``exp``, ``tanh`` or
# ``gelu`` with its own approximations.

# [start probe_one]
import torch

from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.devtools.backend_debug import get_delegation_info
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime

runtime = Runtime.get()
ATOL = RTOL = 1e-4


def probe(target, model, inputs):
    """Lower *model* to XNNPACK and run it; say whether *target* was delegated and how
    close it ran."""
    edge = to_edge_transform_and_lower(
        torch.export.export(model, inputs),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )
    delegation = get_delegation_info(edge.exported_program().graph_module)
    counts = delegation.delegation_by_operator.get(
        "aten_" + target.replace(".", "_").lower()
    )
    delegated = (
        counts is not None and counts.delegated > 0 and counts.non_delegated == 0
    )

    program = runtime.load_program(
        edge.to_executorch().buffer
    )  # keep it alive while its method runs
    actual = program.load_method("forward").execute(list(inputs))[0]
    with torch.no_grad():
        expected = model(*inputs)
    error = (actual - expected).abs().max().item()
    tolerance = ATOL + RTOL * expected.abs().max().item()
    return delegated, error, tolerance


torch.manual_seed(0)
delegated, error, tolerance = probe(
    "hardswish.default", torch.nn.Hardswish(), (torch.randn(2, 16) * 4,)
)
print(
    f"hardswish.default: delegated={delegated}, error {error:.1e} (tolerance "
    f"{tolerance:.1e})"
)
assert delegated and error <= tolerance
# [end probe_one]

# %%
# Operators with conditions
# -------------------------
# Some configs accept an operator only in some forms: softmax over the last
# dimension, ``pow`` with exponent 2, and so on (each config's
# ``check_constraints`` decides). A probe uses the supported form.


class Square(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x**2


more_probes = {
    "_softmax.default": (torch.nn.Softmax(dim=-1), (torch.randn(2, 16),)),
    "pow.Tensor_Scalar": (Square(), (torch.randn(2, 16),)),
}

for target, (model, inputs) in more_probes.items():
    assert (target, "FP32") in claims, target
    delegated, error, tolerance = probe(target, model, inputs)
    print(
        f"{target}: delegated={delegated}, error {error:.1e} (tolerance "
        f"{tolerance:.1e})"
    )
    assert delegated and error <= tolerance, target

# %%
# The check can fail
# ------------------
# A check that cannot fail proves nothing. Two probes that must *not* pass:
# a softmax over the first dimension (XNNPACK's softmax config takes only
# the last one), and a model that lacks the operator it is judged for.

# [start negative_controls]
wrong_axis, _, _ = probe(
    "_softmax.default", torch.nn.Softmax(dim=0), (torch.randn(4, 8),)
)
absent, _, _ = probe("_softmax.default", torch.nn.ReLU(), (torch.randn(2, 16),))
print(
    f"softmax over dim 0 delegated: {wrong_axis}; relu model judged as softmax: "
    f"{absent}"
)
assert not wrong_axis and not absent
# [end negative_controls]

# sphinx_gallery_start_ignore
# The same two negative controls fail through the table's engine, with the same tolerance.
assert (ATOL, RTOL) == (operator_probes.FP32_ATOL, operator_probes.FP32_RTOL)
softmax_claim = operator_probes.Claim(
    "_softmax.default", "SoftmaxConfig", operator_probes.FP32
)
site_wrong_axis = operator_probes.run_probe(
    softmax_claim,
    runtime,
    build=lambda: (torch.nn.Softmax(dim=0), (torch.randn(4, 8),)),
)
site_absent = operator_probes.run_probe(
    softmax_claim, runtime, operator_probe_models.FP32_PROBES["relu.default"]
)
assert site_wrong_axis.status == site_absent.status == operator_probes.NOT_DELEGATED, (
    site_wrong_axis,
    site_absent,
)
facts.record("negative_softmax", site_wrong_axis.cell())
facts.record("negative_absent", site_absent.cell())
# sphinx_gallery_end_ignore

# %%
# Every claim
# -----------
# The :doc:`operator support page </reference/operators>` runs this check for
# every claim, int8 included. An int8 probe puts the operator between the
# quantize and dequantize nodes a PT2E quantizer leaves (or quantizes a
# one-layer model with ``XNNPACKQuantizer``), and passes only if XNNPACK ran
# the operator on int8 data: its dequantized input and quantized output
# inside the same delegate. That table is a step of this site's build, with
# the site's own list of probe models; the page says where both live.
