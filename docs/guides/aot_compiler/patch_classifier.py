"""A vision transformer in a few layers: 16 patches and a class token, one mixing layer, a head."""

import torch


class PatchClassifier(torch.nn.Module):
    def __init__(self, dim: int = 32, classes: int = 10) -> None:
        super().__init__()
        self.patches = torch.nn.Conv2d(3, dim, kernel_size=8, stride=8)
        self.class_token = torch.nn.Parameter(torch.randn(1, 1, dim))
        self.mix = torch.nn.Linear(dim, dim)
        self.head = torch.nn.Linear(dim, classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        tokens = self.patches(images).flatten(2).transpose(1, 2)  # (batch, 16, dim)
        # One class token per image. With a batch of one, this expand leaves
        # the shape as it is: a no-op that the XNNPACK transform passes remove.
        class_tokens = self.class_token.expand(images.shape[0], -1, -1)
        tokens = torch.cat([class_tokens, tokens], dim=1)
        tokens = tokens + torch.relu(self.mix(tokens))
        return self.head(tokens[:, :1].flatten(1))


def build():
    """The factory: the model in eval() mode and the inputs to export it with."""
    torch.manual_seed(0)
    return PatchClassifier().eval(), (torch.randn(1, 3, 32, 32),)
