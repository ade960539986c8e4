"""
Lower LSTM and GRU layers to XNNPACK
====================================

``torch.nn.LSTM`` and ``torch.nn.GRU`` lower to XNNPACK and give the right
answer, but not in one piece: the partitioner cuts each time step into its
own delegate call, and the reshaping between them runs on ExecuTorch's
portable kernels. This recipe counts the calls and the operators left
behind, times the layers, and shows a rewrite of the same cell with two
``Linear`` layers that stays in one delegate call, with the same weights
and the same outputs.
"""

# %%
# One layer of each, a short sequence
# -----------------------------------
# A sensor or speech model feeds a layer a few steps at a time and carries
# its state from one call to the next, so the initial state is an input of
# the program. Three steps of 16 features, 32 hidden units, batch 1.

import torch

torch.manual_seed(0)
FEATURES, HIDDEN, STEPS = 16, 32, 3


class Recurrent(torch.nn.Module):
    """Returns the output sequence of an LSTM or GRU layer, not its final state."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, sequence, state):
        return self.layer(sequence, state)[0]


lstm = torch.nn.LSTM(FEATURES, HIDDEN, batch_first=True).eval()
gru = torch.nn.GRU(FEATURES, HIDDEN, batch_first=True).eval()
sequence = torch.randn(1, STEPS, FEATURES)
zeros = torch.zeros(1, 1, HIDDEN)
inputs = {"LSTM": (sequence, (zeros, zeros)), "GRU": (sequence, zeros)}

# %%
# Lower them and read what runs where
# -----------------------------------
# After ``to_edge_transform_and_lower`` the program's graph holds one
# ``executorch_call_delegate`` node per XNNPACK call; every other operator
# node (``getitem`` only unpacks results) runs on a portable kernel.

# [gallery-only recurrent_lower]
# [start recurrent_lower]
from collections import Counter

from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime


def lower(model, example_inputs, path):
    edge_program = to_edge_transform_and_lower(
        torch.export.export(model, example_inputs),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )
    nodes = [
        node.target.__name__
        for node in edge_program.exported_program().graph.nodes
        if node.op == "call_function" and node.target.__name__ != "getitem"
    ]
    with open(path, "wb") as file:
        file.write(edge_program.to_executorch().buffer)
    delegate_calls = nodes.count("executorch_call_delegate")
    portable = Counter(name for name in nodes if name != "executorch_call_delegate")
    return delegate_calls, portable


layers = {"LSTM": Recurrent(lstm), "GRU": Recurrent(gru)}
lowered = {}
for name, model in layers.items():
    lowered[name] = lower(model, inputs[name], f"{name.lower()}.pte")
    delegate_calls, portable = lowered[name]
    print(f"{name}: {delegate_calls} delegate calls for {STEPS} steps; portable:")
    for operator, count in sorted(portable.items()):
        print(f"    {operator} x{count}")
# [end recurrent_lower]

# sphinx_gallery_start_ignore
from xnnguide.core import facts



def short_names(portable):
    """aten.squeeze_copy.dims -> squeeze_copy: the operator, without namespace and overload."""
    return ", ".join(sorted({name.split(".")[1] for name in portable}))


for name, (calls, portable) in lowered.items():
    assert calls > 1 and portable, (name, calls, portable)
    facts.record(f"{name.lower()}_delegate_calls", calls)
    facts.record(f"{name.lower()}_portable_operators", short_names(portable))
facts.record("steps", STEPS)
facts.record("hidden", HIDDEN)
# sphinx_gallery_end_ignore

# %%
# Run them and compare with eager PyTorch
# ---------------------------------------
# The split costs no accuracy: each program matches its layer to within
# float rounding.


def run(path, flat_inputs):
    method = Runtime.get().load_program(path).load_method("forward")
    return method, method.execute(flat_inputs)[0]


flat_inputs = {"LSTM": [sequence, zeros, zeros], "GRU": [sequence, zeros]}
methods = {}
with torch.no_grad():
    for name, model in layers.items():
        methods[name], output = run(f"{name.lower()}.pte", flat_inputs[name])
        torch.testing.assert_close(output, model(*inputs[name]), atol=1e-5, rtol=1e-5)
        print(f"{name}: matches eager, max |error| "
              f"{(output - model(*inputs[name])).abs().max().item():.1e}")

# %%
# The remedy: write the cell with two linear layers
# -------------------------------------------------
# What splits the layers is how they decompose: the gates come apart with
# ``split_with_sizes`` and each step is squeezed out of the sequence, and
# XNNPACK takes neither. The same cell written out by hand lowers whole:
# ``Linear`` layers for the gate matrices (weights copied from the layer),
# slices and reshapes (which XNNPACK takes) for the gates and the steps,
# and the initial state as an input, as in the layers above.

# [gallery-only recurrent_remedy]
# [start recurrent_remedy]
class LinearCell(torch.nn.Module):
    """A layer's gate matrices as two Linear layers, weights copied from it."""

    def __init__(self, layer, gates):
        super().__init__()
        width = gates * layer.hidden_size
        self.input_gates = torch.nn.Linear(layer.input_size, width)
        self.hidden_gates = torch.nn.Linear(layer.hidden_size, width)
        self.input_gates.load_state_dict(
            {"weight": layer.weight_ih_l0, "bias": layer.bias_ih_l0})
        self.hidden_gates.load_state_dict(
            {"weight": layer.weight_hh_l0, "bias": layer.bias_hh_l0})


