"""Unit tests of the operator probes: the verdicts, the grouping into programs, the table, and real lowerings."""

from __future__ import annotations

import pytest
import torch

from xnnguide.recipe_checks import operator_probe_models as models
from xnnguide.recipe_checks import operator_probes as probes
from xnnguide.recipe_checks.operator_probes import Claim, DelegatedNode, Lowering, ProbeRun

ADD_FP32 = Claim("add.Tensor", "AddConfig", probes.FP32)
ADD_INT8 = Claim("add.Tensor", "AddConfig", probes.INT8)
LINEAR_DYNAMIC = Claim("linear.default", "LinearConfig", probes.DYNAMIC_INT8)


def test_claims_cover_every_installed_config_and_only_known_precisions():
    from executorch.backends.xnnpack.partition.config import ALL_PARTITIONER_CONFIGS

    found = probes.claims()
    assert {claim.target for claim in found} == {config.target_name for config in ALL_PARTITIONER_CONFIGS}
    assert {claim.precision for claim in found} <= set(probes.PRECISIONS)
    assert len(found) == len(set(found)), "a claim is listed twice"


def test_every_claim_of_this_executorch_has_a_probe():
    # A new config in a later executorch fails here first; the table would
    # show it as NO PROBE.
    missing = [claim for claim in probes.claims() if probes.probe_for(claim) is None]
    assert not missing, missing


def test_an_operator_left_outside_is_not_delegated():
    lowering = Lowering({"add.Tensor": 1}, ())
    assert "left outside" in probes.delegation_problem(ADD_FP32, lowering)


def test_a_probe_without_the_operator_is_not_delegated():
    lowering = Lowering({}, (DelegatedNode("mul.Tensor", False, False),))
    assert "no such node" in probes.delegation_problem(ADD_FP32, lowering)


def test_int8_claims_need_quantized_data_around_the_operator():
    fp32_inside = Lowering({}, (DelegatedNode("add.Tensor", False, False),))
    assert probes.delegation_problem(ADD_FP32, fp32_inside) == ""
    assert "not on int8 input" in probes.delegation_problem(ADD_INT8, fp32_inside)
    unquantized_output = Lowering({}, (DelegatedNode("add.Tensor", True, False),))
    assert "output is not quantized" in probes.delegation_problem(ADD_INT8, unquantized_output)
    assert probes.delegation_problem(ADD_INT8, Lowering({}, (DelegatedNode("add.Tensor", True, True),))) == ""
    # Dynamic quantization returns fp32: only the input must be dequantized.
    dynamic = Lowering({}, (DelegatedNode("linear.default", True, False),))
    assert probes.delegation_problem(LINEAR_DYNAMIC, dynamic) == ""


def delegated_run(expected, actual, scale=None, error=""):
    lowering = Lowering({}, (DelegatedNode("add.Tensor", True, True),))
    return ProbeRun(lowering=lowering, expected=expected, actual=actual, scale=scale, error=error)


def test_judge_verifies_within_tolerance_and_flags_the_rest():
    expected = torch.ones(2, 3)
    assert probes.judge(ADD_FP32, delegated_run(expected, expected + 1e-6)).verified
    wrong = probes.judge(ADD_FP32, delegated_run(expected, expected + 0.1))
    assert wrong.status == probes.MISMATCH and "> " in wrong.detail
    nan = probes.judge(ADD_FP32, delegated_run(expected, expected * float("nan")))
    assert nan.status == probes.MISMATCH
    shape = probes.judge(ADD_FP32, delegated_run(expected, torch.ones(3, 2)))
    assert shape.status == probes.MISMATCH and "shape" in shape.detail
    failed = probes.judge(ADD_FP32, delegated_run(None, None, error="RuntimeError: boom"))
    assert failed.status == probes.FAILED and "boom" in failed.cell()


def test_int8_tolerance_is_one_quantization_step():
    expected = torch.zeros(4)
    assert probes.judge(ADD_INT8, delegated_run(expected, expected + 0.009, scale=0.01)).verified
    assert not probes.judge(ADD_INT8, delegated_run(expected, expected + 0.02, scale=0.01)).verified


