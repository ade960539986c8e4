"""
Quantize a Conv2d with padding='same'
=====================================

``torch.nn.Conv2d(..., padding="same")`` keeps the output as large as the
input. With an odd kernel the padding is the same on both sides; with an
even kernel it is not, and PyTorch pads one more column and row on the
right and bottom. This recipe quantizes one of each to int8, lowers them
to XNNPACK, counts what the partitioner took, and runs both against the
int8 model in eager PyTorch, to within one step of the output's scale.
"""

# %%
# Two convolutions, odd and even kernel
# -------------------------------------
# Each is a convolution followed by a ReLU, on a 3-channel 16×16 input.

import torch

torch.manual_seed(0)
models = {
    kernel: torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, kernel, padding="same"), torch.nn.ReLU()
    ).eval()
    for kernel in (3, 4)
}
calibration = [(torch.rand(1, 3, 16, 16),) for _ in range(8)]

# %%
# Quantize, lower, run, compare
# -----------------------------
# Static int8 with the XNNPACK quantizer, calibrated on eight inputs. The
# check is against the int8 model itself in eager PyTorch, so the only
# difference allowed is rounding: one step of the output's scale, read
# from the int8 graph's last ``dequantize`` node.

# [gallery-only padding_same]
# [start padding_same]
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

results = {}
for kernel, model in models.items():
    captured = torch.export.export(model, calibration[0]).module()
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config())
    prepared = prepare_pt2e(captured, quantizer)
    for inputs in calibration:
        prepared(*inputs)
    int8_model = convert_pt2e(prepared)
    output_scale = [
        node.args[1]
        for node in int8_model.graph.nodes
        if "dequantize_per_tensor" in str(node.target)
    ][-1]

    edge_program = to_edge_transform_and_lower(
        torch.export.export(int8_model, calibration[0]),
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )
    left = [
        node.target.__name__
        for node in edge_program.exported_program().graph.nodes
        if node.op == "call_function"
        and node.target.__name__ not in ("executorch_call_delegate", "getitem")
    ]
    path = f"conv2d_k{kernel}_same_int8.pte"
    with open(path, "wb") as file:
        file.write(edge_program.to_executorch().buffer)

    test_input = torch.rand(1, 3, 16, 16)
    method = Runtime.get().load_program(path).load_method("forward")
    pte_output = method.execute([test_input])[0]
    expected = int8_model(test_input)
    torch.testing.assert_close(pte_output, expected, atol=output_scale * 1.0001, rtol=0)
    steps = (pte_output - expected).abs().max().item() / output_scale
    results[kernel] = (left, steps, tuple(pte_output.shape))
    print(f"kernel {kernel}: output {tuple(pte_output.shape)}, "
          f"left outside XNNPACK: {left or 'nothing'}, "
          f"max |.pte - int8 eager| = {steps:.2f} output steps")
# [end padding_same]

# sphinx_gallery_start_ignore
from xnnguide.core import facts

for kernel, (left, steps, shape) in results.items():
    assert not left, (kernel, left)
    assert shape == (1, 8, 16, 16), shape
    assert steps <= 1.0001, (kernel, steps)
    facts.record(f"k{kernel}_steps", steps, f"{steps:.2f}")
facts.record("kernels", ", ".join(str(kernel) for kernel in results))
# sphinx_gallery_end_ignore
