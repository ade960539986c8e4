"""
What each XnnpackPartitioner option does
========================================

``XnnpackPartitioner`` decides which parts of a graph XNNPACK runs. This
recipe reads the options of the installed version from its signature, then
lowers small fp32 models with each option changed and measures what changed:
delegate calls, operators left outside XNNPACK, and whether the ``.pte``
still runs and matches eager PyTorch. ``config_precisions`` needs a
quantized model and has :doc:`its own recipe
<measure_partitioner_config_precisions_int8>`.
"""

# %%
# The options of the installed partitioner
# ----------------------------------------
# Its own parameters come from ``__init__``'s signature; any other keyword
# argument is handed to every partitioner config, whose base class reads the
# names listed after them.

# [start partitioner_signature]
import inspect
import re

from executorch.backends.xnnpack.partition.config.xnnpack_config import (
    XNNPartitionerConfig,
)
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

for name, parameter in inspect.signature(
    XnnpackPartitioner.__init__
).parameters.items():
    if parameter.kind is parameter.VAR_KEYWORD:
        print(f"**{name}: passed on to every partitioner config")
    elif name != "self":
        print(f"{name}: default {parameter.default!r}")
config_keywords = re.findall(
    r'kwargs\.get\(\s*"(\w+)",\s*([^)]+)\)',
    inspect.getsource(XNNPartitionerConfig.__init__),
)
for name, default in config_keywords:
    print(f"  read by every config: {name}: default {default.strip()}")
# [end partitioner_signature]

# sphinx_gallery_start_ignore
from xnnguide.core import facts

own = {
    n: p
    for n, p in inspect.signature(XnnpackPartitioner.__init__).parameters.items()
    if n != "self"
}
assert {"configs", "config_precisions", "per_op_mode", "verbose", "kwargs"} <= set(
    own
), own
assert dict(config_keywords).keys() >= {
    "force_non_static_weights_for_f32_linear",
    "enable_bf16",
}, config_keywords
# One plain line per option for the page's table; an option the installed
# partitioner gains or drops fails here, so the lines cannot fall behind.
WHAT_IT_DOES = {
    "configs": "Which operator configs may claim nodes; default: all of XNNPACK's.",
    "config_precisions": "Keep only configs for these precisions: fp32, static or "
    "dynamic int8.",
    "per_op_mode": "One delegate per operator instead of one per run of operators; "
    "less memory at load, more calls.",
    "verbose": "Turn up the partitioner's own logger (not the configs', which say "
    "why a node was left out).",
    "force_non_static_weights_for_f32_linear": "Pass fp32 linear weights at every "
    "call instead of packing them; not with convolutions.",
    "enable_bf16": "Also claim bfloat16 operators (fp32 and fp16 are claimed "
    "anyway).",
}
option_rows = [
    [
        name,
        "" if p.default is p.empty else repr(p.default),
        "XnnpackPartitioner.__init__",
    ]
    for name, p in own.items()
    if p.kind is not p.VAR_KEYWORD
] + [
    [name, default.strip(), "XNNPartitionerConfig.__init__ (via **kwargs)"]
    for name, default in config_keywords
]
assert {row[0] for row in option_rows} == set(WHAT_IT_DOES), (
    sorted(row[0] for row in option_rows),
    sorted(WHAT_IT_DOES),
)
facts.record_table(
    "options",
    ["Option", "What it does", "Default", "Read by"],
    [[name, WHAT_IT_DOES[name], default, where] for name, default, where in option_rows],
)
facts.record("option_count", len(option_rows))
# sphinx_gallery_end_ignore

# %%
# Ready-made subclasses
# ---------------------
# The module also defines subclasses that fix ``config_precisions``. Which
# precisions each one enables is read from its configs after construction.

# [start partitioner_subclasses]
import executorch.backends.xnnpack.partition.xnnpack_partitioner as partitioner_module

subclasses = {}
for name, cls in vars(partitioner_module).items():
    if (
        inspect.isclass(cls)
        and issubclass(cls, XnnpackPartitioner)
        and cls is not XnnpackPartitioner
    ):
        instance = cls()
        enabled = {
            p.name
            for c in instance.target_partitioner_configs.values()
            for p in c.enabled_precision_types
        }
        subclasses[name] = sorted(enabled)
        print(f"{name}: {', '.join(sorted(enabled))}")
# [end partitioner_subclasses]

# sphinx_gallery_start_ignore
assert subclasses, "no XnnpackPartitioner subclasses found"
facts.record_table(
    "subclasses",
    ["Class", "Precisions its configs enable"],
    [[name, ", ".join(enabled)] for name, enabled in subclasses.items()],
)
# sphinx_gallery_end_ignore

