"""Check, operator by operator, what the installed XNNPACK partitioner claims: the engine.

``XnnpackPartitioner`` decides what XNNPACK takes with one *config* class per
Edge operator; each names its operator (``target_name``) and the precisions it
accepts (``supported_precision_types()``: fp32, static int8, dynamic int8). A
claim is not a proof, so this module lowers a *probe* for every claim, a model
of one operator (for int8, between the quantize and dequantize nodes a
quantizer would leave around it), then checks that

1. the operator ended up inside an XNNPACK delegate (for int8: together with
   its dequantized inputs and quantized output, so XNNPACK ran it on int8 data),
2. the ``.pte`` file loads and runs on the ExecuTorch runtime, and
3. its output matches eager PyTorch within a stated tolerance.

The probes are data, in :mod:`.operator_probe_models`; this module has one engine,
:func:`probe`, which lowers probes side by side in as few programs as it can, runs
them and judges each. :func:`survey` is the plan of the operator support table
(every claim, the fp16 and dynamic-shape columns, every condition), and
:func:`run_probe` probes one claim, on a probe of the caller's if given. The claims
are read from the installed package each time (:func:`claims`), so a new config in a
later executorch shows up as a row without a probe, flagged.
``docs/build_steps/operator_support_table.py`` turns :func:`survey` into the table on
the operator support page.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from enum import StrEnum
from typing import Callable  # typing.Callable: Sphinx resolves it without an inventory

import torch

from xnnguide.core.delegation import calls, delegated_graphs, op_name, ops_outside_delegates
from xnnguide.recipe_checks import operator_probe_models as models
from xnnguide.recipe_checks.operator_probe_models import Condition, Probe

#: Column names of the three precisions, in table order.
FP32, INT8, DYNAMIC_INT8 = "fp32", "int8 (static)", "int8 (dynamic)"
PRECISIONS = (FP32, INT8, DYNAMIC_INT8)



class Status(StrEnum):
    """How a probe ended; the value is what a table cell shows. Only ``VERIFIED`` counts as support.

    No two differ by case only: a failed claim (``NOT_DELEGATED``) and an extra column's finding (``REFUSED``)
    read differently on the page, not just in capitals.
    """

    VERIFIED = "verified"
    #: A claim whose probe XNNPACK did not take: the claim fails.
    NOT_DELEGATED = "NOT DELEGATED"
    FAILED = "FAILED"
    MISMATCH = "WRONG OUTPUT"
    NO_PROBE = "NO PROBE"
    #: fp16 or dynamic shapes, which the partitioner declines for this operator: a finding, not a failure.
    REFUSED = "refused"
    #: Dynamic shapes that export made static: the column measured nothing dynamic.
    NOT_DYNAMIC = "NOT DYNAMIC"


VERIFIED, NOT_DELEGATED, FAILED, MISMATCH, NO_PROBE, REFUSED, NOT_DYNAMIC = Status
NOT_CLAIMED = "not claimed"

#: fp32: XNNPACK may round and sum in another order than eager PyTorch, and
#: approximates exp, tanh, gelu... with polynomials; outputs are of order 1.
FP32_ATOL = FP32_RTOL = 1e-4
#: int8: XNNPACK requantizes with its own rounding: one quantization step.
INT8_STEPS = 1.01
#: dynamic int8: XNNPACK picks activation parameters at run time, rounding
#: unlike the eager reference: 2% of the largest output, enough to catch a
#: wrong or missing operator.
DYNAMIC_RELATIVE = 0.02

#: Two more columns, measured for every operator with an fp32 claim: the same
#: probe in half precision (the configs' common dtype check admits float16
#: wherever it admits float32), and the same probe exported with a dynamic
#: batch dimension.
FP16, DYNAMIC_SHAPES = "fp16", "dynamic shapes"
EXTRA_COLUMNS = (FP16, DYNAMIC_SHAPES)
#: fp16 keeps about three significant digits; the reference is fp32 eager on the fp16-rounded inputs.
FP16_ATOL = FP16_RTOL = 1e-2
#: Dynamic probes: dimension 0 of every input is one ``torch.export.Dim`` with
#: this range, exported at size 2 (inputs of size 1 are doubled) and run at sizes 2 and 3.
BATCH_MIN, BATCH_MAX = 1, 4


@dataclass(frozen=True)
class Claim:
    """One operator and precision that a partitioner config says XNNPACK accepts."""

    target: str  # Edge operator name without namespace, e.g. "add.Tensor"
    config: str  # the config class, e.g. "AddConfig"
    precision: str  # one of PRECISIONS, or an extra column


@dataclass
class ProbeResult:
    """What happened when a claim was probed."""

    claim: Claim
    status: Status
    detail: str = ""
    max_abs_error: float | None = None
    tolerance: float | None = None

    @property
    def verified(self) -> bool:
        return self.status == VERIFIED

    def mark(self) -> str:
        """This result in the compact matrix: ✓ verified, ✗ a claim that failed its probe, – refused (an extra
        column's finding, not a failure)."""
        return {VERIFIED: "✓", REFUSED: "–"}.get(self.status, "✗")

    def cell(self) -> str:
        """The text of this result's table cell."""
        if self.status == VERIFIED:
            return f"verified (error {self.max_abs_error:.0e} ≤ {self.tolerance:.0e})"
        return f"{self.status}: {self.detail}" if self.detail else self.status


def claims() -> list[Claim]:
    """Every (operator, precision) pair of ``ALL_PARTITIONER_CONFIGS``, the partitioner's default configs."""
    from executorch.backends.xnnpack.partition.config import ALL_PARTITIONER_CONFIGS
    from executorch.backends.xnnpack.partition.config.xnnpack_config import ConfigPrecisionType

    names = {ConfigPrecisionType.FP32: FP32, ConfigPrecisionType.STATIC_QUANT: INT8,
             ConfigPrecisionType.DYNAMIC_QUANT: DYNAMIC_INT8}
    order = list(names)  # then any precision a later release adds: a column of its own, no probe, flagged
    return [Claim(config.target_name, config.__name__, names.get(precision, precision.name.lower()))
            for config in ALL_PARTITIONER_CONFIGS
            for precision in sorted(config().supported_precision_types(),
                                    key=lambda p: order.index(p) if p in names else len(order))]


#: The probe tables of the precisions a config can claim.
PROBES: dict[str, dict[str, Probe]] = {FP32: models.FP32_PROBES, INT8: models.INT8_PROBES,
                                       DYNAMIC_INT8: models.DYNAMIC_INT8_PROBES}


def probe_for(claim: Claim) -> Probe | None:
    """The probe of *claim*, or ``None`` when :mod:`.operator_probe_models` has none."""
    return PROBES.get(claim.precision, {}).get(claim.target)


#: The lowering flows (:func:`flow`): the one every recipe uses, and two that some probes need.
DEFAULT, LEGACY, SKIP_DIM_ORDER = "to_edge_transform_and_lower", "to_edge + to_backend", "skip_dim_order"


def flow(target: str) -> str:
    """How a probe of *target* is lowered (:data:`.operator_probe_models.LEGACY_FLOW` and ``SKIP_DIM_ORDER``)."""
    if target in models.LEGACY_FLOW:
        return LEGACY
    return SKIP_DIM_ORDER if target in models.SKIP_DIM_ORDER else DEFAULT


def lower(target: str, model: torch.nn.Module, inputs: models.Inputs, dynamic_shapes=None):
    """Export *model* and lower it to XNNPACK as a reader would, in the flow *target* needs; return the Edge program."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.backends.xnnpack.utils.configs import get_transform_passes, get_xnnpack_edge_compile_config
    from executorch.exir import to_edge, to_edge_transform_and_lower

    exported = torch.export.export(model, inputs, dynamic_shapes=dynamic_shapes)
    if flow(target) == LEGACY:
        edge = to_edge(exported, compile_config=get_xnnpack_edge_compile_config())
        return edge.transform(get_transform_passes()).to_backend(XnnpackPartitioner())
    return to_edge_transform_and_lower(
        exported, transform_passes=get_transform_passes(), partitioner=[XnnpackPartitioner()],
        compile_config=get_xnnpack_edge_compile_config(skip_dim_order=True) if flow(target) == SKIP_DIM_ORDER else None,
    )


def _symbolic(node: torch.fx.Node) -> bool:
    value = node.meta.get("val")
    return isinstance(value, torch.Tensor) and any(not isinstance(d, int) for d in value.shape)


@dataclass(frozen=True)
class DelegatedNode:
    """An operator inside a delegate, and the quantization around it."""

    target: str
    dequantized_input: bool  # some input comes from a dequantize node in the same delegate
    quantized_output: bool  # every user is a quantize node in the same delegate
    symbolic: bool = False  # some input has a symbolic (dynamic) dimension


@dataclass(frozen=True)
class Lowering:
    """What a lowered program delegated, read before ``to_executorch`` rewrites its graph."""

    outside: dict[str, int]
    inside: tuple[DelegatedNode, ...]

    @classmethod
    def read(cls, graph_module: torch.fx.GraphModule) -> Lowering:
        inside = tuple(
            DelegatedNode(op_name(node), any(calls(arg, "dequantize_") for arg in node.all_input_nodes),
                          bool(node.users) and all(calls(user, "quantize_", "choose_qparams") for user in node.users),
                          any(_symbolic(arg) for arg in node.all_input_nodes))
            for graph in delegated_graphs(graph_module) for node in graph.graph.nodes if node.op == "call_function"
        )
        return cls(dict(ops_outside_delegates(graph_module)), inside)


def delegation_problem(claim: Claim, lowering: Lowering) -> str:
    """Why *lowering* does not show *claim* delegated; ``""`` when it does.

    The operator must sit in an XNNPACK delegate and nowhere outside one. For
    static int8, its input must be dequantized and its output quantized
    inside that delegate (otherwise XNNPACK ran it in fp32); for dynamic int8,
    its input must be dequantized inside the delegate.
    """
    if lowering.outside.get(claim.target):
        count = lowering.outside[claim.target]
        return f"{count} node{'s' * (count != 1)} left outside XNNPACK"
    nodes = [node for node in lowering.inside if node.target == claim.target]
    if not nodes:
        return "the probe's graph has no such node"
    quantizing = claim.target.startswith(("quantize_", "dequantize_", "choose_qparams"))
    if claim.precision not in (INT8, DYNAMIC_INT8) or quantizing:
        return ""
    for node in nodes:
        if not node.dequantized_input:
            return "delegated, but not on int8 input"
        if claim.precision == INT8 and not node.quantized_output:
            return "delegated, but its output is not quantized inside XNNPACK"
    return ""


@dataclass
class ProbeRun:
    """What lowering and running one probe produced, before any verdict on a claim."""

    lowering: Lowering | None = None
    expected: torch.Tensor | None = None
    actual: torch.Tensor | None = None
    scale: float | None = None
    error: str = ""


class _SideBySide(torch.nn.Module):
    """Several probe models in one program, so that one lowering judges them all."""

    def __init__(self, models: list[torch.nn.Module], arities: list[int]):
        super().__init__()
        self.models, self.arities = torch.nn.ModuleList(models), arities

    def forward(self, *inputs: torch.Tensor):
        outputs, start = [], 0
        for model, arity in zip(self.models, self.arities):
            outputs.append(model(*inputs[start:start + arity]))
            start += arity
        return tuple(outputs)


def _batch(x: torch.Tensor, size: int) -> torch.Tensor:
    """*x* with dimension 0 grown to *size* by repeating its rows, flipped so that they differ."""
    return torch.cat([x, x.flip(-1)] * size)[:size]


def _lower_and_run(builds: dict[str, Callable[[], tuple]], runtime, half: bool = False,
                   dynamic_shapes: bool = False,
                   lower_only: bool = False) -> dict[str, list[ProbeRun]]:
    """Lower the probes *builds* (target -> builder) as one program, run it; per target, one run per input size.

    *half*: models and inputs in fp16, against fp32 eager on the same inputs. *dynamic_shapes*: dimension 0
    of every input is one ``torch.export.Dim``, run at sizes 2 and 3. *lower_only*: lowered, not run.
    """
    targets, sizes = list(builds), (() if lower_only else (2, 3) if dynamic_shapes else (None,))
    lowering, actual = None, []
    try:
        torch.manual_seed(0)
        models, inputs, arities, scales, references = [], [], [], [], []
        for target in targets:
            model, args, *scale = builds[target]()
            scales.append(scale[0] if scale else None)
            if half:
                args = tuple(x.half() for x in args)
                with torch.no_grad():
                    references.append(model(*[x.float() for x in args]))
                model = model.half()
            if dynamic_shapes:
                args = tuple(_batch(x, 2) for x in args)
            models.append(model)
            inputs.extend(args)
            arities.append(len(args))
        side = _SideBySide(models, arities)
        runs = [tuple(_batch(x, size) for x in inputs) if size else tuple(inputs) for size in sizes]
        with torch.no_grad():
            expected = [references or list(side(*args)) for args in runs]
        batch = torch.export.Dim("batch", min=BATCH_MIN, max=BATCH_MAX)
        probe = side if len(models) > 1 else models[0]  # alone, a probe is lowered as itself
        shapes = (tuple({0: batch} for _ in inputs),) if dynamic_shapes else None
        edge = lower(targets[0], probe, tuple(inputs), shapes)
        lowering = Lowering.read(edge.exported_program().graph_module)
        if runs:
            program = runtime.load_program(edge.to_executorch().buffer)  # alive while its method runs
            actual = [program.load_method("forward").execute(list(args)) for args in runs]
        message = ""
    except Exception as error:  # a probe that raises is a finding, not a crash; it fails its whole program
        message = traceback.format_exception_only(type(error), error)[-1].strip().splitlines()[0][:160]
    if message or not actual:
        return {target: [ProbeRun(lowering, error=message)] for target in targets}
    return {target: [ProbeRun(lowering, want[i], got[i], scales[i]) for want, got in zip(expected, actual)]
            for i, target in enumerate(targets)}


def judge(claim: Claim, run: ProbeRun) -> ProbeResult:
    """The verdict on *claim* from a probe run: delegated, ran, and matched eager (a run only lowered: delegated)."""
    if run.lowering is not None:
        problem = delegation_problem(claim, run.lowering)
        if problem:
            return ProbeResult(claim, NOT_DELEGATED, problem)
    if run.error:
        return ProbeResult(claim, FAILED, run.error)
    expected, actual = run.expected, run.actual
    if expected is None:
        return ProbeResult(claim, VERIFIED, "", 0.0, 0.0)
    if claim.precision != FP32 and run.scale is not None:
        tolerance = INT8_STEPS * run.scale
    else:
        atol, rtol = {FP32: (FP32_ATOL, FP32_RTOL), DYNAMIC_SHAPES: (FP32_ATOL, FP32_RTOL),
                      FP16: (FP16_ATOL, FP16_RTOL)}.get(claim.precision, (0.0, DYNAMIC_RELATIVE))
        tolerance = atol + rtol * expected.abs().max().item()
    if actual.shape != expected.shape:
        detail = f"output shape {tuple(actual.shape)}, eager {tuple(expected.shape)}"
        return ProbeResult(claim, MISMATCH, detail, None, tolerance)
    error = (actual.to(expected.dtype) - expected).abs().max().item()
    if not error <= tolerance:  # also catches NaN
        return ProbeResult(claim, MISMATCH, f"error {error:.1e} > {tolerance:.1e}", error, tolerance)
    return ProbeResult(claim, VERIFIED, "", error, tolerance)




def judge_runs(claim: Claim, runs: list[ProbeRun]) -> ProbeResult:
    """The verdict on *claim* over its runs (one per input size): the first that fails, else verified."""
    results = [judge(claim, run) for run in runs]
    failed = next((result for result in results if not result.verified), None)
    return failed or ProbeResult(claim, VERIFIED, "", max(r.max_abs_error for r in results), results[-1].tolerance)


def judge_finding(claim: Claim, runs: list[ProbeRun], dynamic_shapes: bool = False) -> ProbeResult:
    """:func:`judge_runs` for a probe that measures rather than tests a claim (fp16, dynamic shapes, a
    condition): a refusal is a finding, ``REFUSED``; a dynamic probe that export made static, ``NOT_DYNAMIC``."""
    first = judge(claim, runs[0])
    if first.status == NOT_DELEGATED:
        return ProbeResult(claim, REFUSED, first.detail)
    lowering = runs[0].lowering
    if dynamic_shapes and lowering and not any(n.symbolic for n in lowering.inside if n.target == claim.target):
        return ProbeResult(claim, NOT_DYNAMIC, "export made its input sizes static")
    return judge_runs(claim, runs)


def programs(probes: list[tuple[Claim, Probe]], side_by_side: bool) -> list[list[tuple[Claim, Probe]]]:
    """*probes* split into programs: one lowering flow each, at most one probe per operator; alone each
    unless *side_by_side*, where claims that share a probe share its program."""
    programs: list[list[tuple[Claim, Probe]]] = []
    for lowering_flow in (DEFAULT, LEGACY, SKIP_DIM_ORDER):
        members = [pair for pair in probes if flow(pair[0].target) == lowering_flow]
        if not side_by_side:
            programs += [[pair] for pair in members]
            continue
        rounds: list[list[tuple[Claim, Probe]]] = []
        for pair in members:
            free = next((r for r in rounds if all(other.target != pair[0].target for other, _ in r)), None)
            free.append(pair) if free is not None else rounds.append([pair])
        programs += rounds
    return programs


def probe(probes: list[tuple[Claim, Probe]], runtime, *, side_by_side: bool = True, finding: bool = False,
          retry_alone: bool = True, half: bool = False, dynamic_shapes: bool = False,
          lower_only: bool = False) -> list[ProbeResult]:
    """Lower, run and judge each ``(claim, probe)`` of *probes* on *runtime* (an ``executorch.runtime.Runtime``).

    The engine of this module. *side_by_side*: several probes in one program (:func:`programs`), else
    one program per probe, lowered once for claims that share one (``quantize_affine``,
    ``dequantize_affine`` and ``choose_qparams_affine`` all come from one dynamically quantized linear
    layer). *retry_alone*: a claim not verified side by side is probed again alone, since another probe's
    nodes may count against it. *finding*: judged by :func:`judge_finding`, else :func:`judge_runs`.
    *half*: models and inputs in fp16, against fp32 eager on the same inputs; *dynamic_shapes*: dimension 0
    of every input is one ``torch.export.Dim``, run at sizes 2 and 3; *lower_only*: lowered, not run.
    """
    options = dict(half=half, dynamic_shapes=dynamic_shapes, lower_only=lower_only)

    def verdict(claim: Claim, runs: list[ProbeRun]) -> ProbeResult:
        return judge_finding(claim, runs, dynamic_shapes) if finding else judge_runs(claim, runs)

    found: dict[int, ProbeResult] = {}
    shared: dict[tuple[Probe, str], list[ProbeRun]] = {}  # alone: the runs of a probe several claims share
    for program in programs(probes, side_by_side):
        if side_by_side:
            runs = _lower_and_run({claim.target: build for claim, build in program}, runtime, **options)
            found.update({id(pair): verdict(pair[0], runs[pair[0].target]) for pair in program})
            continue
        (claim, build), = program
        key = (build, flow(claim.target))
        if key not in shared:
            shared[key] = _lower_and_run({claim.target: build}, runtime, **options)[claim.target]
        found[id(program[0])] = verdict(claim, shared[key])
    if side_by_side and retry_alone:
        for pair in probes:
            if not found[id(pair)].verified:
                found[id(pair)] = probe([pair], runtime, side_by_side=False, finding=finding, **options)[0]
    return [found[id(pair)] for pair in probes]


def run_probe(claim: Claim, runtime, build: Probe | None = None) -> ProbeResult:
    """Lower, run and check the probe of *claim* alone on *runtime* (an ``executorch.runtime.Runtime``).

    *build* replaces the registered probe: a function returning ``(model, inputs)`` (for int8,
    ``(model, inputs, output_scale)``).
    """
    build = build or probe_for(claim)
    if build is None:
        return ProbeResult(claim, NO_PROBE, "this guide has no probe model for it yet")
    return probe([(claim, build)], runtime, side_by_side=False)[0]


@dataclass
class ConditionResult:
    """Whether the partitioner refused a condition's refused probe and took its accepted one."""

    condition: Condition
    refused: ProbeResult
    accepted: ProbeResult

    @property
    def confirmed(self) -> bool:
        return self.refused.status == REFUSED and self.accepted.verified

    def cell(self) -> str:
        c = self.condition
        if self.confirmed:
            return f"{c.text} ({c.refused_form}: refused; {c.accepted_form}: verified)"
        return (f"{c.text}: NOT CONFIRMED ({c.refused_form}: {self.refused.cell()}; "
                f"{c.accepted_form}: {self.accepted.cell()})")


@dataclass
class Survey:
    """Every result of the operator support table (:func:`survey`)."""

    claims: list[ProbeResult]  # one per claim, in the order of :func:`claims`
    extra: dict[str, list[ProbeResult]]  # per extra column, one per operator with an fp32 claim
    conditions: list[ConditionResult]  # one per condition of ``CONDITIONS``


def survey(runtime) -> Survey:
    """Probe everything the operator support table shows on *runtime* (an ``executorch.runtime.Runtime``).

    fp32 claims, the extra columns and the int8 claims of one operator between quantize and dequantize
    nodes side by side (such a probe carries its own quantization, so several share a program); the int8
    claims of the GEMMs alone (each is a model ``XNNPACKQuantizer`` quantized: side by side, some of them
    are not delegated and would be lowered again alone); conditions' refused forms lowered only, their
    accepted forms run, side by side without retries; an accepted form that is the fp32 probe reuses that
    claim's result.
    """
    every = claims()
    fp32 = [(c, models.FP32_PROBES[c.target]) for c in every if c.precision == FP32 and c.target in models.FP32_PROBES]
    quantized = [(c, probe_for(c)) for c in every if c.precision != FP32 and probe_for(c) is not None]
    gemms = [pair for pair in quantized if pair[0].target in models.GEMMS]
    explicit = [pair for pair in quantized if pair not in gemms]
    judged = dict(zip((c for c, _ in fp32 + explicit + gemms),
                      probe(fp32, runtime) + probe(explicit, runtime) + probe(gemms, runtime, side_by_side=False)))
    results = [judged.get(c) or run_probe(c, runtime) for c in every]

    targets = [c.target for c in every if c.precision == FP32]
    extra = {}
    for column in EXTRA_COLUMNS:
        dynamic_shapes = column == DYNAMIC_SHAPES
        builds = {**models.FP32_PROBES, **models.DYNAMIC_PROBES} if dynamic_shapes else models.FP32_PROBES
        pairs = [(Claim(t, "", column), builds[t]) for t in targets if t in builds]
        found = dict(zip((c.target for c, _ in pairs), probe(pairs, runtime, finding=True, half=column == FP16,
                                                             dynamic_shapes=dynamic_shapes)))
        extra[column] = [found.get(t) or ProbeResult(Claim(t, "", column), NO_PROBE) for t in targets]

    def forms(conditions: list[Condition], form: str, **options) -> list[ProbeResult]:
        pairs = [(Claim(c.target, "", FP32), getattr(c, form)) for c in conditions]
        return probe(pairs, runtime, finding=True, retry_alone=False, **options)

    static = [c for c in models.CONDITIONS if not c.dynamic_shapes]
    dynamic = [c for c in models.CONDITIONS if c.dynamic_shapes]
    refused = dict(zip(map(id, static + dynamic), forms(static, "refused", lower_only=True)
                       + forms(dynamic, "refused", lower_only=True, dynamic_shapes=True)))
    with_accepted = [c for c in models.CONDITIONS if c.accepted is not None]
    accepted = dict(zip(map(id, with_accepted), forms(with_accepted, "accepted")))
    by_target = {r.claim.target: r for r in results if r.claim.precision == FP32}
    missing = ProbeResult(Claim("", "", FP32), NO_PROBE)
    conditions = [ConditionResult(c, refused[id(c)], accepted.get(id(c)) or by_target.get(c.target, missing))
                  for c in models.CONDITIONS]
    return Survey(results, extra, conditions)


#: A precision the operator's config does not claim, in the compact matrix.
NOT_CLAIMED_MARK = "·"


def _by_operator(results: list[ProbeResult], extra: dict[str, list[ProbeResult]] | None,
                 conditions: list[ConditionResult] | None):
    """What both tables show, by operator: the result of each column (a precision or an extra column), each
    operator's config, its probed conditions, and the operators in table order."""
    columns: dict[str, dict[str, ProbeResult]] = {precision: {} for precision in PRECISIONS}
    configs: dict[str, str] = {}
    for result in results:
        columns.setdefault(result.claim.precision, {})[result.claim.target] = result
        configs[result.claim.target] = result.claim.config
    columns.update({name: {r.claim.target: r for r in found} for name, found in (extra or {}).items()})
    checked: dict[str, list[ConditionResult]] = {}
    for result in conditions or []:
        checked.setdefault(result.condition.target, []).append(result)
    return columns, configs, checked, sorted(configs, key=lambda name: name.lstrip("_"))


def matrix(results: list[ProbeResult], extra: dict[str, list[ProbeResult]] | None = None,
           conditions: list[ConditionResult] | None = None) -> tuple[list[str], list[list[str]]]:
    """The support table at a glance: its operators and precision columns, each cell a mark
    (:meth:`ProbeResult.mark`, or ``NOT_CLAIMED_MARK``), and how many probed conditions an operator has."""
    columns, _, checked, targets = _by_operator(results, extra, conditions)
    return (["Operator", *columns, "Conditions"],
            [[target, *(column[target].mark() if target in column else NOT_CLAIMED_MARK
                        for column in columns.values()), str(len(checked[target])) if target in checked else "-"]
             for target in targets])


def table(results: list[ProbeResult], extra: dict[str, list[ProbeResult]] | None = None,
          conditions: list[ConditionResult] | None = None) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the support table: one row per operator, one column per precision."""
    columns, configs, checked, targets = _by_operator(results, extra, conditions)
    header = ["Operator (Edge)", "Partitioner config", *columns, "Conditions, each probed"]
    return header, [[target, configs[target], *(column[target].cell() if target in column else NOT_CLAIMED
                                               for column in columns.values()),
                     "; ".join(result.cell() for result in checked.get(target, [])) or "-"]
                    for target in targets]
