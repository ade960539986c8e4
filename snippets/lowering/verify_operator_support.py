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
which that page names; it runs hidden when the site is built, and you do not
need it to probe an operator yourself.
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
print(f"{len({target for target, _ in claims})} operators, {len(claims)} (operator, precision) claims")
print(Counter(precision for _, precision in claims))
print("fp32:", ", ".join(sorted(target for target, precision in claims if precision == "FP32")))

# sphinx_gallery_start_ignore
# It lowers and runs dozens of probe programs, several times longer than most
# recipes: start it first, so that the short ones fill the other cores.
# xnnguide_start_early = True
from xnnguide.core import facts
from xnnguide.recipe_checks import operator_probes

# The reader's list of claims is the one the site's probes check.
precision_names = {"FP32": operator_probes.FP32, "STATIC_QUANT": operator_probes.INT8,
                   "DYNAMIC_QUANT": operator_probes.DYNAMIC_INT8}
site_claims = operator_probes.claims()
assert sorted((target, precision_names.get(precision, precision.lower())) for target, precision in claims) == sorted(
    (claim.target, claim.precision) for claim in site_claims
), "the recipe's claims differ from xnnguide.recipe_checks.operator_probes.claims()"
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
    """Lower *model* to XNNPACK and run it; say whether *target* was delegated and how close it ran."""
    edge = to_edge_transform_and_lower(
        torch.export.export(model, inputs),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )
    delegation = get_delegation_info(edge.exported_program().graph_module)
    counts = delegation.delegation_by_operator.get("aten_" + target.replace(".", "_").lower())
    delegated = counts is not None and counts.delegated > 0 and counts.non_delegated == 0

    program = runtime.load_program(edge.to_executorch().buffer)  # keep it alive while its method runs
    actual = program.load_method("forward").execute(list(inputs))[0]
    with torch.no_grad():
        expected = model(*inputs)
    error = (actual - expected).abs().max().item()
    tolerance = ATOL + RTOL * expected.abs().max().item()
    return delegated, error, tolerance


torch.manual_seed(0)
delegated, error, tolerance = probe("hardswish.default", torch.nn.Hardswish(), (torch.randn(2, 16) * 4,))
print(f"hardswish.default: delegated={delegated}, error {error:.1e} (tolerance {tolerance:.1e})")
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
    print(f"{target}: delegated={delegated}, error {error:.1e} (tolerance {tolerance:.1e})")
    assert delegated and error <= tolerance, target

# %%
# The check can fail
# ------------------
# A check that cannot fail proves nothing. Two probes that must *not* pass:
# a softmax over the first dimension (XNNPACK's softmax config takes only
# the last one), and a model that lacks the operator it is judged for.

# [start negative_controls]
wrong_axis, _, _ = probe("_softmax.default", torch.nn.Softmax(dim=0), (torch.randn(4, 8),))
absent, _, _ = probe("_softmax.default", torch.nn.ReLU(), (torch.randn(2, 16),))
print(f"softmax over dim 0 delegated: {wrong_axis}; relu model judged as softmax: {absent}")
assert not wrong_axis and not absent
# [end negative_controls]

# %%
# Every claim
# -----------
# The operator support page runs this check for every claim, int8 included.
# An int8 probe puts the operator between the quantize and dequantize nodes
# a PT2E quantizer leaves (or quantizes a one-layer model with
# ``XNNPACKQuantizer``), and passes only if XNNPACK ran the operator on int8
# data: its dequantized input and quantized output inside the same delegate.
# The list of probe models is this site's own (the operator support page
# says where it lives); it runs here, hidden, when the site is built.

# sphinx_gallery_start_ignore
import time

# The same two negative controls through the site's probe machinery.
softmax_claim = operator_probes.Claim("_softmax.default", "SoftmaxConfig", operator_probes.FP32)
site_wrong_axis = operator_probes.run_probe(
    softmax_claim, runtime, build=lambda: (torch.nn.Softmax(dim=0), (torch.randn(4, 8),))
)
site_absent = operator_probes.run_probe(softmax_claim, runtime, build=operator_probes.FP32_PROBES["relu.default"])
assert site_wrong_axis.status == operator_probes.NOT_DELEGATED, site_wrong_axis
assert site_absent.status == operator_probes.NOT_DELEGATED, site_absent

start = time.perf_counter()
results = operator_probes.run_all(runtime)
status_counts = Counter(result.status for result in results)
conditions = operator_probes.run_conditions(runtime, results)
extra = {column: operator_probes.run_extra(column, runtime) for column in operator_probes.EXTRA_COLUMNS}
elapsed = time.perf_counter() - start
header, rows = operator_probes.table(results, extra, conditions)

