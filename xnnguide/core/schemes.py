"""The quantization schemes the Quantization guide names (:data:`SCHEMES`), and PT2E quantization with the
XNNPACK quantizer (:func:`quantize_pt2e`), which the operator probes use. PT2E schemes annotate, observe and
convert the exported graph; torchao's ``8da4w`` swaps eager modules' weights before export.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import torch

#: The one tolerance of every int8 program this site checks against the eager
#: int8 model it was lowered from: the SQNR of the program's outputs, in dB,
#: must reach it. Recipes show it to readers as ``MIN_SQNR_DB`` and pass it to
#: :func:`xnnguide.recipe_checks.quantization.record_min_sqnr`, which fails if the two ever differ.
MIN_SQNR_DB = 10.0


@dataclass(frozen=True)
class Scheme:
    """A quantization scheme, and what it means for the flow that applies it and checks its program.

    Tools decide by these fields, never by a scheme's name: a new scheme is one more record.
    """

    name: str
    description: str
    #: Whether the scheme quantizes at all: ``none`` is the fp32 program, checked against fp32 eager PyTorch.
    quantized: bool = True
    #: torchao's flow: the eager modules are swapped for quantized ones before export (and export comes after).
    #: Otherwise PT2E's: the exported graph is annotated, observed and converted.
    quantizes_eager_modules: bool = False
    #: PT2E: one int8 scale per output channel of a weight, else one per tensor.
    per_channel: bool = True
    #: Activation scales computed at run time, so no calibration data is needed.
    dynamic_activations: bool = False
    #: torchao's int4 weights are quantized in groups of this many input features.
    group_size: int | None = None


#: torchao's group size for 8da4w's int4 weights, the one this site uses.
GROUP_SIZE_8DA4W = 32

#: The fp32 program: ``--quantize none``.
NONE = Scheme("none", "no quantization: the fp32 program", quantized=False)

#: Scheme name -> scheme: one row each in the Quantization page's scheme table.
SCHEMES: dict[str, Scheme] = {scheme.name: scheme for scheme in (
    Scheme("int8-static",
           "PT2E static int8: activations calibrated ahead of time, per-channel int8 weights"),
    Scheme("int8-static-per-tensor",
           "PT2E static int8: activations calibrated ahead of time, one int8 scale per weight tensor",
           per_channel=False),
    Scheme("int8-dynamic", "PT2E dynamic int8: activation scales computed at run time, per-channel int8 weights",
           dynamic_activations=True),
    Scheme("8da4w", f"torchao: int8 dynamic activations with int4 weights in groups of {GROUP_SIZE_8DA4W} on "
           "linear layers, int4 weight-only embeddings", quantizes_eager_modules=True, dynamic_activations=True,
           group_size=GROUP_SIZE_8DA4W),
)}


def quantize_pt2e(model: torch.nn.Module, example_inputs: tuple[Any, ...],
                  calibration_inputs: Iterable[tuple[Any, ...]], *, per_channel: bool = True, dynamic: bool = False
                  ) -> torch.fx.GraphModule:
    """Quantize *model* with PT2E and the XNNPACK quantizer; return the converted module.

    The quantizer's config is ``get_symmetric_quantization_config(is_per_channel=per_channel,
    is_dynamic=dynamic)``; every tuple of *calibration_inputs* runs through the prepared
    model. The result runs in eager PyTorch (the "int8 eager" model to compare a ``.pte``
    against) and is ready for ``torch.export.export`` and lowering. Static quantization
    needs calibration inputs (:class:`ValueError` without); dynamic quantization still
    needs one forward pass for its weight observers, so *example_inputs* run once.
    """
    from executorch.backends.xnnpack.quantizer import xnnpack_quantizer as xq
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    if not isinstance(example_inputs, tuple):
        raise TypeError(f"example_inputs must be a tuple, not {type(example_inputs).__name__}")
    calibration_inputs = list(calibration_inputs)
    if not calibration_inputs:
        if not dynamic:
            raise ValueError("static quantization needs calibration inputs (representative data)")
        calibration_inputs = [example_inputs]
    quantizer = xq.XNNPACKQuantizer().set_global(
        xq.get_symmetric_quantization_config(is_per_channel=per_channel, is_dynamic=dynamic))
    # The quantizer also tries conv + batch-norm patterns, which exist for
    # quantization-aware training. prepare_pt2e folds batch norm into the
    # convolutions before it annotates, so here they can never match; yet
    # each one is traced into a pattern graph on every call. Leave them out.
    quantizer.SUPPORTED_PATTERNS = [p for p in quantizer.SUPPORTED_PATTERNS if not p.is_qat]
    prepared = prepare_pt2e(torch.export.export(model, example_inputs).module(), quantizer)
    with torch.no_grad():
        for inputs in calibration_inputs:
            prepared(*inputs)
    return convert_pt2e(prepared)
