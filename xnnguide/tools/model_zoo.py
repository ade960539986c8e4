"""The one ``calibrate_batchnorm``: batch-norm statistics for an untrained image model.

Recipes that need it write the same function out in full, because a reader's download runs alone;
``tests/static/test_shared_recipe_code.py`` keeps every copy equal to this one.
"""

from __future__ import annotations

import torch


def calibrate_batchnorm(model: torch.nn.Module, batches: int = 4, batch_size: int = 8) -> torch.nn.Module:
    """Give every batch-norm layer of an untrained image model statistics measured on random images.

    With the default statistics the activations of a randomly initialised
    network shrink layer by layer (MobileNet V2's logits come out near
    ``1e-9``), and any tolerance would pass a comparison with them. *batches*
    batches of ``(batch_size, 3, 224, 224)`` random images run in training
    mode, each layer averaging over all; no weight changes.
    """
    norms = [module for module in model.modules() if isinstance(module, torch.nn.BatchNorm2d)]
    momenta = [norm.momentum for norm in norms]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a cumulative average over the batches below
    generator = torch.Generator().manual_seed(0)
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(batch_size, 3, 224, 224, generator=generator))
    for norm, momentum in zip(norms, momenta):
        norm.momentum = momentum
    return model.eval()  # export needs batch norm and dropout in inference mode
