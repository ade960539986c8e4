"""The quantization schemes of the guide, implemented once.

Every recipe that quantizes a model calls this module, and so do the other
tools of this repository that quantize (the AOT compiler command line, the
performance benchmark) rather than repeat it. The Quantization page
includes the regions marked below, so the code it shows is the code that
produced its numbers.

Two families of scheme reach XNNPACK's integer kernels:

* **PT2E** (``int8-static``, ``int8-static-per-tensor``, ``int8-dynamic``):
  the model is captured as an ATen graph, an ``XNNPACKQuantizer`` annotates
  the operators XNNPACK can run in int8, ``prepare_pt2e`` inserts observers,
  sample inputs are run through it, and ``convert_pt2e`` replaces the
  observers by quantize/dequantize pairs. The XNNPACK partitioner recognises
  those pairs around an operator and lowers the whole group as one integer
  operator.
* **torchao** (``8da4w``): ``quantize_`` swaps the weights of ``nn.Linear``
  (and ``nn.Embedding``) modules for quantized tensor subclasses, in eager
  mode, before export. Linear layers become 8-bit dynamically quantized
  activations times 4-bit grouped weights, which XNNPACK runs; embeddings
  become int4 grouped weights that ExecuTorch's quantized kernel library
  looks up (see the ``quantize_llm_8da4w`` recipe for what that needs).
"""

from __future__ import annotations

import os
from typing import Any, Iterable

import torch

SCHEMES: dict[str, str] = {
    "int8-static": (
        "PT2E static int8: activations calibrated ahead of time, per-channel int8 weights"
    ),
    "int8-static-per-tensor": (
        "PT2E static int8: activations calibrated ahead of time, one int8 scale per weight tensor"
    ),
    "int8-dynamic": (
        "PT2E dynamic int8: activation scales computed at run time, per-channel int8 weights"
    ),
    "8da4w": (
        "torchao: int8 dynamic activations with int4 weights in groups of 32 on linear layers, "
        "int4 weight-only embeddings"
    ),
}
"""Scheme name -> one-line description; the names :func:`quantize` accepts."""


def quantize_pt2e(
    model: torch.nn.Module,
    example_inputs: tuple[Any, ...],
    calibration_inputs: Iterable[tuple[Any, ...]],
    *,
    per_channel: bool = True,
    dynamic: bool = False,
) -> torch.fx.GraphModule:
    """Quantize *model* with PT2E and the XNNPACK quantizer; return the converted module.

    The model is exported with *example_inputs* (put it in ``eval()`` mode
    first), annotated by ``XNNPACKQuantizer`` with
    ``get_symmetric_quantization_config(is_per_channel=per_channel,
    is_dynamic=dynamic)`` (less its quantization-aware-training patterns,
    which cannot match here and only cost time), prepared with
    ``prepare_pt2e``, fed every tuple of *calibration_inputs*, and converted
    with ``convert_pt2e``.

    With ``dynamic=False`` the observers record activation ranges from the
    calibration inputs, so give it representative data: the scales are frozen
    into the program; :class:`ValueError` if there is none. With
    ``dynamic=True`` activation scales are computed at run time and only the
    weights need observing, which any forward pass does: with no calibration
    inputs, *example_inputs* is run once. (Without any forward pass the
    weight observers stay empty, and lowering fails later with a confusing
    message about the size of per-channel scales.)

    The result is an ``torch.fx.GraphModule`` that runs in eager PyTorch
    (this is the "int8 eager" model to compare a ``.pte`` against) and is
    ready for ``torch.export.export(converted, example_inputs)`` and XNNPACK
    lowering.
    """
    # [start quant_pt2e_imports]
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    # [end quant_pt2e_imports]
    if not isinstance(example_inputs, tuple):
        raise TypeError(f"example_inputs must be a tuple, not {type(example_inputs).__name__}")
    calibration_inputs = list(calibration_inputs)
    if not calibration_inputs:
        if not dynamic:
            raise ValueError("static quantization needs calibration inputs (representative data)")
        calibration_inputs = [example_inputs]
    # [start quant_pt2e_prepare]
    # Quantization works on the exported ATen graph, not on nn.Modules.
    captured = torch.export.export(model, example_inputs).module()
    quantizer = XNNPACKQuantizer().set_global(
        get_symmetric_quantization_config(is_per_channel=per_channel, is_dynamic=dynamic)
    )
    # The quantizer also tries conv + batch-norm patterns, which exist for
    # quantization-aware training. prepare_pt2e folds batch norm into the
    # convolutions before it annotates, so here they can never match; yet
    # each one is traced into a pattern graph on every call. Leave them out.
    quantizer.SUPPORTED_PATTERNS = [p for p in quantizer.SUPPORTED_PATTERNS if not p.is_qat]
    prepared = prepare_pt2e(captured, quantizer)
    # [end quant_pt2e_prepare]
    # [start quant_pt2e_calibrate]
    # Observers record value ranges while representative inputs flow through.
    with torch.no_grad():
        for inputs in calibration_inputs:
            prepared(*inputs)
    converted = convert_pt2e(prepared)
    # [end quant_pt2e_calibrate]
    return converted


