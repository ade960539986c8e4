"""
Lower peak memory at load with per_op_mode
==========================================

XNNPACK packs a delegate's weights when a method loads. With one delegate
for many large layers, the packed and unpacked copies of all of them are
held at once; ``XnnpackPartitioner(per_op_mode=True)`` makes one delegate
per layer, so the peak is about the weights plus one layer. This recipe
measures both the peak and the cost of the extra delegate calls. The
partitioner's other options are in :doc:`measure_partitioner_options`.
"""

# %%
# Lower and check
# ---------------
# ``lower`` lowers a model with a given partitioner, counts the calls into
# XNNPACK in the lowered graph (each ``executorch_call_delegate`` node is
# one), writes the ``.pte``, runs it and compares it with eager PyTorch.

import torch
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime

runtime = Runtime.get()


def lower(model, example_inputs, partitioner, path, atol=1e-4):
    """Lower, write *path*, run it against eager PyTorch; return the delegate calls."""
    edge = to_edge_transform_and_lower(
        torch.export.export(model, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[partitioner],
    )
    calls = sum(
        node.target is torch.ops.higher_order.executorch_call_delegate
        for node in edge.exported_program().graph_module.graph.nodes
    )
    with open(path, "wb") as file:
        file.write(edge.to_executorch().buffer)
    output = runtime.load_program(path).load_method("forward").execute(
        list(example_inputs)
    )[0]
    with torch.no_grad():
        torch.testing.assert_close(output, model(*example_inputs), atol=atol, rtol=atol)
    return calls


# %%
# A stack of large linear layers, measured both ways
# --------------------------------------------------
# ExecuTorch's LLaVA export script lowers its text decoder's dynamically
# quantized linear layers with ``per_op_mode=True``, so that no delegate
# holds more than one of them: XNNPACK packs a delegate's weights when the
# method loads, and a delegate with many layers holds their unpacked and
# packed copies at the same time. To see the effect, lower a stack of large
# linear layers both ways, then load and run each ``.pte`` in a child
# process, which resets its memory peak before each load and reports how
# much the load raised it, and how long one run takes.

# sphinx_gallery_start_ignore
from xnnguide.core import facts, machine_load

# The run times below are taken beside the build's other recipes: the window
# measures how much of the machine they took, and the page flags the figures.
load_window = machine_load.watch()
# sphinx_gallery_end_ignore
# [start per_op_memory]
import json
import subprocess
import sys

layers, width = 4, 1024
stack = torch.nn.Sequential(
    *[
        torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU())
        for _ in range(layers)
    ]
).eval()
stack_inputs = (torch.randn(1, width),)
weight_mib = sum(p.numel() * p.element_size() for p in stack.parameters()) / 2**20
stack_default = lower(
    stack, stack_inputs, XnnpackPartitioner(), "options_stack_default.pte"
)
stack_per_op = lower(
    stack,
    stack_inputs,
    XnnpackPartitioner(per_op_mode=True),
    "options_stack_per_op.pte",
)
print(f"delegate calls: default {stack_default}, per_op_mode=True {stack_per_op}")

child = """
import json, sys, time, torch
from executorch.runtime import Runtime
runtime = Runtime.get()
def memory(field):  # Linux: VmRSS is resident memory now, VmHWM its peak
    with open("/proc/self/status") as status:
        return next(
            int(line.split()[1]) * 1024 for line in status if line.startswith(field)
        )
inputs = [torch.randn(1, int(sys.argv[1]))]
measured = {}
for path in sys.argv[2:]:
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")  # reset the peak to the current resident memory
    before = memory("VmRSS:")
    program = runtime.load_program(path)
    method = program.load_method("forward")
    peak = memory("VmHWM:")
    method.execute(inputs)  # warm-up
    start = time.perf_counter()
    for _ in range(20):
        method.execute(inputs)
    run_ms = (time.perf_counter() - start) / 20 * 1e3
    measured[path] = {"load_peak_mib": (peak - before) / 2**20, "run_ms": run_ms}
    del method, program
print(json.dumps(measured))
"""
paths = {
    "default": "options_stack_default.pte",
    "per_op_mode=True": "options_stack_per_op.pte",
}
completed = subprocess.run(
    [sys.executable, "-c", child, str(width), *paths.values()],
    capture_output=True,
    text=True,
    timeout=300,
    check=True,
)
measured = json.loads(completed.stdout.strip().splitlines()[-1])
memory = {name: measured[path] for name, path in paths.items()}
print(f"weights: {weight_mib:.0f} MiB in {layers} layers")
for name, measured in memory.items():
    print(
        f"{name}: load raised peak memory by {measured['load_peak_mib']:.0f} MiB, one "
        f"run {measured['run_ms']:.1f} ms"
    )
# [end per_op_memory]

# sphinx_gallery_start_ignore
assert stack_default == 1 and stack_per_op == layers, (stack_default, stack_per_op)
default_peak = memory["default"]["load_peak_mib"]
per_op_peak = memory["per_op_mode=True"]["load_peak_mib"]
# What the page says: one delegate peaks near twice the weights (unpacked and
# packed at once), one delegate per layer near the weights plus one layer.
assert default_peak > 1.6 * weight_mib, (default_peak, weight_mib)
assert per_op_peak < 1.4 * weight_mib, (per_op_peak, weight_mib)
facts.record("stack_layers", layers)
facts.record("stack_width", width)
facts.record("stack_weight_mib", weight_mib, f"{weight_mib:.0f} MiB")
facts.record("default_load_peak", default_peak, f"{default_peak:.0f} MiB")
facts.record("per_op_load_peak", per_op_peak, f"{per_op_peak:.0f} MiB")
facts.record("stack_default_calls", stack_default)
facts.record("stack_per_op_calls", stack_per_op)
from xnnguide.core import timings

# The child's thread pool, asked in a child of its own: this process never loads the private name.
pool = "from executorch.extension.pybindings import portable_lib as p; print(p._threadpool_get_thread_count())"
child_threads = int(subprocess.run([sys.executable, "-c", pool], capture_output=True, text=True,
                                   check=True).stdout.split()[-1])
load = load_window.close()
for key, name in (("default_run_ms", "default"), ("per_op_run_ms", "per_op_mode=True")):
    timings.record_latency(
        key,
        memory[name]["run_ms"],
        subject=f"the partitioner page's stack of linear layers, {name} .pte",
        threads=child_threads,
        batch=stack_inputs[0].shape[0],
        load=load,
        digits=1,
    )
# sphinx_gallery_end_ignore
