"""
What verbose=True logs, and where the reasons are
=================================================

``XnnpackPartitioner(verbose=True)`` sounds like the switch that explains
the partitioner's choices. This recipe records what it logs, what it leaves
changed in the process, and which logger does say why a node stays outside
XNNPACK. The partitioner's other options are in
:doc:`measure_partitioner_options`.
"""

# %%
# Lower and list what stays outside
# ---------------------------------
# ``lower`` lowers a model with a given partitioner, lists the operators
# left outside the XNNPACK delegates (the ``getitem`` nodes that unpack a
# delegate's outputs aside), runs the ``.pte`` and compares it with eager
# PyTorch.

import operator
from collections import Counter

import torch
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime

runtime = Runtime.get()


def lower(model, example_inputs, partitioner, path):
    """Lower, write *path*, run it against eager PyTorch; return the operators
    left outside XNNPACK, counted."""
    edge = to_edge_transform_and_lower(
        torch.export.export(model, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[partitioner],
    )
    outside = Counter(
        ".".join(node.target.__name__.split(".")[-2:])
        for node in edge.exported_program().graph_module.graph.nodes
        if node.op == "call_function"
        and node.target is not operator.getitem
        and node.target is not torch.ops.higher_order.executorch_call_delegate
    )
    with open(path, "wb") as file:
        file.write(edge.to_executorch().buffer)
    output = runtime.load_program(path).load_method("forward").execute(
        list(example_inputs)
    )[0]
    with torch.no_grad():
        torch.testing.assert_close(output, model(*example_inputs), atol=1e-5, rtol=1e-5)
    return outside


torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
).eval()
example_inputs = (torch.randn(2, 16),)
default = lower(model, example_inputs, XnnpackPartitioner(), "verbose_default.pte")

# %%
# ``verbose``: one more log line, and a lasting change
# ----------------------------------------------------
# ``verbose=True`` sets the level of the partitioner module's logger to
# ``DEBUG``. In this version the only message that logger then adds is the
# one announcing it, and the level stays ``DEBUG`` for every partitioner
# created later in the process. The reasons a config rejects a node are
# logged at ``DEBUG`` by the *config* modules' loggers, which ``verbose``
# does not touch; to see them, set those loggers' level yourself.

# [start verbose_option]
import logging


class KeepRecords(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


partitioner_logger = logging.getLogger(
    "executorch.backends.xnnpack.partition.xnnpack_partitioner"
)
config_logger = logging.getLogger("executorch.backends.xnnpack.partition.config")
kept = KeepRecords()
partitioner_logger.addHandler(kept)
config_logger.addHandler(kept)
level_before = partitioner_logger.level

verbose = lower(
    model, example_inputs, XnnpackPartitioner(verbose=True), "options_verbose.pte"
)
level_after = partitioner_logger.level
print(
    f"logger level before: {logging.getLevelName(level_before)}, after: "
    f"{logging.getLevelName(level_after)}"
)
verbose_messages = [
    f"{record.levelname} {record.name}: {record.getMessage()}"
    for record in kept.records
]
print("\n".join(verbose_messages))

# Rejection reasons: lower a softmax over dim 0, which XNNPACK's config refuses.
config_logger.setLevel(logging.DEBUG)
kept.records.clear()
rejected = lower(
    torch.nn.Softmax(dim=0),
    (torch.randn(4, 8),),
    XnnpackPartitioner(),
    "options_rejected_softmax.pte",
)
reasons = [
    record.getMessage()
    for record in kept.records
    if "WhyNoPartition" in record.getMessage()
]
print(reasons[0])

# Undo the lasting changes, so later lowering in this process is quiet again.
partitioner_logger.setLevel(level_before)
config_logger.setLevel(logging.NOTSET)
partitioner_logger.removeHandler(kept)
config_logger.removeHandler(kept)
# [end verbose_option]

# sphinx_gallery_start_ignore
from xnnguide.core import facts

assert level_after == logging.DEBUG
assert rejected == {"_softmax.default": 1}, rejected
# verbose changes the logging only: the same operators stay outside.
assert verbose == default, (verbose, default)
assert reasons and "dim must be the last dim" in reasons[0], reasons
assert verbose_messages == [
    "DEBUG executorch.backends.xnnpack.partition.xnnpack_partitioner: Verbose logging enabled for XNNPACK partitioner."
], verbose_messages
facts.record("verbose_messages", len(verbose_messages))
facts.record("verbose_message", verbose_messages[0])
facts.record("verbose_level_after", logging.getLevelName(level_after))
facts.record("verbose_level_before", logging.getLevelName(level_before))
facts.record("why_no_partition", reasons[0])
# sphinx_gallery_end_ignore

