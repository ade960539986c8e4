"""Build step: the operator support table, every claim of the installed partitioner probed.

``docs/reference/operators.md`` quotes what this records: the table, its counts, the tolerances and the
probes' shapes. The probes are :mod:`xnnguide.recipe_checks.operator_probe_models`; the engine that lowers,
runs and judges them is :mod:`xnnguide.recipe_checks.operator_probes`. The recipe
``snippets/lowering/verify_operator_support.py`` shows the same check to readers with public APIs.
"""

import time
from collections import Counter

from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import XNNPACKQuantizer
from executorch.runtime import Runtime

from xnnguide.core import facts
from xnnguide.recipe_checks import operator_probe_models as models
from xnnguide.recipe_checks import operator_probes as probes

start = time.perf_counter()
survey = probes.survey(Runtime.get())
elapsed = time.perf_counter() - start
results, extra, conditions = survey.claims, survey.extra, survey.conditions
header, rows = probes.table(results, extra, conditions)
site_claims = probes.claims()

# Every condition shown was refused in its refused form and verified in its accepted form.
unconfirmed = [c.cell() for c in conditions if not c.confirmed]
assert not unconfirmed, unconfirmed
# pow: the config's docstring says "powers of two", but x**4 is refused (only the integer 2 is taken).
pow_condition = next(c for c in conditions if c.condition.target == "pow.Tensor_Scalar")
assert pow_condition.condition.refused_form == "x**4" and pow_condition.confirmed
# The extra columns: every cell is a measured outcome; anything but "verified" or "refused" (a refusal,
# which the conditions column explains) is a failure.
for column, found in extra.items():
    assert {r.status for r in found} <= {probes.VERIFIED, probes.REFUSED}, (column, found)
fp16_refused = sorted(r.claim.target for r in extra[probes.FP16] if not r.verified)
dynamic_refused = sorted(r.claim.target for r in extra[probes.DYNAMIC_SHAPES] if not r.verified)
assert set(fp16_refused + dynamic_refused) <= {c.condition.target for c in conditions}, (fp16_refused,
                                                                                         dynamic_refused)
# The operators the recipe probes with public APIs are verified here too.
site_fp32 = {r.claim.target: r for r in results if r.claim.precision == probes.FP32}
for target in ("hardswish.default", "_softmax.default", "pow.Tensor_Scalar"):
    assert site_fp32[target].verified, site_fp32[target]

# Every claim has exactly one result, and every operator a row.
assert [r.claim for r in results] == site_claims
assert {row[0] for row in rows} == {c.target for c in site_claims}
status_counts = Counter(result.status for result in results)
assert set(status_counts) <= {probes.VERIFIED, probes.NOT_DELEGATED, probes.FAILED, probes.MISMATCH,
                              probes.NO_PROBE}, status_counts

facts.record_table("support", header, rows)
# The matrix as the page shows it: a mark per precision column, the word "refused" where an extra column found a
# refusal (a typographic dash in the legend would read as a mangled command), and each operator's conditions
# spelled out, which is what makes XNNPACK take it, instead of their count.
REFUSED_WORD = "refused"
refused_mark = probes.ProbeResult(probes.Claim("", "", ""), probes.REFUSED).mark()
taken_when: dict[str, list[str]] = {}
for checked in conditions:
    taken_when.setdefault(checked.condition.target, []).append(checked.condition.text)
matrix_header, matrix_rows = probes.matrix(results, extra, conditions)
facts.record_table("matrix", [*matrix_header[:-1], "Taken only when"],
                   [[row[0], *(REFUSED_WORD if mark == refused_mark else mark for mark in row[1:-1]),
                     "; ".join(taken_when.get(row[0], [])) or "-"] for row in matrix_rows])
for name, mark in (("verified", "✓"), ("failed", "✗"), ("refused", REFUSED_WORD),
                   ("not_claimed", probes.NOT_CLAIMED_MARK)):
    facts.record(f"mark_{name}", mark)
# Where upstream's operator list differs, the page says what the installed code does. avg_pool2d: upstream lists
# static int8; here its config claims fp32 only and XNNPACKQuantizer has a pattern for adaptive_avg_pool2d but
# none for avg_pool2d, so PT2E leaves the pooling in floating point.
quantizer_patterns = {pattern.name for pattern in XNNPACKQuantizer.SUPPORTED_PATTERNS}
assert "adaptive_avg_pool2d" in quantizer_patterns and "avg_pool2d" not in quantizer_patterns, quantizer_patterns
avg_pool_precisions = [c.precision for c in site_claims if c.target == "avg_pool2d.default"]
assert avg_pool_precisions == [probes.FP32], avg_pool_precisions
facts.record("avg_pool2d_precisions", avg_pool_precisions, ", ".join(avg_pool_precisions))
# elu: upstream lists it; the installed config list leaves EluConfig out, so no row here.
assert "elu.default" not in {c.target for c in site_claims}
facts.record("operators", len(rows))
facts.record("claims", len(results))
facts.record("verified", status_counts[probes.VERIFIED])
facts.record("failed", len(results) - status_counts[probes.VERIFIED])
facts.record("not_delegated", status_counts[probes.NOT_DELEGATED])
facts.record("errors", status_counts[probes.FAILED] + status_counts[probes.MISMATCH])
facts.record("no_probe", status_counts[probes.NO_PROBE])
facts.record("seconds", elapsed, f"{elapsed:.0f} s")
for precision, key in ((probes.FP32, "fp32"), (probes.INT8, "int8"), (probes.DYNAMIC_INT8, "dynamic")):
    facts.record(f"claims_{key}", sum(1 for c in site_claims if c.precision == precision))
    facts.record(f"verified_{key}", sum(1 for r in results if r.verified and r.claim.precision == precision))
facts.record("fp32_atol", probes.FP32_ATOL, f"{probes.FP32_ATOL:g}")
facts.record("fp32_rtol", probes.FP32_RTOL, f"{probes.FP32_RTOL:g}")
facts.record("dynamic_relative", probes.DYNAMIC_RELATIVE, f"{probes.DYNAMIC_RELATIVE:.0%}")
for key, column in (("fp16", probes.FP16), ("dynamic_shapes", probes.DYNAMIC_SHAPES)):
    facts.record(f"probed_{key}", len(extra[column]))
    facts.record(f"verified_{key}", sum(r.verified for r in extra[column]))
facts.record("fp16_refused", ", ".join(fp16_refused))
facts.record("dynamic_refused", ", ".join(dynamic_refused))
facts.record("conditions", len(conditions))
facts.record("fp16_atol", probes.FP16_ATOL, f"{probes.FP16_ATOL:g}")
facts.record("fp16_rtol", probes.FP16_RTOL, f"{probes.FP16_RTOL:g}")
facts.record("batch_range", [probes.BATCH_MIN, probes.BATCH_MAX], f"{probes.BATCH_MIN} to {probes.BATCH_MAX}")
facts.record("vec_shape", list(models.VEC), " × ".join(map(str, models.VEC)))
facts.record("img_shape", list(models.IMG), " × ".join(map(str, models.IMG)))
facts.record_table(
    "flagged",
    ["Operator", "Precision", "Status"],
    [[r.claim.target, r.claim.precision, r.cell()] for r in results if not r.verified]
    or [["(none)", "", "every claim verified"]],
)