# %%
# Reading a lowered graph
# -----------------------
# In a lowered graph, each ``executorch_call_delegate`` node is one call into
# XNNPACK. Its first argument names the lowered module (which keeps the
# graph XNNPACK was given); the other arguments are the tensors passed in on
# every call. Operator nodes other than these and the ``getitem`` nodes that
# unpack a delegate's outputs run on ExecuTorch's CPU kernels.

# [start read_delegation]
import operator
from collections import Counter

import torch


def op_name(node: torch.fx.Node) -> str:
    """The operator a node calls, without its namespace: ``"expand_copy.default"``."""
    return ".".join(node.target.__name__.split(".")[-2:])


def read_delegation(graph_module: torch.fx.GraphModule) -> tuple[int, Counter, Counter]:
    """Delegate calls, operators left outside the delegates, and operators inside
    them."""
    calls, outside, inside = 0, Counter(), Counter()
    for node in graph_module.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        if node.target is torch.ops.higher_order.executorch_call_delegate:
            calls += 1
            delegate = getattr(graph_module, node.args[0].target)
            inside.update(
                op_name(n)
                for n in delegate.original_module.graph.nodes
                if n.op == "call_function" and n.target is not operator.getitem
            )
        else:
            outside[op_name(node)] += 1
    return calls, outside, inside


def describe(counts: Counter) -> str:
    """``"expand_copy.default ×1, mul.Tensor ×2"``, or ``"none"``."""
    return (
        ", ".join(f"{name} ×{count}" for name, count in sorted(counts.items()))
        or "none"
    )


# [end read_delegation]

# %%
# A small model and a way to measure a lowering
# ---------------------------------------------
# ``lower_and_check`` lowers, reads the graph (before ``to_executorch``,
# which rewrites it), runs the ``.pte`` and compares it with eager PyTorch.

# [start options_model]
import torch
import torch.nn.functional as F
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime


class SmallConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.head = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv1(x))
        x = F.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.head(x.flatten(1))


runtime = Runtime.get()


