"""
Export with each XNNPACK recipe type
====================================

``executorch.export.export`` takes a model, a list of example inputs and an
``ExportRecipe``, and runs every step from ``torch.export`` to the ``.pte``
in one call. ExecuTorch's XNNPACK backend ships one recipe per
``XNNPackRecipeType``. This recipe runs each type on a small CNN, checks
each program on the ExecuTorch runtime, reads from each program what
XNNPACK took, and lowers the same model by hand beside it, with the
transform passes the recipes leave out.
"""

# %%
# A model every type can quantize
# -------------------------------
# A convolution, max pooling and two linear layers. The first linear layer
# takes 512 features and the second 64, so the torchao types, which quantize
# linear weights in groups of 32, can quantize both. The list of inputs is
# the example (its first entry, which ``torch.export`` traces with) and the
# calibration data of the static int8 types (all of them).

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
# One call
# --------
# The shortest correct use: pick a type, get its recipe, export, write the
# program. ``export`` returns an ``ExportSession`` that holds every stage's
# result.

# [start one_call]
from executorch.backends.xnnpack.recipes import XNNPackRecipeType
from executorch.export import ExportRecipe, export

session = export(model, sample_inputs, ExportRecipe.get_recipe(XNNPackRecipeType.FP32))
with open("small_cnn_recipe_xnnpack_fp32.pte", "wb") as file:
    file.write(session.get_pte_buffer())
# [end one_call]

# %%
# What each type asks for
# -----------------------
# A recipe is a dataclass, so what a type does can be read from it rather
# than guessed from its name: the quantizer's configuration for the PT2E
# types, the torchao configuration for the others. Note the last type: its
# name ends in ``PER_TENSOR``, but its weights are quantized in groups of 32.

# [start describe]
from executorch.export import ExportRecipe


def describe(recipe: ExportRecipe) -> str:
    """What a recipe quantizes and how, read from its fields."""
    quantization = recipe.quantization_recipe
    if quantization is None:
        return "no quantization (fp32)"
    if quantization.quantizers:
        config = quantization.quantizers[0].global_config
        activations = (
            "dynamic" if config.input_activation.is_dynamic else "static (calibrated)"
        )
        return (
            f"PT2E: int8 weights {config.weight.qscheme}, "
            f"int8 activations {activations}"
        )
    config = quantization.ao_quantization_configs[0].ao_base_config
    return (
        f"torchao {type(config).__name__}: "
        f"{config.weight_dtype} weights {config.weight_granularity}"
    )


for recipe_type in XNNPackRecipeType:
    print(f"{recipe_type.name}: {describe(ExportRecipe.get_recipe(recipe_type))}")
# [end describe]

# sphinx_gallery_start_ignore
from torchao.quantization.granularity import PerGroup

from xnnguide.core import facts

recipes = {
    recipe_type: ExportRecipe.get_recipe(recipe_type)
    for recipe_type in XNNPackRecipeType
}
misnamed = recipes[XNNPackRecipeType.TORCHAO_INT8_DYNAMIC_ACT_INT4_WEIGHT_PER_TENSOR]
misnamed_granularity = misnamed.quantization_recipe.ao_quantization_configs[
    0
].ao_base_config.weight_granularity
assert isinstance(misnamed_granularity, PerGroup), misnamed_granularity
facts.record("per_tensor_group_size", misnamed_granularity.group_size)
facts.record("recipe_type_count", len(recipes))
facts.record(
    "recipe_type_names", ", ".join(recipe_type.name for recipe_type in recipes)
)
# The gap the page is about: the shipped recipes run no transform passes.
for recipe_type, recipe in recipes.items():
    assert not recipe.lowering_recipe.edge_transform_passes, (
        f"{recipe_type.name} now runs transform passes"
    )
    assert not recipe.lowering_recipe.edge_manager_transform_passes, recipe_type.name
facts.record_table(
    "what_each_type_does",
    ["XNNPackRecipeType", "Value", "What its recipe asks for"],
    [
        [recipe_type.name, recipe_type.value, describe(recipe).replace("torch.", "")]
        for recipe_type, recipe in recipes.items()
    ],
)
# sphinx_gallery_end_ignore

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
from executorch.exir.backend.utils import get_delegates

from xnnguide.recipe_checks import quantization

quantization.record_min_sqnr(MIN_SQNR_DB)
assert fp32_output.abs().max().item() > 0.05, (
    "outputs too small for atol=1e-5 to mean anything"
)
assert set(results) == set(XNNPackRecipeType)

rows, identical_types = [], []
for recipe_type, (recipe_result, hand_result) in results.items():
    rows.append(
        [
            recipe_type.name,
            "SmallCNN",
            recipe_result["nodes"],
            recipe_result["check"],
            f"{recipe_result['bytes']:,}",
            f"{hand_result['nodes']} nodes, {hand_result['check']}, {hand_result['bytes']:,} bytes",
        ]
    )
    # The recipe and the hand flow quantize alike: their programs agree far better than either with fp32.
    identical = torch.equal(hand_result["output"], recipe_result["output"])
    identical_types.append(identical)
    if recipe_type is XNNPackRecipeType.FP32:
        torch.testing.assert_close(
            recipe_result["output"], hand_result["output"], atol=1e-6, rtol=1e-6
        )
    else:
        agreement = compute_error(hand_result["output"], recipe_result["output"]).item()
        assert agreement >= MIN_SQNR_DB, (recipe_type, agreement)
    facts.record(
        f"bytes_{recipe_type.name.lower()}",
        recipe_result["bytes"],
        f"{recipe_result['bytes']:,} bytes",
    )
    facts.record(f"check_{recipe_type.name.lower()}", recipe_result["check"])