# Every condition shown was refused in its refused form and verified in its accepted form.
unconfirmed = [c.cell() for c in conditions if not c.confirmed]
assert not unconfirmed, unconfirmed
# pow: the config's docstring says "powers of two", but x**4 is refused (only the integer 2 is taken).
pow_refused = next(c for c in conditions if c.condition.target == "pow.Tensor_Scalar")
assert pow_refused.condition.refused_form == "x**4" and pow_refused.confirmed
# The extra columns: every cell is a measured outcome; anything but "verified"
# or "refused" (a refusal, which the conditions column explains) is a failure.
for column, found in extra.items():
    assert {r.status for r in found} <= {operator_probes.VERIFIED, operator_probes.REFUSED}, (column, found)
fp16_refused = sorted(r.claim.target for r in extra[operator_probes.FP16] if not r.verified)
dynamic_refused = sorted(r.claim.target for r in extra[operator_probes.DYNAMIC_SHAPES] if not r.verified)
condition_targets = {c.condition.target for c in conditions}
assert set(fp16_refused + dynamic_refused) <= condition_targets, (fp16_refused, dynamic_refused)

# The reader's check and the site's agree on the operators probed above.
assert ATOL == operator_probes.FP32_ATOL and RTOL == operator_probes.FP32_RTOL
site_fp32 = {r.claim.target: r for r in results if r.claim.precision == operator_probes.FP32}
for target in ["hardswish.default", *more_probes]:
    assert site_fp32[target].verified, site_fp32[target]

# Every claim has exactly one result, and every operator a row.
assert [r.claim for r in results] == site_claims
assert {row[0] for row in rows} == {c.target for c in site_claims}
known = {operator_probes.VERIFIED, operator_probes.NOT_DELEGATED, operator_probes.FAILED,
         operator_probes.MISMATCH, operator_probes.NO_PROBE}
assert set(status_counts) <= known, status_counts
verified = status_counts[operator_probes.VERIFIED]
flagged = len(results) - verified
facts.record_table("support", header, rows)
facts.record("operators", len(rows))
facts.record("claims", len(results))
facts.record("verified", verified)
facts.record("failed", flagged)
facts.record("not_delegated", status_counts[operator_probes.NOT_DELEGATED])
facts.record("errors", status_counts[operator_probes.FAILED] + status_counts[operator_probes.MISMATCH])
facts.record("no_probe", status_counts[operator_probes.NO_PROBE])
facts.record("seconds", elapsed, f"{elapsed:.0f} s")
for precision in operator_probes.PRECISIONS:
    key = {"fp32": "fp32", "int8 (static)": "int8", "int8 (dynamic)": "dynamic"}[precision]
    facts.record(f"claims_{key}", sum(1 for c in site_claims if c.precision == precision))
    facts.record(f"verified_{key}", sum(1 for r in results if r.verified and r.claim.precision == precision))
facts.record("fp32_atol", operator_probes.FP32_ATOL, f"{operator_probes.FP32_ATOL:g}")
facts.record("fp32_rtol", operator_probes.FP32_RTOL, f"{operator_probes.FP32_RTOL:g}")
facts.record("dynamic_relative", operator_probes.DYNAMIC_RELATIVE, f"{operator_probes.DYNAMIC_RELATIVE:.0%}")
for key, column in (("fp16", operator_probes.FP16), ("dynamic_shapes", operator_probes.DYNAMIC_SHAPES)):
    facts.record(f"probed_{key}", len(extra[column]))
    facts.record(f"verified_{key}", sum(r.verified for r in extra[column]))
facts.record("fp16_refused", ", ".join(fp16_refused))
facts.record("dynamic_refused", ", ".join(dynamic_refused))
facts.record("conditions", len(conditions))
facts.record("fp16_atol", operator_probes.FP16_ATOL, f"{operator_probes.FP16_ATOL:g}")
facts.record("fp16_rtol", operator_probes.FP16_RTOL, f"{operator_probes.FP16_RTOL:g}")
facts.record("batch_range", [operator_probes.BATCH_MIN, operator_probes.BATCH_MAX],
             f"{operator_probes.BATCH_MIN} to {operator_probes.BATCH_MAX}")
facts.record("vec_shape", list(operator_probes.VEC), " × ".join(map(str, operator_probes.VEC)))
facts.record("img_shape", list(operator_probes.IMG), " × ".join(map(str, operator_probes.IMG)))
facts.record("negative_softmax", site_wrong_axis.cell())
facts.record("negative_absent", site_absent.cell())
facts.record_table(
    "flagged",
    ["Operator", "Precision", "Status"],
    [[r.claim.target, r.claim.precision, r.cell()] for r in results if not r.verified]
    or [["(none)", "", "every claim verified"]],
)
# sphinx_gallery_end_ignore
