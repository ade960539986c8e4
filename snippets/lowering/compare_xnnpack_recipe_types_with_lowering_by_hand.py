"""
XNNPACK recipe types beside lowering by hand
============================================

Each ``XNNPackRecipeType`` of ``executorch.export`` quantizes and lowers in
one call (:doc:`export_with_xnnpack_recipe_types`). This recipe lowers the
same small CNN the way the rest of this site does, quantizing with the
settings each type uses and adding the XNNPACK transform passes the
recipes leave out, and runs both programs of every type on the ExecuTorch
runtime.
"""

# %%
# The model
# ---------
# The CNN of the one-call recipe: a convolution, max pooling and two linear
# layers; the list of inputs is both the example and the calibration data.

# [gallery-only model]
# [start model]
import torch


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.fc1 = torch.nn.Linear(8 * 8 * 8, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)
        return self.fc2(torch.relu(self.fc1(x.flatten(1))))


torch.manual_seed(0)
model = SmallCNN().eval()
sample_inputs = [(torch.randn(1, 3, 16, 16),) for _ in range(8)]
# [end model]


# %%
# The same model, by hand
# -----------------------
# The flow the rest of this site teaches: quantize (PT2E or torchao, with the
# settings each recipe type uses), export, ``to_edge_transform_and_lower``
# with the XNNPACK transform passes and partitioner. It returns the lowered
# program and the eager model the program must match: the quantized one,
# when the type quantizes.

# [start by_hand]
import copy

from executorch.backends.xnnpack.recipes import XNNPackRecipeType
from executorch.export import ExportRecipe, export

from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from torchao.quantization import (
    Int8DynamicActivationIntxWeightConfig,
    PerAxis,
    PerGroup,
    quantize_,
)
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

PT2E_SETTINGS = {  # (is_per_channel, is_dynamic)
    XNNPackRecipeType.PT2E_INT8_DYNAMIC_PER_CHANNEL: (True, True),
    XNNPackRecipeType.PT2E_INT8_STATIC_PER_CHANNEL: (True, False),
    XNNPackRecipeType.PT2E_INT8_STATIC_PER_TENSOR: (False, False),
}
TORCHAO_WEIGHTS = {
    XNNPackRecipeType.TORCHAO_INT8_DYNAMIC_ACT_INT4_WEIGHT_PER_CHANNEL: PerAxis(axis=0),
    XNNPackRecipeType.TORCHAO_INT8_DYNAMIC_ACT_INT4_WEIGHT_PER_TENSOR: PerGroup(32),
}


def lower_by_hand(recipe_type: XNNPackRecipeType):
    example = sample_inputs[0]
    eager = model
    if recipe_type in PT2E_SETTINGS:
        is_per_channel, is_dynamic = PT2E_SETTINGS[recipe_type]
        quantizer = XNNPACKQuantizer().set_global(
            get_symmetric_quantization_config(
                is_per_channel=is_per_channel, is_dynamic=is_dynamic
            )
        )
        prepared = prepare_pt2e(torch.export.export(model, example).module(), quantizer)
        with torch.no_grad():
            for inputs in (
                sample_inputs
            ):  # calibrates a static scheme; a dynamic one observes its weights
                prepared(*inputs)
        eager = convert_pt2e(prepared)
    elif recipe_type in TORCHAO_WEIGHTS:
        eager = copy.deepcopy(model)
        quantize_(
            eager,
            Int8DynamicActivationIntxWeightConfig(
                weight_dtype=torch.int4, weight_granularity=TORCHAO_WEIGHTS[recipe_type]
            ),
        )
    lowered = to_edge_transform_and_lower(
        torch.export.export(eager, example),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )
    return lowered, eager


# [end by_hand]

# %%
# Every type, both ways, on the runtime
# -------------------------------------
# Each program is written to a ``.pte``, loaded by the ExecuTorch runtime and
# run on an input neither flow saw. fp32 programs must match eager PyTorch
# to ``atol=rtol=1e-5``; a quantized program is held to the SQNR floor of
# every int8 check on this site, against the quantized eager model it came
# from. For a recipe, that model is the output of its ``QUANTIZE`` stage
# (which passes the torchao types' already quantized model through, and the
# fp32 model too). Delegated and non-delegated node counts come from
# ``get_delegation_info`` on each lowered graph.

# [start every_type]
import os

from executorch.devtools.backend_debug import get_delegation_info
from executorch.export import StageType
from executorch.runtime import Runtime
from torchao.quantization.utils import compute_error

MIN_SQNR_DB = 10.0  # a quantized .pte against its quantized eager model
runtime = Runtime.get()
test_input = torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(1))
with torch.no_grad():
    fp32_output = model(test_input)


def measure(info, executorch_buffer: bytes, eager, path: str) -> dict:
    """Write and run one program; *info* is its ``get_delegation_info``, taken before
    serialisation."""
    with open(path, "wb") as file:
        file.write(executorch_buffer)
    program = runtime.load_program(path)  # keep it referenced while its method runs
    output = program.load_method("forward").execute([test_input])[0]
    with torch.no_grad():
        expected = eager(test_input)
    if eager is model:
        torch.testing.assert_close(output, expected, atol=1e-5, rtol=1e-5)
        check = f"max abs error {(output - expected).abs().max().item():.1e}"
    elif torch.equal(output, expected):
        check = "identical to its eager model"
    else:
        sqnr = compute_error(expected, output).item()
        assert sqnr >= MIN_SQNR_DB, (
            f"{path}: SQNR {sqnr:.1f} dB against its quantized eager model"
        )
        check = f"SQNR {sqnr:.1f} dB"
    return {
        "nodes": f"{info.num_delegated_nodes} / "
        f"{info.num_delegated_nodes + info.num_non_delegated_nodes}",
        "check": check,
        "vs fp32": compute_error(fp32_output, output).item(),
        "bytes": os.path.getsize(path),
        "output": output,
    }