facts.record(
    "identical_outputs",
    sum(identical_types),
    f"{sum(identical_types)} of {len(identical_types)}",
)
facts.record_table(
    "every_type",
    [
        "Recipe type",
        "Model",
        "Delegated / total nodes",
        "Error or SQNR (vs its eager model)",
        ".pte bytes",
        "Hand flow (transform passes on)",
    ],
    rows,
)
fp32_bytes = results[XNNPackRecipeType.FP32][0]["bytes"]
int4_bytes = results[
    XNNPackRecipeType.TORCHAO_INT8_DYNAMIC_ACT_INT4_WEIGHT_PER_CHANNEL
][0]["bytes"]
assert int4_bytes < fp32_bytes / 3, (int4_bytes, fp32_bytes)

# The probe behind "PER_TENSOR means groups of 32": the block sizes of the weight
# dequantize nodes inside the delegates of each torchao program.


def weight_block_sizes(graph_module) -> list[list[int]]:
    sizes = []
    for node in get_delegates(graph_module.graph):
        delegate_graph = getattr(graph_module, node.target).original_module.graph
        for inner in delegate_graph.nodes:
            if (
                "dequantize_affine" in str(inner.target)
                and inner.args[0].op == "placeholder"
                and "weight" in inner.args[0].name
            ):
                sizes.append(list(inner.args[1]))
    return sizes


per_tensor_blocks = weight_block_sizes(
    results[XNNPackRecipeType.TORCHAO_INT8_DYNAMIC_ACT_INT4_WEIGHT_PER_TENSOR][0][
        "graph_module"
    ]
)
per_channel_blocks = weight_block_sizes(
    results[XNNPackRecipeType.TORCHAO_INT8_DYNAMIC_ACT_INT4_WEIGHT_PER_CHANNEL][0][
        "graph_module"
    ]
)
# fc1 and fc2: one scale per 32 weights, against one per row (512 and 64 wide).
assert per_tensor_blocks == [[1, 32], [1, 32]], per_tensor_blocks
assert per_channel_blocks == [[1, 512], [1, 64]], per_channel_blocks
facts.record(
    "per_channel_block_sizes",
    per_channel_blocks,
    ", ".join(f"{b}" for b in per_channel_blocks),
)
facts.record(
    "per_tensor_block_sizes",
    per_tensor_blocks,
    ", ".join(f"{b}" for b in per_tensor_blocks),
)
# sphinx_gallery_end_ignore

# %%
# Recipes for a phone
# -------------------
# ``executorch.export.target_recipes`` has two more functions,
# ``get_android_recipe()`` and ``get_ios_recipe()``. Neither is an XNNPACK
# recipe: each combines a vendor backend (Qualcomm's QNN, Apple's Core ML)
# with ``XNNPackRecipeType.FP32`` as the fallback. By default
# ``get_android_recipe()`` downloads Qualcomm's SDK; setting ``QNN_SDK_ROOT``
# to an empty string stops that, and shows what it needs instead.

# sphinx_gallery_start_ignore
# What the default call does here, without letting it reach the network: the
# installer is replaced by one that only notes it was asked, and fails as an
# offline download does.
from executorch.backends.qualcomm.utils import qnn_sdk_setup

install_calls = []
real_install = qnn_sdk_setup._install_qnn_sdk
qnn_sdk_setup._install_qnn_sdk = lambda: install_calls.append("install") or False
saved_root = os.environ.pop("QNN_SDK_ROOT", None)
try:
    get_android_recipe_default_error = None
    from executorch.export.target_recipes import get_android_recipe as probe_android

    try:
        probe_android()
    except Exception as error:  # noqa: BLE001 - the probe records whatever it raises
        get_android_recipe_default_error = error
finally:
    qnn_sdk_setup._install_qnn_sdk = real_install
    if saved_root is not None:
        os.environ["QNN_SDK_ROOT"] = saved_root
assert install_calls == ["install"], install_calls
assert isinstance(get_android_recipe_default_error, RuntimeError), (
    get_android_recipe_default_error
)
facts.record(
    "android_default_error",
    f"{type(get_android_recipe_default_error).__name__}: "
    f"{str(get_android_recipe_default_error).splitlines()[0]}",
)
facts.record("android_default_downloads", True, "tries to download Qualcomm's SDK")
# sphinx_gallery_end_ignore

# [start phones]
from executorch.export.target_recipes import get_android_recipe, get_ios_recipe

os.environ["QNN_SDK_ROOT"] = (
    ""  # do not let get_android_recipe() download Qualcomm's SDK
)
try:
    get_android_recipe()
except ValueError as error:
    android_error = error
    print(f"get_android_recipe(): {type(error).__name__}: {error}")

ios_recipe = get_ios_recipe()
ios_partitioners = [type(p).__name__ for p in ios_recipe.lowering_recipe.partitioners]
print(f"get_ios_recipe(): {ios_recipe.name}, partitioners {ios_partitioners}")
# [end phones]

# sphinx_gallery_start_ignore
facts.record("android_error", f"{type(android_error).__name__}: {android_error}")
facts.record("ios_recipe_name", ios_recipe.name)
facts.record("ios_partitioners", ", ".join(ios_partitioners))
assert ios_partitioners[-1] == "XnnpackPartitioner", ios_partitioners
# sphinx_gallery_end_ignore
