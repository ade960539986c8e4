"""The quantization schemes of the AOT compiler (``--quantize``), with the calls the Quantization guide shows.

* **PT2E** (``int8-static``, ``int8-static-per-tensor``, ``int8-dynamic``): the exported graph is
  annotated by ``XNNPACKQuantizer``, observed on sample inputs and converted to quantize/dequantize
  pairs, which the XNNPACK partitioner lowers with the operator between them as one integer operator.
* **torchao** (``8da4w``): ``quantize_`` swaps the weights of ``nn.Linear`` (and ``nn.Embedding``)
  modules for quantized tensor subclasses, in eager mode, before export.
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

#: Scheme name -> scheme; the names :func:`quantize` accepts.
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


def scheme_named(name: str) -> Scheme:
    """The scheme called *name*, ``none`` included; :class:`ValueError` naming the valid ones otherwise."""
    if name == NONE.name:
        return NONE
    if name not in SCHEMES:
        raise ValueError(f"unknown quantization scheme {name!r}; choose one of: {', '.join(SCHEMES)}")
    return SCHEMES[name]


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


def quantize_8da4w(model: torch.nn.Module, *, group_size: int = GROUP_SIZE_8DA4W, quantize_embeddings: bool = True
                   ) -> torch.nn.Module:
    """Apply torchao's 8da4w scheme to *model* in place and return it.

    ``nn.Linear`` layers get int8 activations per token and int4 weights in groups of
    *group_size* (``Int8DynamicActivationIntxWeightConfig``); with *quantize_embeddings*,
    ``nn.Embedding`` layers get int4 weights (``IntxWeightOnlyConfig``). A layer whose width
    *group_size* does not divide is a :class:`ValueError`, before any layer changes.
    """
    from torchao.quantization import Int8DynamicActivationIntxWeightConfig, IntxWeightOnlyConfig, PerGroup, quantize_

    widths = {
        name: module.in_features if isinstance(module, torch.nn.Linear) else module.embedding_dim
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear) or (quantize_embeddings and isinstance(module, torch.nn.Embedding))
    }
    misfits = [f"{name or 'the model'} ({width})" for name, width in widths.items() if width % group_size]
    if misfits:
        raise ValueError(f"8da4w quantizes in groups of {group_size}, which must divide each layer's "
                         f"input width; these do not: {', '.join(misfits)}")
    if quantize_embeddings:
        # quantize_ only touches nn.Linear unless a filter says otherwise.
        quantize_(model, IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(group_size)),
                  filter_fn=lambda module, fqn: isinstance(module, torch.nn.Embedding))
    quantize_(model, Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int4,
                                                           weight_granularity=PerGroup(group_size)))
    return model


def quantize(model: torch.nn.Module, example_inputs: tuple[Any, ...], scheme: str,
             calibration_inputs: Iterable[tuple[Any, ...]] = ()) -> torch.nn.Module:
    """Quantize *model* with *scheme* (a key of :data:`SCHEMES`); return the module to export.

    PT2E schemes return a new module; ``8da4w`` changes *model* in place and
    returns it. The static schemes need *calibration_inputs*. An unknown
    *scheme* raises :class:`ValueError` naming the valid ones, before the
    model is touched.
    """
    chosen = SCHEMES.get(scheme)
    if chosen is None:  # "none" too: it names the fp32 program, which there is nothing to quantize for
        raise ValueError(f"unknown quantization scheme {scheme!r}; choose one of: {', '.join(SCHEMES)}")
    if chosen.quantizes_eager_modules:
        return quantize_8da4w(model, group_size=chosen.group_size)
    return quantize_pt2e(model, example_inputs, calibration_inputs,
                         per_channel=chosen.per_channel, dynamic=chosen.dynamic_activations)
