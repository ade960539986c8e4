"""Unit tests of xnnguide.core.schemes, the one implementation of the schemes."""

from __future__ import annotations

import pytest
import torch

from xnnguide.core import schemes
from xnnguide.core.schemes import SCHEMES


class _TinyModel(torch.nn.Module):
    """An embedding, a linear layer: enough for every scheme to find work."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(16, 32)
        self.linear = torch.nn.Linear(32, 8)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.linear(self.embed(tokens))


def _tiny():
    torch.manual_seed(0)
    return _TinyModel().eval(), (torch.arange(4).unsqueeze(0),)


def quantize(model, inputs, scheme, calibration=()):
    """*model* quantized with the PT2E scheme called *scheme*, as its record says."""
    chosen = SCHEMES[scheme]
    return schemes.quantize_pt2e(model, inputs, calibration, per_channel=chosen.per_channel,
                                 dynamic=chosen.dynamic_activations)


def test_the_scheme_names_are_the_documented_ones():
    assert list(SCHEMES) == ["int8-static", "int8-static-per-tensor", "int8-dynamic", "8da4w"]
    assert all(isinstance(scheme.description, str) and scheme.description for scheme in SCHEMES.values())


@pytest.mark.parametrize("scheme", ["int8-static", "int8-static-per-tensor"])
def test_static_schemes_refuse_to_run_without_calibration_data(scheme):
    model, inputs = _tiny()
    with pytest.raises(ValueError, match="calibration"):
        quantize(model, inputs, scheme)


def test_dynamic_quantization_without_calibration_still_observes_the_weights():
    # Weight observers fill only during a forward pass; an empty one gives a
    # one-element "per-channel" scale that XNNPACK lowering rejects.
    model, inputs = _tiny()
    converted = quantize(model, inputs, "int8-dynamic")
    scales = [
        node.args[1]
        for node in converted.graph.nodes
        if str(node.target) == "quantized_decomposed.dequantize_per_channel.default"
    ]
    assert scales, "no per-channel weight dequantize in the converted graph"
    values = [getattr(converted, scale.target) for scale in scales]
    assert [tuple(value.shape) for value in values] == [(8,)]


def test_example_inputs_must_be_a_tuple():
    model, inputs = _tiny()
    with pytest.raises(TypeError, match="tuple"):
        schemes.quantize_pt2e(model, inputs[0], [inputs])


def _targets(module: torch.nn.Module) -> set[str]:
    return {str(node.target) for node in module.graph.nodes if node.op == "call_function"}


@pytest.mark.parametrize(
    ("scheme", "weight_op"),
    [
        ("int8-static", "quantized_decomposed.dequantize_per_channel.default"),
        ("int8-static-per-tensor", "quantized_decomposed.dequantize_per_tensor.default"),
        ("int8-dynamic", "quantized_decomposed.dequantize_per_channel.default"),
    ],
)
def test_pt2e_schemes_insert_the_right_quantize_ops(scheme, weight_op):
    model, inputs = _tiny()
    converted = quantize(model, inputs, scheme, [inputs])
    targets = _targets(converted)
    assert weight_op in targets, sorted(targets)
    dynamic = "quantized_decomposed.choose_qparams.tensor" in targets
    assert dynamic == (scheme == "int8-dynamic"), sorted(targets)
    # Quantized, the output stays close to the float model's.
    with torch.no_grad():
        torch.testing.assert_close(converted(*inputs), model(*inputs), atol=0.1, rtol=0.1)


class _ConvBnNet(torch.nn.Module):
    """Convolutions with batch norm and ReLU, additions with and without ReLU, a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU()
        )
        self.block = torch.nn.Sequential(torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8))
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.stem(x)
        y = torch.relu(self.block(y) + y)
        pooled = y.mean(dim=(2, 3))
        return self.head(pooled) + pooled[:, :4]


def _conv_bn_net():
    torch.manual_seed(0)
    model = _ConvBnNet()
    for norm in (model.stem[1], model.block[1]):  # non-trivial statistics to fold
        norm.running_mean.uniform_(-0.5, 0.5)
        norm.running_var.uniform_(0.5, 2.0)
    return model.eval(), (torch.randn(2, 3, 16, 16),)


def _quantize_with_every_pattern(model, inputs, calibration, per_channel):
    # The reference: the XNNPACK quantizer as it comes, QAT patterns included.
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=per_channel))
    prepared = prepare_pt2e(torch.export.export(model, inputs).module(), quantizer)
    with torch.no_grad():
        for sample in calibration:
            prepared(*sample)
    return convert_pt2e(prepared)


@pytest.mark.parametrize("per_channel", [True, False])
def test_leaving_out_the_qat_patterns_changes_nothing_in_post_training_quantization(per_channel):
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import XNNPACKQuantizer

    # The module drops these patterns; if a release had none, the line would be dead.
    assert any(pattern.is_qat for pattern in XNNPACKQuantizer.SUPPORTED_PATTERNS)
    model, inputs = _conv_bn_net()
    calibration = [inputs, (torch.randn(2, 3, 16, 16),)]
    ours = schemes.quantize_pt2e(model, inputs, calibration, per_channel=per_channel)
    reference = _quantize_with_every_pattern(model, inputs, calibration, per_channel)
    assert ours.code == reference.code
    ours_state, reference_state = ours.state_dict(), reference.state_dict()
    assert ours_state.keys() == reference_state.keys()
    for name in ours_state:
        assert torch.equal(ours_state[name], reference_state[name]), name
    with torch.no_grad():
        assert torch.equal(ours(*inputs), reference(*inputs))
    # And it did quantize: the convolutions' weights went through int8.
    assert "quantized_decomposed.dequantize_per_" in " ".join(_targets(ours))