def test_unknown_operator_is_reported_without_a_probe():
    result = probes.run_probe(Claim("no_such_op.default", "NoConfig", probes.FP32), runtime=None)
    assert result.status == probes.NO_PROBE


def test_table_keeps_every_operator_and_flags_failures():
    results = [
        probes.ProbeResult(ADD_FP32, probes.VERIFIED, "", 0.0, 1e-4),
        probes.ProbeResult(ADD_INT8, probes.NOT_DELEGATED, "1 node left outside XNNPACK"),
        probes.ProbeResult(LINEAR_DYNAMIC, probes.FAILED, "RuntimeError: x"),
    ]
    header, rows = probes.table(results)
    assert header[2:5] == list(probes.PRECISIONS)
    by_operator = {row[0]: row for row in rows}
    assert by_operator["add.Tensor"][2].startswith("verified")
    assert by_operator["add.Tensor"][3] == "NOT DELEGATED: 1 node left outside XNNPACK"
    assert by_operator["add.Tensor"][4] == probes.NOT_CLAIMED
    assert by_operator["linear.default"][4].startswith("FAILED")



def test_the_matrix_marks_each_cell_and_counts_the_conditions():
    condition = models.CONDITIONS[0]
    claim = Claim(condition.target, "AddConfig", probes.FP32)
    verified = probes.ProbeResult(claim, probes.VERIFIED, "", 0.0, 1e-4)
    refused = probes.ProbeResult(claim, probes.REFUSED, "1 node left outside XNNPACK")
    failed = probes.ProbeResult(Claim(condition.target, "AddConfig", probes.INT8), probes.NOT_DELEGATED, "x")
    extra = {probes.FP16: [verified], probes.DYNAMIC_SHAPES: [refused]}
    header, rows = probes.matrix([verified, failed], extra, [probes.ConditionResult(condition, refused, verified)])
    assert header == ["Operator", *probes.PRECISIONS, *probes.EXTRA_COLUMNS, "Conditions"]
    assert rows == [[condition.target, "✓", "✗", probes.NOT_CLAIMED_MARK, "✓", "–", "1"]]

@pytest.fixture(scope="module")
def runtime():
    from executorch.runtime import Runtime

    return Runtime.get()


def test_real_probes_pass_and_fail_as_they_should(runtime):
    relu = Claim("relu.default", "ReLUConfig", probes.FP32)
    assert probes.run_probe(relu, runtime).verified
    softmax = Claim("_softmax.default", "SoftmaxConfig", probes.FP32)
    rejected = probes.run_probe(softmax, runtime, build=lambda: (torch.nn.Softmax(dim=0), (torch.randn(4, 8),)))
    assert rejected.status == probes.NOT_DELEGATED and "left outside" in rejected.detail


def test_a_condition_is_confirmed_only_by_a_refusal_and_a_verified_acceptance():
    condition = next(c for c in models.CONDITIONS if c.target == "pow.Tensor_Scalar")
    pow_fp32 = Claim("pow.Tensor_Scalar", "PowConfig", probes.FP32)
    refused = probes.ProbeResult(pow_fp32, probes.REFUSED, "1 node left outside XNNPACK")
    verified = probes.ProbeResult(pow_fp32, probes.VERIFIED, "", 0.0, 1e-4)
    assert probes.ConditionResult(condition, refused, verified).confirmed
    taken = probes.ConditionResult(condition, verified, verified)  # the "refused" form was delegated
    assert not taken.confirmed and "NOT CONFIRMED" in taken.cell()
    assert not probes.ConditionResult(condition, refused, refused).confirmed