results = {}
for recipe_type in XNNPackRecipeType:
    session = export(model, sample_inputs, ExportRecipe.get_recipe(recipe_type))
    stages = session.get_stage_artifacts()
    recipe_result = measure(
        stages[StageType.TO_EDGE_TRANSFORM_AND_LOWER].get_context("delegation_info"),
        session.get_pte_buffer(),
        stages[StageType.QUANTIZE].data["forward"],
        f"small_cnn_recipe_{recipe_type.value}.pte",
    )
    lowered, hand_eager = lower_by_hand(recipe_type)
    hand_info = get_delegation_info(lowered.exported_program().graph_module)
    hand_result = measure(
        hand_info,
        lowered.to_executorch().buffer,
        hand_eager,
        f"small_cnn_by_hand_{recipe_type.value}.pte",
    )
    results[recipe_type] = (recipe_result, hand_result)
    recipe_result["graph_module"] = (
        session.get_edge_program_manager().exported_program().graph_module
    )
    print(f"{recipe_type.name}")
    for flow, result in (("recipe", recipe_result), ("by hand", hand_result)):
        print(
            f"  {flow:8} delegated/total nodes {result['nodes']:>7}, "
            f"{result['check']}, "
            f"{result['vs fp32']:.1f} dB from fp32, {result['bytes']:,} bytes"
        )
# [end every_type]

# sphinx_gallery_start_ignore
from xnnguide.core import facts
from xnnguide.recipe_checks import quantization

quantization.record_min_sqnr(MIN_SQNR_DB)
assert fp32_output.abs().max().item() > 0.05, "outputs too small for atol=1e-5 to mean anything"
assert set(results) == set(XNNPackRecipeType)
rows, identical_types = [], []
for recipe_type, (recipe_result, hand_result) in results.items():
    rows.append([recipe_type.name, "SmallCNN", recipe_result["nodes"], recipe_result["check"],
                 f"{recipe_result['bytes']:,}",
                 f"{hand_result['nodes']} nodes, {hand_result['check']}, {hand_result['bytes']:,} bytes"])
    # The recipe and the hand flow quantize alike: their programs agree far better than either with fp32.
    identical_types.append(torch.equal(hand_result["output"], recipe_result["output"]))
    if recipe_type is XNNPackRecipeType.FP32:
        torch.testing.assert_close(recipe_result["output"], hand_result["output"], atol=1e-6, rtol=1e-6)
    else:
        agreement = compute_error(hand_result["output"], recipe_result["output"]).item()
        assert agreement >= MIN_SQNR_DB, (recipe_type, agreement)
    key = recipe_type.name.lower()
    facts.record(f"bytes_{key}", recipe_result["bytes"], f"{recipe_result['bytes']:,} bytes")
    facts.record(f"check_{key}", recipe_result["check"])
facts.record("identical_outputs", sum(identical_types), f"{sum(identical_types)} of {len(identical_types)}")
facts.record_table("every_type", ["Recipe type", "Model", "Delegated / total nodes",
                                  "Error or SQNR (vs its eager model)", ".pte bytes",
                                  "Hand flow (transform passes on)"], rows)
by_type = {recipe_type: recipe_result for recipe_type, (recipe_result, _) in results.items()}
per_channel_type = XNNPackRecipeType.TORCHAO_INT8_DYNAMIC_ACT_INT4_WEIGHT_PER_CHANNEL
per_tensor_type = XNNPackRecipeType.TORCHAO_INT8_DYNAMIC_ACT_INT4_WEIGHT_PER_TENSOR
assert by_type[per_channel_type]["bytes"] < by_type[XNNPackRecipeType.FP32]["bytes"] / 3


def weight_block_sizes(graph_module) -> list[list[int]]:
    """The probe behind "PER_TENSOR means groups of 32": the block sizes of the weight dequantize nodes
    inside each delegate (each executorch_call_delegate's first argument names its lowered module)."""
    sizes = []
    for node in graph_module.graph.nodes:
        if node.target is torch.ops.higher_order.executorch_call_delegate:
            for inner in getattr(graph_module, node.args[0].target).original_module.graph.nodes:
                if ("dequantize_affine" in str(inner.target) and inner.args[0].op == "placeholder"
                        and "weight" in inner.args[0].name):
                    sizes.append(list(inner.args[1]))
    return sizes


per_tensor_blocks = weight_block_sizes(by_type[per_tensor_type]["graph_module"])
per_channel_blocks = weight_block_sizes(by_type[per_channel_type]["graph_module"])
# fc1 and fc2: one scale per 32 weights, against one per row (512 and 64 wide).
assert per_tensor_blocks == [[1, 32], [1, 32]], per_tensor_blocks
assert per_channel_blocks == [[1, 512], [1, 64]], per_channel_blocks
facts.record("per_channel_block_sizes", per_channel_blocks, ", ".join(f"{b}" for b in per_channel_blocks))
facts.record("per_tensor_block_sizes", per_tensor_blocks, ", ".join(f"{b}" for b in per_tensor_blocks))
# sphinx_gallery_end_ignore
