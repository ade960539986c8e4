"""
Export recipes for Android and iOS
==================================

``executorch.export.target_recipes`` has two functions beside the XNNPACK
recipe types (:doc:`export_with_xnnpack_recipe_types`):
``get_android_recipe()`` and ``get_ios_recipe()``. This recipe reads what
each needs and what it holds.
"""

import os

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
from xnnguide.core import facts
from xnnguide.recipe_checks import phone_recipes

# What the default call does here, without letting it reach the network.
install_calls, default_error = phone_recipes.default_android_call()
assert install_calls == ["install"], install_calls
assert isinstance(default_error, RuntimeError), default_error
facts.record("android_default_error",
             f"{type(default_error).__name__}: {str(default_error).splitlines()[0]}")
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
