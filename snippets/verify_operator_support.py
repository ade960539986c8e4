"""
Verify every operator the XNNPACK partitioner claims
====================================================

The partitioner's configs say which Edge operators, at which precisions,
XNNPACK takes. This recipe checks each claim of the installed version: it
lowers a one-operator probe model per claim, confirms the operator landed in
an XNNPACK delegate, runs the ``.pte`` on the ExecuTorch runtime and compares
it with eager PyTorch. The :doc:`operator support page
</reference/operators>` shows the resulting table. The probes live in
:mod:`xnnguide.operator_probes`.
"""

# %%
# The claims
# ----------
# One claim per (operator, precision) pair, read from
# ``ALL_PARTITIONER_CONFIGS`` and each config's
# ``supported_precision_types()``.

from collections import Counter

from xnnguide import operator_probes

claims = operator_probes.claims()
print(f"{len({c.target for c in claims})} operators, {len(claims)} (operator, precision) claims")
print(Counter(claim.precision for claim in claims))

# %%
# The probes can fail
# -------------------
# A check that cannot fail proves nothing. Two probes that must *not* pass:
# a softmax over the first dimension (XNNPACK's softmax config only takes
# the last one), and a claim whose probe model lacks the operator.

# [start negative_controls]
import torch
from executorch.runtime import Runtime

runtime = Runtime.get()  # one runtime for every probe below

softmax_claim = operator_probes.Claim("_softmax.default", "SoftmaxConfig", operator_probes.FP32)
wrong_axis = operator_probes.run_probe(
    softmax_claim, runtime, build=lambda: (torch.nn.Softmax(dim=0), (torch.randn(4, 8),))
)
absent = operator_probes.run_probe(softmax_claim, runtime, build=operator_probes.FP32_PROBES["relu.default"])
print(f"softmax over dim 0: {wrong_axis.cell()}")
print(f"relu probe judged as softmax: {absent.cell()}")
assert wrong_axis.status == operator_probes.NOT_DELEGATED and absent.status == operator_probes.NOT_DELEGATED
# [end negative_controls]

# %%
# Probe every claim
# -----------------
# Each probe is a few hundred elements; the time goes into exporting and
# lowering, not running.

# [start run_probes]
import time

start = time.perf_counter()
results = operator_probes.run_all(runtime)
elapsed = time.perf_counter() - start

status_counts = Counter(result.status for result in results)
print(f"{len(results)} claims probed in {elapsed:.0f} s: {dict(status_counts)}")
for result in results:
    if not result.verified:
        print(f"FLAGGED {result.claim.target} [{result.claim.precision}]: {result.cell()}")
# [end run_probes]

# %%
# The table
# ---------
# One row per operator, one column per precision; a claim that failed is
# kept, with its status in capitals.

header, rows = operator_probes.table(results)
for row in rows:
    print(" | ".join(row[:5]))

# sphinx_gallery_start_ignore
# It lowers and runs dozens of probe programs, several times longer than most
# recipes: start it first, so that the short ones fill the other cores.
# xnnguide_start_early = True
from xnnguide import facts

# Every claim has exactly one result, and every operator a row.
assert [r.claim for r in results] == claims
assert {row[0] for row in rows} == {c.target for c in claims}
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
    facts.record(f"claims_{key}", sum(1 for c in claims if c.precision == precision))
    facts.record(f"verified_{key}", sum(1 for r in results if r.verified and r.claim.precision == precision))
facts.record("fp32_atol", operator_probes.FP32_ATOL, f"{operator_probes.FP32_ATOL:g}")
facts.record("fp32_rtol", operator_probes.FP32_RTOL, f"{operator_probes.FP32_RTOL:g}")
facts.record("dynamic_relative", operator_probes.DYNAMIC_RELATIVE, f"{operator_probes.DYNAMIC_RELATIVE:.0%}")
facts.record("negative_softmax", wrong_axis.cell())
facts.record("negative_absent", absent.cell())
facts.record_table(
    "flagged",
    ["Operator", "Precision", "Status"],
    [[r.claim.target, r.claim.precision, r.cell()] for r in results if not r.verified]
    or [["(none)", "", "every claim verified"]],
)
# sphinx_gallery_end_ignore
