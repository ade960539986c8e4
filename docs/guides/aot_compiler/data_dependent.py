"""A model ``torch.export`` rejects: its control flow depends on input values."""

import torch


class ClipIfLarge(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # A Python branch on a tensor's value: export sees no value to test.
        if x.abs().max() > 1:
            return x.clamp(-1, 1)
        return x


def build():
    return ClipIfLarge().eval(), (torch.randn(8),)
