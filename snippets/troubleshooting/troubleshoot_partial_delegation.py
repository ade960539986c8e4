"""
Troubleshoot: an operator XNNPACK does not take
===============================================

Lowering never fails because XNNPACK lacks an operator: the partitioner
leaves that node to ExecuTorch's CPU kernels and delegates what is on
either side of it. This recipe makes that happen with ``torch.cumsum``, reads
the delegation table, and rewrites the operator into one XNNPACK supports.
"""

# %%
# A model with a running sum in the middle
# ----------------------------------------

# [start partial_model]
import torch

from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.devtools.backend_debug import get_delegation_info
from executorch.exir import to_edge_transform_and_lower


class RunningSum(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encode = torch.nn.Linear(16, 16)
        self.decode = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decode(torch.cumsum(torch.relu(self.encode(x)), dim=1))


torch.manual_seed(0)
model = RunningSum().eval()
example_inputs = (torch.randn(2, 16),)
# [end partial_model]

# %%
# Lower it and read the delegation table
# --------------------------------------
# ``get_delegation_info`` counts, per operator, the nodes inside XNNPACK
# delegates and the nodes left outside. ``getitem`` nodes only unpack a
# delegate's outputs; they are always outside.

# [start partial_lower]
edge_program = to_edge_transform_and_lower(
    torch.export.export(model, example_inputs),
    transform_passes=get_transform_passes(),
    partitioner=[XnnpackPartitioner()],
)
delegation = get_delegation_info(edge_program.exported_program().graph_module)
print(delegation.get_summary())
table = delegation.get_operator_delegation_dataframe()
print(table.to_string(index=False))
# [end partial_lower]

# sphinx_gallery_start_ignore
from xnnguide.core import facts

by_operator = {row.op_type: row for row in table.itertuples()}
assert by_operator["aten_cumsum_default"].occurrences_in_non_delegated_graphs == 1
assert by_operator["aten_cumsum_default"].occurrences_in_delegated_graphs == 0
assert by_operator["aten_linear_default"].occurrences_in_delegated_graphs == 2
assert delegation.num_delegated_subgraphs == 2, delegation.get_summary()
facts.record("split_subgraphs", delegation.num_delegated_subgraphs)
facts.record_table(
    "delegation_table",
    ["Operator", "Nodes in XNNPACK", "Nodes outside"],
    [
        [
            row.op_type,
            row.occurrences_in_delegated_graphs,
            row.occurrences_in_non_delegated_graphs,
        ]
        for row in table.itertuples()
    ],
)
# sphinx_gallery_end_ignore

# %%
# The graph ExecuTorch will run
# -----------------------------
# Two delegate calls with the portable ``cumsum`` between them: the
# intermediate tensor leaves XNNPACK and comes back, which costs a little
# time on every call.

for node in edge_program.exported_program().graph_module.graph.nodes:
    if node.op == "call_function":
        print(node.name)

# %%
# Run the split program
# ---------------------
# Partial delegation is still a correct program.

from executorch.runtime import Runtime

with open("partial_delegation_split.pte", "wb") as file:
    file.write(edge_program.to_executorch().buffer)
split_forward = (
    Runtime.get().load_program("partial_delegation_split.pte").load_method("forward")
)
with torch.no_grad():
    eager_output = model(*example_inputs)
torch.testing.assert_close(
    split_forward.execute(list(example_inputs))[0], eager_output, atol=1e-5, rtol=1e-5
)

# %%
# Rewrite the operator
# --------------------
# A running sum along the last dimension is a product with an upper
# triangular matrix of ones, and XNNPACK takes matrix products. The rewritten
# model lowers to a single delegate and gives the same result.


# [start partial_rewrite]
from executorch.runtime import Runtime


class RunningSumAsMatmul(RunningSum):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("upper_ones", torch.triu(torch.ones(16, 16)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decode(torch.relu(self.encode(x)) @ self.upper_ones)


rewritten = RunningSumAsMatmul().eval()
rewritten.load_state_dict(model.state_dict(), strict=False)
rewritten_program = to_edge_transform_and_lower(
    torch.export.export(rewritten, example_inputs),
    transform_passes=get_transform_passes(),
    partitioner=[XnnpackPartitioner()],
)
print(
    get_delegation_info(rewritten_program.exported_program().graph_module).get_summary()
)

with open("partial_delegation_rewritten.pte", "wb") as file:
    file.write(rewritten_program.to_executorch().buffer)
rewritten_forward = (
    Runtime.get()
    .load_program("partial_delegation_rewritten.pte")
    .load_method("forward")
)
with torch.no_grad():
    original_output = model(*example_inputs)
torch.testing.assert_close(
    rewritten_forward.execute(list(example_inputs))[0],
    original_output,
    atol=1e-5,
    rtol=1e-5,
)
# [end partial_rewrite]

# sphinx_gallery_start_ignore
rewritten_delegation = get_delegation_info(
    rewritten_program.exported_program().graph_module
)
assert rewritten_delegation.num_delegated_subgraphs == 1, (
    rewritten_delegation.get_summary()
)
facts.record("rewritten_subgraphs", rewritten_delegation.num_delegated_subgraphs)
facts.record("rewritten_non_delegated", rewritten_delegation.num_non_delegated_nodes)
# sphinx_gallery_end_ignore
