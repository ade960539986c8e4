"""The models the AOT compiler knows by name, and loading a user's own model.

Every model comes from a *factory*: a function without arguments that returns
``(model, example_inputs)``, the ``nn.Module`` and the tuple of tensors
``torch.export`` traces it with. The named models below are such factories;
``--model path/to/file.py:factory`` names a user's. A file that sets
``DECODER_CONTEXT = N`` holds decoders: models called as ``model(tokens, input_pos)``
that return logits and keep a key/value cache of *N* positions in buffers.

Nothing here downloads anything. The torchvision models are built with
``weights=None`` and go through :func:`calibrate_batchnorm`.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any, Callable

import torch

Factory = Callable[[], tuple[torch.nn.Module, tuple[Any, ...]]]


class ModelError(Exception):
    """A model that cannot be loaded: the message is one line, for the user."""


class AddMul(torch.nn.Module):
    """A matrix product plus a tensor: two operators and three inputs."""

    def forward(self, a: torch.Tensor, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.mm(a, x) + b


class TinyTransformer(torch.nn.Module):
    """A one-block, decoder-style language model over a 256-token vocabulary.

    Plain layers (``nn.TransformerEncoderLayer`` runs a fused kernel in eval
    mode), so that the exported graph shows what a transformer is made of.
    """

    def __init__(self, vocab: int = 256, dim: int = 64, heads: int = 4, context: int = 16) -> None:
        super().__init__()
        self.heads = heads
        self.token_embedding = torch.nn.Embedding(vocab, dim)
        self.position_embedding = torch.nn.Parameter(torch.randn(context, dim) * 0.02)
        self.attention_norm = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.attention_out = torch.nn.Linear(dim, dim)
        self.mlp_norm = torch.nn.LayerNorm(dim)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(), torch.nn.Linear(4 * dim, dim)
        )
        self.final_norm = torch.nn.LayerNorm(dim)
        self.lm_head = torch.nn.Linear(dim, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        batch, length = tokens.shape
        x = self.token_embedding(tokens) + self.position_embedding[:length]
        q, k, v = self.qkv(self.attention_norm(x)).chunk(3, dim=-1)
        # (batch, length, dim) -> (batch, heads, length, dim / heads)
        q, k, v = (t.reshape(batch, length, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        attended = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attention_out(attended.transpose(1, 2).reshape(batch, length, -1))
        x = x + self.mlp(self.mlp_norm(x))
        return self.lm_head(self.final_norm(x))


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


def _torchvision(name: str) -> tuple[torch.nn.Module, tuple[Any, ...]]:
    import torchvision

    return calibrate_batchnorm(getattr(torchvision.models, name)(weights=None)), (torch.randn(1, 3, 224, 224),)


#: Model name -> (description, factory), in the order ``--help`` lists them; :func:`load` seeds torch first.
MODELS: dict[str, tuple[str, Factory]] = {
    # 64 inputs: a multiple of the 8da4w group size (32), so every scheme applies.
    "linear": ("one nn.Linear(64, 32), input 4x64", lambda: (torch.nn.Linear(64, 32), (torch.randn(4, 64),))),
    "add_mul": ("torch.mm(a, x) + b, three 8x8 inputs", lambda: (AddMul(), tuple(torch.randn(8, 8) for _ in range(3)))),
    "tiny_transformer": ("one-block causal transformer, vocabulary 256, 16 tokens",
                         lambda: (TinyTransformer(), (torch.randint(0, 256, (1, 16)),))),
    "mv2": ("untrained torchvision MobileNet V2, input 1x3x224x224", lambda: _torchvision("mobilenet_v2")),
    "mv3": ("untrained torchvision MobileNet V3 small, input 1x3x224x224", lambda: _torchvision("mobilenet_v3_small")),
    "resnet18": ("untrained torchvision ResNet-18, input 1x3x224x224", lambda: _torchvision("resnet18")),
}


def one_line(error: BaseException) -> str:
    """``Type: first line of the message``, for one-line error reports."""
    lines = [" ".join(line.split()) for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def check(spec: str) -> None:
    """Raise :class:`ModelError` unless *spec* names a known model or an existing ``.py`` file; imports nothing."""
    if spec in MODELS:
        return
    if spec.endswith(".py"):
        raise ModelError(f"{spec} names no factory; give {spec}:FACTORY, the function that builds the model")
    path, _, name = spec.rpartition(":")
    if not path.endswith(".py"):
        raise ModelError(f"unknown model {spec!r}; choose one of {', '.join(MODELS)}, or give FILE.py:FACTORY")
    if not Path(path).is_file():
        raise ModelError(f"model file {path} does not exist")
    if not name.isidentifier():
        raise ModelError(f"{name!r} in {spec} is not a Python function name")


def load(spec: str) -> tuple[str, torch.nn.Module, tuple[Any, ...], int | None]:
    """Build the model *spec* (a key of :data:`MODELS` or ``file.py:factory``) names, in ``eval()`` mode.

    Returns ``(name, model, example_inputs, decoder_context)``, the name the
    output file is named after, and the file's ``DECODER_CONTEXT`` (``None``
    for a model that is not a decoder); :class:`ModelError` for anything but
    a module and a tuple of tensors, or a decoder's inputs other than a prompt
    ``(tokens of shape (1, n), input_pos of shape (1,))``.
    """
    check(spec)
    if spec in MODELS:
        torch.manual_seed(0)
        model, example_inputs = MODELS[spec][1]()
        return spec, model.eval(), example_inputs, None
    path, _, name = spec.rpartition(":")
    module = _import_file(Path(path))
    factory = getattr(module, name, None)
    if factory is None:
        defined = sorted(key for key, value in vars(module).items() if inspect.isfunction(value)
                         and value.__module__ == module.__name__ and not key.startswith("_"))
        listing = f"; it defines: {', '.join(defined)}" if defined else ""
        raise ModelError(f"{path} has no function {name!r}{listing}")
    if not callable(factory):
        raise ModelError(f"{spec} is {_describe(factory)}, not a function")
    try:
        result = factory()
    except Exception as error:
        raise ModelError(f"{spec}() raised {one_line(error)}") from error
    if not (isinstance(result, tuple) and len(result) == 2):
        raise ModelError(f"{spec}() must return (model, example_inputs), not {_describe(result)}")
    model, example_inputs = result
    if not isinstance(model, torch.nn.Module):
        raise ModelError(f"{spec}() returned {_describe(model)} as the model; expected a torch.nn.Module")
    if isinstance(example_inputs, torch.Tensor):
        raise ModelError(f"{spec}() returned a single tensor as example_inputs; wrap it in a tuple: (tensor,)")
    if not (isinstance(example_inputs, tuple) and all(isinstance(x, torch.Tensor) for x in example_inputs)):
        raise ModelError(f"{spec}() returned {_describe(example_inputs)} as example_inputs; "
                         "expected a tuple of tensors")
    context = getattr(module, "DECODER_CONTEXT", None)
    shapes = [tuple(x.shape) for x in example_inputs]
    length = shapes[0][-1] if shapes and shapes[0] else 0
    if context is not None and not (type(context) is int and shapes == [(1, length), (1,)] and 0 < length < context):
        raise ModelError(f"{spec}() is a decoder (DECODER_CONTEXT = {context!r}): its example_inputs must be a prompt, "
                         "(tokens of shape (1, n), input_pos of shape (1,)), with 0 < n < DECODER_CONTEXT, an int")
    # Export needs inference behaviour (batch norm statistics, no dropout).
    return f"{Path(path).stem}_{name}", model.eval(), example_inputs, context


def _import_file(path: Path) -> Any:
    """Import a Python file as a module whose name is unlikely to clash."""
    name = f"_xnnguide_user_model_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up here
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[name]
        raise ModelError(f"importing {path} raised {one_line(error)}") from error
    return module


def _describe(value: Any) -> str:
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} ({', '.join(type(item).__name__ for item in value)})"
    name = type(value).__name__
    return f"{'an' if name[0].lower() in 'aeiou' else 'a'} {name}"


def calibration_inputs(example_inputs: tuple[Any, ...], count: int, seed: int = 0) -> list[tuple[Any, ...]]:
    """*count* input tuples like *example_inputs*, for calibration: the example, then random ones.

    Floating-point tensors follow a normal distribution with the example's
    mean and spread, integer ones are uniform over its range. That calibrates
    the compiler's checks, not a model's accuracy.
    """
    generator = torch.Generator().manual_seed(seed)

    def like(tensor: torch.Tensor) -> torch.Tensor:
        if tensor.numel() == 0:
            return tensor.clone()
        if tensor.is_floating_point():
            values = tensor.double()
            std = values.std().item() if tensor.numel() > 1 else 0.0
            noise = torch.randn(tensor.shape, generator=generator, dtype=torch.double)
            return (noise * std + values.mean().item()).to(tensor.dtype)
        low, high = int(tensor.min()), int(tensor.max())
        return torch.randint(low, high + 1, tensor.shape, generator=generator).to(tensor.dtype)

    return [example_inputs, *(tuple(like(tensor) for tensor in example_inputs) for _ in range(count - 1))]