class LinearLSTM(LinearCell):
    """nn.LSTM's equations: four gates, hidden and cell state."""

    def __init__(self, lstm):
        super().__init__(lstm, gates=4)

    def forward(self, sequence, state):
        size = self.hidden_gates.in_features
        h, c = (tensor.reshape(-1, size) for tensor in state)
        from_inputs = self.input_gates(sequence)  # all steps at once
        outputs = []
        for step in range(sequence.shape[1]):
            gates = from_inputs[:, step : step + 1].reshape(-1, 4 * size)
            gates = gates + self.hidden_gates(h)
            i, f, g, o = (gates[:, k * size : (k + 1) * size] for k in range(4))
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outputs.append(h)
        return torch.stack(outputs, dim=1)


class LinearGRU(LinearCell):
    """nn.GRU's equations: three gates, one state."""

    def __init__(self, gru):
        super().__init__(gru, gates=3)

    def forward(self, sequence, state):
        size = self.hidden_gates.in_features
        h = state.reshape(-1, size)
        from_inputs = self.input_gates(sequence)
        outputs = []
        for step in range(sequence.shape[1]):
            a = from_inputs[:, step : step + 1].reshape(-1, 3 * size)
            b = self.hidden_gates(h)
            r = torch.sigmoid(a[:, :size] + b[:, :size])
            z = torch.sigmoid(a[:, size : 2 * size] + b[:, size : 2 * size])
            n = torch.tanh(a[:, 2 * size :] + r * b[:, 2 * size :])
            h = n + z * (h - n)  # (1 - z) * n + z * h, without a constant 1
            outputs.append(h)
        return torch.stack(outputs, dim=1)


rewritten = {"LSTM": LinearLSTM(lstm).eval(), "GRU": LinearGRU(gru).eval()}
for name, model in rewritten.items():
    path = f"{name.lower()}_as_linear.pte"
    lowered[f"{name} as Linear"] = lower(model, inputs[name], path)
    delegate_calls, portable = lowered[f"{name} as Linear"]
    methods[f"{name} as Linear"], output = run(path, flat_inputs[name])
    with torch.no_grad():
        torch.testing.assert_close(
            output, layers[name](*inputs[name]), atol=1e-5, rtol=1e-5)
    print(f"{name} as Linear: {delegate_calls} delegate call, "
          f"portable: {dict(portable) or 'none'}, matches nn.{name}")
# [end recurrent_remedy]

# sphinx_gallery_start_ignore
for name in rewritten:
    assert lowered[f"{name} as Linear"] == (1, Counter()), lowered[f"{name} as Linear"]
facts.record("rewritten_delegate_calls", 1)
from xnnguide.core import machine_hold

held = machine_hold.pause_other_recipes()  # the build's other recipes stop while this one times
# sphinx_gallery_end_ignore

# %%
# What the split costs
# --------------------
# Each program runs 500 calls in a round, the four take turns for seven
# rounds, and each keeps its fastest round: other work on the machine
# slows a round down, never up. The table at the end of this page gives
# what the build measured.

# [gallery-only recurrent_time]
# [start recurrent_time]
import time

fastest_us = {}
for _ in range(7):
    for name, method in methods.items():
        flat = flat_inputs[name.split()[0]]
        start = time.perf_counter()
        for _ in range(500):
            method.execute(flat)
        microseconds = (time.perf_counter() - start) / 500 * 1e6
        fastest_us[name] = min(microseconds, fastest_us.get(name, microseconds))
for name, microseconds in fastest_us.items():
    print(f"{name:>14}: {microseconds:6.1f} us per call of {STEPS} steps")
# [end recurrent_time]

# sphinx_gallery_start_ignore
import os

from xnnguide.core import timings

held.release()
hold = facts.record("timing_hold", held.record())
subject = f"one recurrent layer, {STEPS} steps, {HIDDEN} hidden units, fastest of 7 rounds of 500 calls"
rows, timed = [], []
for name in layers:
    calls, portable = lowered[name]
    ratio = fastest_us[name] / fastest_us[f"{name} as Linear"]
    rows.append([f"nn.{name}", str(calls), short_names(portable),
                 timings.latency_cell(fastest_us[name] / 1000, hold["load"], digits=3),
                 timings.latency_cell(fastest_us[f"{name} as Linear"] / 1000, hold["load"], digits=3),
                 timings.speedup_cell(ratio, hold["load"])])
    timed += [{"kind": "latency", "subject": f"nn.{name} .pte, {subject}", "threads": os.cpu_count(), "batch": 1},
              {"kind": "latency", "subject": f"{name} as Linear .pte, {subject}", "threads": os.cpu_count(), "batch": 1},
              {"kind": "speedup", "subject": f"{name} as Linear against nn.{name}", "threads": os.cpu_count(), "batch": 1}]
timings.record_timing_table(
    "recurrent_table",
    ["Layer", "Delegate calls", "Left on portable kernels", "Latency as the layer, batch 1",
     "Latency as Linear, batch 1", "Rewrite's speed-up"],
    rows, timed=timed, load=hold["load"])
# sphinx_gallery_end_ignore

# %%
# The layers side by side
# -----------------------
#
# .. fact-table:: lower_lstm_and_gru_layers/recurrent_table
#    :caption: One LSTM and one GRU layer as lowered, and rewritten with Linear layers
#
# Both forms compute the same outputs (checked above to 1e-5); the
# rewrite's speed-up, not the microseconds, is the figure to compare
# across machines.
