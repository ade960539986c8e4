"""Make untrained torchvision models behave like trained ones, numerically.

The guide never downloads weights, so its torchvision models start from
random initialisation. Their batch-norm layers then hold default statistics
(mean 0, variance 1) that do not match the activations, and the outputs
shrink towards zero layer by layer: MobileNet V2's logits come out near
``1e-9``. Any absolute tolerance passes on numbers that small, so a
comparison between eager PyTorch and a ``.pte`` would prove nothing.
:func:`calibrate_batchnorm` fixes that in a few forward passes.
"""

from __future__ import annotations

import torch


@torch.no_grad()
def calibrate_batchnorm(
    model: torch.nn.Module,
    input_shape: tuple[int, ...] = (3, 224, 224),
    batches: int = 4,
    batch_size: int = 8,
    seed: int = 0,
) -> torch.nn.Module:
    """Give every batch-norm layer statistics measured on random inputs.

    Runs *batches* batches of standard-normal inputs of shape
    ``(batch_size, *input_shape)`` in training mode, with each batch-norm
    layer averaging over all of them (``momentum=None``), then restores the
    layers' momentum and returns the model in evaluation mode. No weight is
    changed, only the running statistics.
    """
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    momenta = [norm.momentum for norm in norms]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a cumulative average over the batches below
    generator = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(batches):
        model(torch.randn(batch_size, *input_shape, generator=generator))
    for norm, momentum in zip(norms, momenta):
        norm.momentum = momentum
    return model.eval()