def test_table_shows_the_extra_columns_and_the_probed_conditions():
    condition = models.CONDITIONS[0]
    claim = Claim(condition.target, "AddConfig", probes.FP32)
    verified = probes.ProbeResult(claim, probes.VERIFIED, "", 0.0, 1e-4)
    refused = probes.ProbeResult(claim, probes.REFUSED, "1 node left outside XNNPACK")
    extra = {probes.FP16: [verified], probes.DYNAMIC_SHAPES: [refused]}
    header, rows = probes.table([verified], extra, [probes.ConditionResult(condition, refused, verified)])
    assert header[-3:-1] == list(probes.EXTRA_COLUMNS)
    assert rows[0][-3].startswith("verified") and rows[0][-2].startswith(probes.REFUSED)
    assert rows[0][-1].startswith(condition.text) and "refused" in rows[0][-1]


def test_real_condition_probes_are_refused_and_taken(runtime):
    def probe(condition, form, **options):
        claim = Claim(condition.target, "", probes.FP32)
        return probes.probe([(claim, getattr(condition, form))], runtime, side_by_side=False, finding=True, **options)[0]

    # pow: the docstring says "powers of two", the code takes only the integer 2.
    pow_condition = next(c for c in models.CONDITIONS if c.target == "pow.Tensor_Scalar")
    assert probe(pow_condition, "refused", lower_only=True).status == probes.REFUSED
    # max_pool2d: ceil mode is refused only with dynamic shapes.
    ceil = next(c for c in models.CONDITIONS if c.target == "max_pool2d.default" and c.dynamic_shapes)
    assert probe(ceil, "accepted").verified
    assert probe(ceil, "refused", lower_only=True, dynamic_shapes=True).status == probes.REFUSED


def test_probes_are_grouped_into_programs_of_one_flow_with_each_operator_once():
    def pair(target, precision=probes.FP32):
        return Claim(target, "", precision), models.FP32_PROBES.get(target, models.FP32_PROBES["relu.default"])

    # Two probes of add (two conditions of one operator), one of relu, two of the legacy flow, one that skips
    # dim-order ops: each flow its own programs, add's second probe in a second program.
    pairs = [pair("add.Tensor"), pair("relu.default"), pair("add.Tensor"), pair("addmm.default"),
             pair("mm.default"), pair("clone.default")]
    programs = probes.programs(pairs, side_by_side=True)
    assert [[claim.target for claim, _ in program] for program in programs] == [
        ["add.Tensor", "relu.default"], ["add.Tensor"], ["addmm.default", "mm.default"], ["clone.default"]]
    # Alone: one program per probe, every flow still in order.
    alone = probes.programs(pairs, side_by_side=False)
    assert [len(program) for program in alone] == [1] * len(pairs)
    assert [program[0] for program in alone] == [pairs[0], pairs[1], pairs[2], pairs[3], pairs[4], pairs[5]]


def test_claims_that_share_a_probe_are_lowered_once(monkeypatch):
    # quantize_affine, dequantize_affine and choose_qparams_affine are all judged on one quantized linear layer.
    lowered = []

    def fake_lower_and_run(builds, runtime, **options):
        lowered.append(list(builds))
        return {target: [probes.ProbeRun(Lowering({}, (DelegatedNode(target, True, False),)))] for target in builds}

    monkeypatch.setattr(probes, "_lower_and_run", fake_lower_and_run)
    shared = models.DYNAMIC_INT8_PROBES["quantize_affine.default"]
    pairs = [(Claim(target, "", probes.DYNAMIC_INT8), shared)
             for target in ("quantize_affine.default", "dequantize_affine.default", "choose_qparams_affine.default")]
    results = probes.probe(pairs, runtime=None, side_by_side=False)
    assert lowered == [["quantize_affine.default"]], lowered
    assert [r.claim for r in results] == [c for c, _ in pairs]


def test_no_two_statuses_differ_by_case_only():
    # A failed claim and an extra column's finding must read differently on the page, not just in capitals.
    folded = [status.value.casefold() for status in probes.Status]
    assert len(set(folded)) == len(folded), sorted(folded)
    assert probes.REFUSED is probes.Status.REFUSED and f"{probes.NOT_DELEGATED}" == "NOT DELEGATED"
