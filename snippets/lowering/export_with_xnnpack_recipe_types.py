"""
Export with each XNNPACK recipe type
====================================

``executorch.export.export`` takes a model, a list of example inputs and an
``ExportRecipe``, and runs every step from ``torch.export`` to the ``.pte``
in one call. ExecuTorch's XNNPACK backend ships one recipe per
``XNNPackRecipeType``. This recipe exports a small CNN with one of them and
reads from each recipe what it asks for. :doc:`compare_xnnpack_recipe_types_with_lowering_by_hand`
lowers the same model by hand beside each type, and
:doc:`export_recipes_for_android_and_ios` reads the two phone recipes.
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
from xnnguide.core import facts

recipes = {
    recipe_type: ExportRecipe.get_recipe(recipe_type)
    for recipe_type in XNNPackRecipeType
}
misnamed = recipes[XNNPackRecipeType.TORCHAO_INT8_DYNAMIC_ACT_INT4_WEIGHT_PER_TENSOR]
misnamed_granularity = misnamed.quantization_recipe.ao_quantization_configs[
    0
].ao_base_config.weight_granularity
assert type(misnamed_granularity).__name__ == "PerGroup", misnamed_granularity
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
# The program of the one call runs on the ExecuTorch runtime and matches eager
# PyTorch:

from executorch.runtime import Runtime

program = Runtime.get().load_program("small_cnn_recipe_xnnpack_fp32.pte")
example = sample_inputs[0]
pte_output = program.load_method("forward").execute(list(example))[0]
with torch.no_grad():
    torch.testing.assert_close(pte_output, model(*example), atol=1e-5, rtol=1e-5)
print("the fp32 recipe's .pte matches eager PyTorch")

