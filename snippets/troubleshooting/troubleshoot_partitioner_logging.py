"""
Troubleshoot: make the partitioner say why it left a node out
=============================================================

When fewer nodes reach XNNPACK than expected, the partitioner can say why,
node by node, through Python's ``logging``. ``XnnpackPartitioner(verbose=True)``
alone is not enough with the installed ExecuTorch: this recipe shows what it
prints, which logger level turns the reasons on, and how to turn them off
again.
"""

# %%
# A model with two operators XNNPACK will not take
# ------------------------------------------------
# XNNPACK has a configuration for ``pow`` but accepts only the power 2, so
# ``x ** 3`` is checked and rejected. It has no configuration at all for
# ``cumsum``, so that node is never checked.

import io
import logging

import torch

from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower


class CubeThenCumsum(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = torch.nn.Linear(16, 16)
        self.second = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(torch.cumsum(self.first(x) ** 3, dim=1))


torch.manual_seed(0)
model = CubeThenCumsum().eval()
example_inputs = (torch.randn(2, 16),)

# %%
# Collect the partitioner's log records
# -------------------------------------
# Importing ``xnnpack_partitioner`` calls ``logging.basicConfig(level=WARNING)``,
# so records that reach the root logger are printed on stderr. A handler on
# the ``executorch.backends.xnnpack`` logger also keeps them in a string, so
# this page can print them and the recipe can check them.

xnnpack_logger = logging.getLogger("executorch.backends.xnnpack")
records = io.StringIO()
handler = logging.StreamHandler(records)
handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
xnnpack_logger.addHandler(handler)


def lower(**partitioner_options) -> str:
    """Lower the model; return the log records, the partitioner's creation included."""
    records.seek(0)
    records.truncate()
    to_edge_transform_and_lower(
        torch.export.export(model, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner(**partitioner_options)],
    )
    return records.getvalue()


# %%
# ``verbose=True`` alone
# ----------------------
# ``verbose=True`` sets the level of one logger, the partitioner module's own,
# to ``DEBUG``. The per-node reasons are logged by the configuration modules
# in ``executorch.backends.xnnpack.partition.config``, whose level stays at
# the root's ``WARNING``: only the partitioner's greeting comes out.

verbose_only = lower(verbose=True)
print(verbose_only)

# sphinx_gallery_start_ignore
from xnnguide.core import facts

verbose_lines = verbose_only.strip().splitlines()
assert verbose_lines == [
    "DEBUG executorch.backends.xnnpack.partition.xnnpack_partitioner: "
    "Verbose logging enabled for XNNPACK partitioner."
], verbose_lines
assert "WhyNoPartition" not in verbose_only
facts.record("verbose_only_line", verbose_lines[0].split(": ", 1)[1])
facts.record("verbose_only_count", len(verbose_lines))
# sphinx_gallery_end_ignore

# %%
# The reasons, node by node
# -------------------------
# Setting the level of the whole partition package to ``DEBUG`` lets the
# configuration modules speak: every node they reject gets a ``WhyNoPartition``
# line. The ``cumsum`` node gets none: no configuration claims it, so nothing
# checks it. A node that is missing from the delegates and from this log is
# an operator XNNPACK has no support for at all.

# [start logging_debug]
partition_logger = logging.getLogger("executorch.backends.xnnpack.partition")
partition_logger.setLevel(logging.DEBUG)
debug_log = lower(verbose=True)
reasons = [line for line in debug_log.splitlines() if "WhyNoPartition" in line]
print(*reasons, sep="\n")
# [end logging_debug]

# sphinx_gallery_start_ignore
pow_reasons = [line for line in reasons if "only support power == 2, got 3" in line]
assert pow_reasons, reasons
assert not any("cumsum" in line for line in reasons), reasons
facts.record("pow_reason", pow_reasons[0].split(": ", 1)[1])
facts.record("debug_reason_lines", len(reasons))
# sphinx_gallery_end_ignore

# %%
# Quiet again
# -----------
# Logger levels are global to the Python process: in a notebook or a long
# script, every later lowering would keep logging. Put the levels back and
# remove the handler when done.

# [start logging_reset]
partition_logger.setLevel(logging.NOTSET)
logging.getLogger("executorch.backends.xnnpack.partition.xnnpack_partitioner").setLevel(
    logging.NOTSET
)
xnnpack_logger.removeHandler(handler)
quiet = lower()
print(f"records after the reset: {len(quiet.splitlines())}")
# [end logging_reset]

# sphinx_gallery_start_ignore
assert quiet == "", quiet
# sphinx_gallery_end_ignore

# %%
# The program still runs
# ----------------------
# Rejected nodes run on ExecuTorch's CPU kernels; the result matches
# eager PyTorch.

from executorch.runtime import Runtime

executorch_program = to_edge_transform_and_lower(
    torch.export.export(model, example_inputs),
    transform_passes=get_transform_passes(),
    partitioner=[XnnpackPartitioner()],
).to_executorch()
with open("partitioner_logging.pte", "wb") as file:
    file.write(executorch_program.buffer)

forward = Runtime.get().load_program("partitioner_logging.pte").load_method("forward")
pte_output = forward.execute(list(example_inputs))[0]
with torch.no_grad():
    eager_output = model(*example_inputs)
torch.testing.assert_close(pte_output, eager_output, atol=1e-4, rtol=1e-4)
print("max abs error against eager:", (pte_output - eager_output).abs().max().item())
