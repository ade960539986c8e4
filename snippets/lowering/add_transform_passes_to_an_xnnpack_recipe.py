"""
Add the transform passes to an XNNPACK recipe
=============================================

The recipes that ``ExportRecipe.get_recipe(XNNPackRecipeType...)`` returns
lower with the XNNPACK partitioner but without ``get_transform_passes()``.
This recipe measures what that costs on a model where the passes matter,
then gives the recipe the passes through its own
``LoweringRecipe.edge_transform_passes`` field, and runs both programs on
the ExecuTorch runtime.
"""

# %%
# A model the passes change
# -------------------------
# ``gate.expand_as(hidden)`` expands a tensor to the shape it already has.
# After ``torch.export`` the graph keeps that ``expand_copy``, which XNNPACK
# has no config for; ``RemoveNoopExpandCopyPass``, the transform pass,
# removes it.

# [start model]
import torch


class GatedMLP(torch.nn.Module):
    def __init__(self, features: int = 16, hidden: int = 32, classes: int = 4):
        super().__init__()
        self.embed = torch.nn.Linear(features, hidden)
        self.gate = torch.nn.Linear(hidden, hidden)
        self.head = torch.nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = torch.relu(self.embed(x))
        gate = torch.sigmoid(self.gate(hidden))
        return self.head(hidden * gate.expand_as(hidden))


torch.manual_seed(0)
model = GatedMLP().eval()
example_inputs = (torch.randn(4, 16),)
# [end model]

# %%
# The recipe as shipped, and with the passes
# ------------------------------------------
# ``edge_transform_passes`` is a list of callables; each gets a method's name
# and its exported program and returns the passes to run on that method. A
# recipe is a plain dataclass that ``get_recipe`` builds anew on each call,
# so setting the field on the one you got changes no other recipe.

# [start add_passes]
from executorch.backends.xnnpack.recipes import XNNPackRecipeType
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.export import ExportRecipe, export

shipped = export(
    model, [example_inputs], ExportRecipe.get_recipe(XNNPackRecipeType.FP32)
)

recipe = ExportRecipe.get_recipe(XNNPackRecipeType.FP32)
recipe.lowering_recipe.edge_transform_passes = [
    lambda method_name, exported_program: get_transform_passes()
]
with_passes = export(model, [example_inputs], recipe)
# [end add_passes]

# %%
# What XNNPACK took, and what the programs compute
# ------------------------------------------------
# ``export`` has run every stage by the time it returns, serialisation
# included, and serialisation rewrites the lowered graph in place (memory
# planning). The lowering stage recorded ``get_delegation_info`` of the graph
# as it was before that: read it from the stage's artifact. Its
# ``delegation_by_operator`` names what runs outside XNNPACK (``getitem``
# only unpacks a delegate's outputs). Both ``.pte`` files run on the
# runtime and are compared with eager PyTorch.

# [start compare]
import os

from executorch.export import StageType
from executorch.runtime import Runtime

runtime = Runtime.get()
with torch.no_grad():
    eager_output = model(*example_inputs)

figures = {}
for name, session in [("as shipped", shipped), ("with transform passes", with_passes)]:
    info = session.get_stage_artifacts()[
        StageType.TO_EDGE_TRANSFORM_AND_LOWER
    ].get_context("delegation_info")
    outside = {
        op: b.non_delegated
        for op, b in sorted(info.delegation_by_operator.items())
        if b.non_delegated and op != "getitem"
    }
    path = f"gated_mlp_recipe_{name.replace(' ', '_')}.pte"
    with open(path, "wb") as file:
        file.write(session.get_pte_buffer())
    program = runtime.load_program(path)
    output = program.load_method("forward").execute(list(example_inputs))[0]
    torch.testing.assert_close(output, eager_output, atol=1e-5, rtol=1e-5)
    figures[name] = {
        "XNNPACK subgraphs": info.num_delegated_subgraphs,
        "outside XNNPACK": ", ".join(f"{op} ×{n}" for op, n in outside.items())
        or "none",
        "delegated / total nodes": f"{info.num_delegated_nodes} / "
        f"{info.num_delegated_nodes + info.num_non_delegated_nodes}",
        "max abs error": f"{(output - eager_output).abs().max().item():.1e}",
        ".pte bytes": f"{os.path.getsize(path):,}",
    }
    print(name, figures[name])
# [end compare]

# sphinx_gallery_start_ignore
from xnnguide.core import facts
from xnnguide.core.delegation import delegate_calls

assert eager_output.abs().max().item() > 0.05, "outputs too small for atol=1e-5 to mean anything"
# The site's helpers read the delegates' own graphs, which serialisation leaves alone:
# they must agree on the number of calls into XNNPACK.
for name, s in [("as shipped", shipped), ("with transform passes", with_passes)]:
    gm = s.get_edge_program_manager().exported_program().graph_module
    assert figures[name]["XNNPACK subgraphs"] == delegate_calls(gm), name
before, after = ({op: b.non_delegated for op, b in s.get_stage_artifacts()[StageType.TO_EDGE_TRANSFORM_AND_LOWER]
                  .get_context("delegation_info").delegation_by_operator.items() if b.non_delegated}
                 for s in (shipped, with_passes))
# The gap this page is about: the shipped recipe leaves the no-op expand outside
# XNNPACK and splits the graph; the recipe with the passes does not. If a future
# executorch's recipe runs the passes itself, the first assert fails.
assert before.get("aten_expand_copy_default") == 1, before
assert set(after) <= {"getitem"}, after
assert figures["with transform passes"]["XNNPACK subgraphs"] < figures["as shipped"]["XNNPACK subgraphs"], figures
assert ExportRecipe.get_recipe(XNNPackRecipeType.FP32).lowering_recipe.edge_transform_passes is None, (
    "setting the field on one recipe changed the next get_recipe's")
facts.record_table("gap", ["", "Recipe as shipped", "Recipe with transform passes"],
                   [[key, str(figures["as shipped"][key]), str(figures["with transform passes"][key])]
                    for key in figures["as shipped"]])
labels = [("XNNPACK subgraphs", "subgraphs"), ("outside XNNPACK", "outside"), ("delegated / total nodes", "nodes"),
          ("max abs error", "error"), (".pte bytes", "bytes")]
for name, short in [("as shipped", "shipped"), ("with transform passes", "with")]:
    for key, label in labels:
        facts.record(f"{label}_{short}", figures[name][key])
facts.record("pass_names", ", ".join(type(p).__name__ for p in get_transform_passes()))
# sphinx_gallery_end_ignore