def lower_and_check(model, example_inputs, partitioner, path, atol=1e-5):
    edge = to_edge_transform_and_lower(
        torch.export.export(model, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[partitioner],
    )
    graph_module = edge.exported_program().graph_module
    calls, outside, _ = read_delegation(graph_module)
    delegate_nodes = [
        node
        for node in graph_module.graph.nodes
        if node.target is torch.ops.higher_order.executorch_call_delegate
    ]
    measured = {
        "delegate calls": calls,
        "outside": outside,
        # Arguments of each delegate call after the first (the lowered module).
        "delegate inputs": [len(node.args) - 1 for node in delegate_nodes],
    }
    with open(path, "wb") as file:
        file.write(edge.to_executorch().buffer)
    program = runtime.load_program(path)
    output = program.load_method("forward").execute(list(example_inputs))[0]
    with torch.no_grad():
        expected = model(*example_inputs)
    torch.testing.assert_close(output.float(), expected.float(), atol=atol, rtol=atol)
    measured["max abs error"] = (output.float() - expected.float()).abs().max().item()
    return measured


torch.manual_seed(0)
model = SmallConvNet().eval()
example_inputs = (torch.randn(1, 3, 16, 16),)
default = lower_and_check(
    model, example_inputs, XnnpackPartitioner(), "options_default.pte"
)
print(
    f"default: delegate calls {default['delegate calls']}, outside: "
    f"{describe(default['outside'])}"
)
# [end options_model]

# %%
# ``per_op_mode``: one delegate per operator
# ------------------------------------------
# By default the partitioner merges neighbouring supported operators into
# one delegate. With ``per_op_mode=True`` every match (an operator and the
# nodes it needs, such as its weights) becomes its own delegate: more calls
# into XNNPACK, each crossing back to the runtime.

# [start per_op_mode]
per_op = lower_and_check(
    model, example_inputs, XnnpackPartitioner(per_op_mode=True), "options_per_op.pte"
)
print(
    f"per_op_mode=True: {per_op['delegate calls']} delegate calls "
    f"(default: {default['delegate calls']}), outside: {describe(per_op['outside'])}"
)
# [end per_op_mode]

# sphinx_gallery_start_ignore
assert default["delegate calls"] == 1 and not default["outside"], default
assert per_op["delegate calls"] > default["delegate calls"] and not per_op["outside"], (
    per_op
)
# sphinx_gallery_end_ignore

# %%
# ``per_op_mode`` and peak memory
# -------------------------------
# ExecuTorch's LLaVA export script lowers its text decoder's dynamically
# quantized linear layers with ``per_op_mode=True``, so that no delegate
# holds more than one of them: XNNPACK packs a delegate's weights when the
# method loads, and a delegate with many layers holds their unpacked and
# packed copies at the same time. To see the effect, lower a stack of large
# linear layers both ways, then load and run each ``.pte`` in a child
# process, which resets its memory peak before each load and reports how
# much the load raised it, and how long one run takes.

# sphinx_gallery_start_ignore
from xnnguide.core import machine_load

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
stack_default = lower_and_check(
    stack, stack_inputs, XnnpackPartitioner(), "options_stack_default.pte", atol=1e-4
)
stack_per_op = lower_and_check(
    stack,
    stack_inputs,
    XnnpackPartitioner(per_op_mode=True),
    "options_stack_per_op.pte",
    atol=1e-4,
)

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
assert (
    stack_default["delegate calls"] == 1 and stack_per_op["delegate calls"] == layers
), (stack_default, stack_per_op)
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
from executorch.extension.pybindings.portable_lib import _threadpool_get_thread_count

from xnnguide.core import timings

load = load_window.close()
for key, name in (("default_run_ms", "default"), ("per_op_run_ms", "per_op_mode=True")):
    timings.record_latency(
        key,
        memory[name]["run_ms"],
        subject=f"the partitioner page's stack of linear layers, {name} .pte",
        threads=_threadpool_get_thread_count(),  # the child's runtime has the same default
        batch=stack_inputs[0].shape[0],
        load=load,
        digits=1,
    )
# sphinx_gallery_end_ignore

# %%
# ``configs``: which operators XNNPACK may take
# ---------------------------------------------
# ``configs`` replaces the full list (``ALL_PARTITIONER_CONFIGS``) with the
# config classes given. Configs also tell ``to_edge_transform_and_lower``
# which operators to keep whole: without ``LinearConfig`` and
# ``MaxPool2dConfig``, ``linear`` is decomposed into ``permute_copy`` and
# ``addmm``, and max pooling into ``max_pool2d_with_indices``, all left to
# the CPU kernels.

# [start configs_option]
from executorch.backends.xnnpack.partition.config import ALL_PARTITIONER_CONFIGS
from executorch.backends.xnnpack.partition.config.gemm_configs import ConvolutionConfig
from executorch.backends.xnnpack.partition.config.generic_node_configs import ReLUConfig

print(f"{len(ALL_PARTITIONER_CONFIGS)} configs by default")
only_conv_relu = lower_and_check(
    model,
    example_inputs,
    XnnpackPartitioner(configs=[ConvolutionConfig, ReLUConfig]),
    "options_configs.pte",
)
print(
    "configs=[ConvolutionConfig, ReLUConfig]: outside: "
    f"{describe(only_conv_relu['outside'])}"
)
# [end configs_option]

# sphinx_gallery_start_ignore
assert {"addmm.default", "max_pool2d_with_indices.default"} <= set(
    only_conv_relu["outside"]
), only_conv_relu
assert "convolution.default" not in only_conv_relu["outside"]
facts.record("all_configs_count", len(ALL_PARTITIONER_CONFIGS))
# sphinx_gallery_end_ignore

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

verbose = lower_and_check(
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
rejected = lower_and_check(
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
assert level_after == logging.DEBUG
assert rejected["outside"] == {"_softmax.default": 1}, rejected
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

# %%
# ``force_non_static_weights_for_f32_linear``: weights as inputs
# --------------------------------------------------------------
# Any other keyword goes to every config. With this one, fp32 ``linear``
# (and ``addmm``/``mm``) weights are not packed into the delegate: they stay
# in the program and are passed to XNNPACK on every call, so the delegate
# gets more inputs. That suits weights that change or are shared between
# methods. In this version the convolution config reads the flag too and
# leaves its *bias* outside, and XNNPACK then refuses to build the
# convolution when the program loads: use the flag on models without
# convolutions.

# [start non_static_weights]
mlp = torch.nn.Sequential(
    torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
).eval()
mlp_inputs = (torch.randn(2, 16),)
packed = lower_and_check(
    mlp, mlp_inputs, XnnpackPartitioner(), "options_mlp_packed.pte"
)
as_inputs = lower_and_check(
    mlp,
    mlp_inputs,
    XnnpackPartitioner(force_non_static_weights_for_f32_linear=True),
    "options_mlp_inputs.pte",
)
print(
    f"delegate inputs: default {packed['delegate inputs']}, with the flag "
    f"{as_inputs['delegate inputs']}"
)

conv = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU()).eval()
try:
    lower_and_check(
        conv,
        (torch.randn(1, 3, 8, 8),),
        XnnpackPartitioner(force_non_static_weights_for_f32_linear=True),
        "options_conv_inputs.pte",
    )
    conv_error = None
except RuntimeError as error:
    conv_error = str(error)
print(f"convolution with the flag: {conv_error}")
# [end non_static_weights]

# sphinx_gallery_start_ignore
assert packed["delegate inputs"] == [1], packed
assert as_inputs["delegate inputs"] == [5], as_inputs  # input + 2 weights + 2 biases
assert conv_error is not None and "load method" in conv_error.lower(), conv_error
facts.record("mlp_inputs_default", packed["delegate inputs"][0])
facts.record("mlp_inputs_flag", as_inputs["delegate inputs"][0])
facts.record("conv_flag_error", conv_error)
# sphinx_gallery_end_ignore

# %%
# ``enable_bf16``: bfloat16 linear layers
# ---------------------------------------
# Configs accept fp32 and fp16 tensors. ``enable_bf16=True`` adds bfloat16,
# so a bf16 ``linear`` is delegated instead of running, decomposed, on the
# CPU kernels. The tolerance is bf16's: about two decimal digits.

# [start enable_bf16]
bf16_model = torch.nn.Sequential(torch.nn.Linear(16, 8)).to(torch.bfloat16).eval()
bf16_inputs = (torch.randn(2, 16, dtype=torch.bfloat16),)
bf16_default = lower_and_check(
    bf16_model, bf16_inputs, XnnpackPartitioner(), "options_bf16_default.pte", atol=2e-2
)
bf16_enabled = lower_and_check(
    bf16_model,
    bf16_inputs,
    XnnpackPartitioner(enable_bf16=True),
    "options_bf16_enabled.pte",
    atol=2e-2,
)
print(
    f"default:           delegate calls {bf16_default['delegate calls']}, "
    f"outside: {describe(bf16_default['outside'])}"
)
print(
    f"enable_bf16=True:  delegate calls {bf16_enabled['delegate calls']}, "
    f"outside: {describe(bf16_enabled['outside'])}"
)
# [end enable_bf16]

# %%
# fp16 needs no option: the configs' dtype check accepts float16 along with
# float32, so a half-precision ``linear`` is delegated by default.

# [start fp16_default]
fp16_model = torch.nn.Sequential(torch.nn.Linear(16, 8)).to(torch.float16).eval()
fp16_inputs = (torch.randn(2, 16, dtype=torch.float16),)
fp16_default = lower_and_check(
    fp16_model, fp16_inputs, XnnpackPartitioner(), "options_fp16_default.pte", atol=1e-2
)
print(
    f"fp16 Linear, default: delegate calls {fp16_default['delegate calls']}, "
    f"outside: {describe(fp16_default['outside'])}"
)
# [end fp16_default]

# sphinx_gallery_start_ignore
assert bf16_default["delegate calls"] == 0 and bf16_default["outside"], bf16_default
assert bf16_enabled["delegate calls"] == 1 and not bf16_enabled["outside"], bf16_enabled
assert fp16_default["delegate calls"] == 1 and not fp16_default["outside"], fp16_default
facts.record("fp16_default_calls", fp16_default["delegate calls"])
facts.record("fp16_default_outside", describe(fp16_default["outside"]))
measured = [
    ("(defaults)", "SmallConvNet", default),
    ("per_op_mode=True", "SmallConvNet", per_op),
    ("configs=[ConvolutionConfig, ReLUConfig]", "SmallConvNet", only_conv_relu),
    ("verbose=True", "SmallConvNet", verbose),
    ("(defaults)", "3-layer MLP", packed),
    ("force_non_static_weights_for_f32_linear=True", "3-layer MLP", as_inputs),
    ("(defaults)", "bf16 Linear", bf16_default),
    ("enable_bf16=True", "bf16 Linear", bf16_enabled),
    ("(defaults)", "fp16 Linear", fp16_default),
    ("(defaults)", f"{layers} Linear layers", stack_default),
    ("per_op_mode=True", f"{layers} Linear layers", stack_per_op),
]
facts.record_table(
    "measured",
    [
        "Option",
        "Model",
        "Delegate calls",
        "Inputs per delegate call",
        "Operators outside XNNPACK",
        "Max abs error vs eager",
    ],
    [
        [
            option,
            name,
            m["delegate calls"],
            ", ".join(map(str, m["delegate inputs"])) or "-",
            describe(m["outside"]),
            f"{m['max abs error']:.1e}",
        ]
        for option, name, m in measured
    ],
)
facts.record("per_op_calls", per_op["delegate calls"])
facts.record("default_calls", default["delegate calls"])
facts.record("configs_outside", describe(only_conv_relu["outside"]))
facts.record("bf16_default_outside", describe(bf16_default["outside"]))
# sphinx_gallery_end_ignore
