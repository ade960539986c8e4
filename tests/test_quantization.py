"""Unit tests of xnnguide.quantization, the one implementation of the schemes."""

from __future__ import annotations

import pytest
import torch

from xnnguide import quantization
from xnnguide.quantization import SCHEMES, quantize


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


def test_the_scheme_names_are_the_documented_ones():
    assert list(SCHEMES) == ["int8-static", "int8-static-per-tensor", "int8-dynamic", "8da4w"]
    assert all(isinstance(text, str) and text for text in SCHEMES.values())


@pytest.mark.parametrize("bad", ["int8", "INT8-STATIC", "", "int4"])
def test_an_unknown_scheme_is_refused_naming_the_valid_ones(bad):
    model, inputs = _tiny()
    before = {name: value.clone() for name, value in model.state_dict().items()}
    with pytest.raises(ValueError, match="unknown quantization scheme") as error:
        quantize(model, inputs, bad)
    message = str(error.value)
    assert "\n" not in message
    for name in SCHEMES:
        assert name in message
    # Nothing half-done: the model is untouched.
    after = model.state_dict()
    assert all(torch.equal(before[name], after[name]) for name in before)
    assert type(model.linear) is torch.nn.Linear


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
        quantization.quantize_pt2e(model, inputs[0], [inputs])


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


def test_8da4w_swaps_linear_and_embedding_weights_in_place():
    model, inputs = _tiny()
    with torch.no_grad():
        reference = model(*inputs)
    result = quantize(model, inputs, "8da4w")
    assert result is model
    assert type(model.linear.weight).__name__ == "IntxUnpackedToInt8Tensor"
    assert type(model.embed.weight).__name__ == "IntxUnpackedToInt8Tensor"
    assert model.linear.weight.qdata.max() <= 7 and model.linear.weight.qdata.min() >= -8
    with torch.no_grad():
        torch.testing.assert_close(model(*inputs), reference, atol=0.2, rtol=0.2)


def test_8da4w_can_leave_embeddings_in_float():
    model, _ = _tiny()
    quantization.quantize_8da4w(model, quantize_embeddings=False)
    assert type(model.embed.weight) is torch.nn.Parameter
    assert type(model.linear.weight).__name__ == "IntxUnpackedToInt8Tensor"


def test_8da4w_refuses_widths_the_group_size_does_not_divide_and_changes_nothing():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(16, 64), torch.nn.Linear(64, 40), torch.nn.Linear(40, 8))
    with pytest.raises(ValueError, match=r"groups of 32.*these do not: 2 \(40\)$") as error:
        quantization.quantize_8da4w(model)
    assert "\n" not in str(error.value)
    # The embedding and the first linear layer would fit, but were not touched either.
    assert all(type(module.weight) is torch.nn.Parameter for module in model)