def quantize_8da4w(
    model: torch.nn.Module,
    *,
    group_size: int = 32,
    quantize_embeddings: bool = True,
) -> torch.nn.Module:
    """Apply torchao's 8da4w scheme to *model* in place and return it.

    Every ``nn.Linear`` gets ``Int8DynamicActivationIntxWeightConfig``:
    int4 symmetric weights with one scale per *group_size* input columns
    (``PerGroup(group_size)``), activations quantized to int8 per token at
    run time. With *quantize_embeddings*, every ``nn.Embedding`` gets
    ``IntxWeightOnlyConfig`` with int4 weights in groups of *group_size*
    (looked up and dequantized per row; there is no activation to quantize).

    The input width of each linear layer (and the embedding dimension, when
    embeddings are quantized) must be a multiple of *group_size*; otherwise
    :class:`ValueError` names the offending layers, before any is changed.
    """
    widths = {
        name: module.in_features if isinstance(module, torch.nn.Linear) else module.embedding_dim
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear)
        or (quantize_embeddings and isinstance(module, torch.nn.Embedding))
    }
    misfits = [f"{name or 'the model'} ({width})" for name, width in widths.items() if width % group_size]
    if misfits:
        raise ValueError(
            f"8da4w quantizes in groups of {group_size}, which must divide each layer's "
            f"input width; these do not: {', '.join(misfits)}"
        )
    # [start quant_8da4w]
    from torchao.quantization import (
        Int8DynamicActivationIntxWeightConfig,
        IntxWeightOnlyConfig,
        PerGroup,
        quantize_,
    )

    if quantize_embeddings:
        # quantize_ only touches nn.Linear unless a filter says otherwise.
        quantize_(
            model,
            IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(group_size)),
            filter_fn=lambda module, fqn: isinstance(module, torch.nn.Embedding),
        )
    quantize_(
        model,
        Int8DynamicActivationIntxWeightConfig(
            weight_dtype=torch.int4, weight_granularity=PerGroup(group_size)
        ),
    )
    # [end quant_8da4w]
    return model


def quantize(
    model: torch.nn.Module,
    example_inputs: tuple[Any, ...],
    scheme: str,
    calibration_inputs: Iterable[tuple[Any, ...]] = (),
) -> torch.nn.Module:
    """Quantize *model* with the scheme named *scheme* (a key of :data:`SCHEMES`).

    Returns the module to export with ``torch.export.export(result,
    example_inputs)``. PT2E schemes return a new module; ``8da4w`` changes
    *model* in place and returns it. *calibration_inputs* is required by the
    static schemes (:class:`ValueError` without it) and optional for the
    others. Raises :class:`ValueError` naming the valid
    schemes when *scheme* is unknown, before touching the model.
    """
    if scheme not in SCHEMES:
        raise ValueError(
            f"unknown quantization scheme {scheme!r}; choose one of: {', '.join(SCHEMES)}"
        )
    if scheme == "8da4w":
        return quantize_8da4w(model)
    return quantize_pt2e(
        model,
        example_inputs,
        calibration_inputs,
        per_channel=scheme != "int8-static-per-tensor",
        dynamic=scheme == "int8-dynamic",
    )
