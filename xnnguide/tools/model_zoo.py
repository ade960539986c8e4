"""The models the AOT compiler knows by name, and loading a user's own model.

Every model comes from a *factory*: a function without arguments that returns
``(model, example_inputs)``, the ``nn.Module`` in ``eval()`` mode and the
tuple of tensors ``torch.export`` traces it with. The named models below are
such factories; ``--model path/to/file.py:factory`` names a user's.

Nothing here downloads anything. The torchvision models are built with
``weights=None`` and go through :func:`xnnguide.tools.models.calibrate_batchnorm`,
without which their outputs shrink to about ``1e-9`` and every comparison
with eager PyTorch would pass whatever the ``.pte`` computes.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch


class ModelError(Exception):
    """A model that cannot be loaded: the message is one line, for the user."""


@dataclass(frozen=True)
class NamedModel:
    """A model the compiler knows by name."""

    name: str
    description: str
    factory: Callable[[], tuple[torch.nn.Module, tuple[Any, ...]]]


# -- small built-ins -----------------------------------------------------------


class Linear(torch.nn.Module):
    """One fully connected layer, the smallest model worth delegating."""

    def __init__(self) -> None:
        super().__init__()
        # 64 inputs: a multiple of the 8da4w group size (32), so every
        # quantization scheme applies to it.
        self.linear = torch.nn.Linear(64, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


class AddMul(torch.nn.Module):
    """A matrix product plus a tensor: two operators and three inputs."""

    def forward(self, a: torch.Tensor, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.mm(a, x) + b


class TinyTransformer(torch.nn.Module):
    """A one-block, decoder-style language model over a 256-token vocabulary.

    Written out with plain layers (no ``nn.TransformerEncoderLayer``, whose
    inference fast path is a fused kernel) so that the exported graph shows
    the operators a transformer is made of: embedding, layer norm, linear,
    scaled dot-product attention, GELU.
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


def _linear() -> tuple[torch.nn.Module, tuple[Any, ...]]:
    torch.manual_seed(0)
    return Linear().eval(), (torch.randn(4, 64),)


def _add_mul() -> tuple[torch.nn.Module, tuple[Any, ...]]:
    torch.manual_seed(0)
    return AddMul().eval(), (torch.randn(8, 8), torch.randn(8, 8), torch.randn(8, 8))


def _tiny_transformer() -> tuple[torch.nn.Module, tuple[Any, ...]]:
    torch.manual_seed(0)
    return TinyTransformer().eval(), (torch.randint(0, 256, (1, 16)),)


# -- torchvision, without downloaded weights ----------------------------------


def _torchvision(builder_name: str) -> Callable[[], tuple[torch.nn.Module, tuple[Any, ...]]]:
    def factory() -> tuple[torch.nn.Module, tuple[Any, ...]]:
        import torchvision

        from xnnguide.tools.models import calibrate_batchnorm

        torch.manual_seed(0)
        model = calibrate_batchnorm(getattr(torchvision.models, builder_name)(weights=None))
        return model, (torch.randn(1, 3, 224, 224),)

    return factory


MODELS: dict[str, NamedModel] = {
    model.name: model
    for model in (
        NamedModel("linear", "one nn.Linear(64, 32), input 4x64", _linear),
        NamedModel("add_mul", "torch.mm(a, x) + b, three 8x8 inputs", _add_mul),
        NamedModel(
            "tiny_transformer",
            "one-block causal transformer, vocabulary 256, 16 tokens",
            _tiny_transformer,
        ),
        NamedModel("mv2", "untrained torchvision MobileNet V2, input 1x3x224x224",
                   _torchvision("mobilenet_v2")),
        NamedModel("mv3", "untrained torchvision MobileNet V3 small, input 1x3x224x224",
                   _torchvision("mobilenet_v3_small")),
        NamedModel("resnet18", "untrained torchvision ResNet-18, input 1x3x224x224",
                   _torchvision("resnet18")),
    )
}
"""Model name -> :class:`NamedModel`, in the order ``--help`` lists them."""


# -- loading ------------------------------------------------------------------


def check(spec: str) -> None:
    """Raise :class:`ModelError` unless *spec* names a known model or an existing ``.py`` file.

    Cheap: nothing is imported or built, so the command line can reject a
    typo before it loads torch's exporters.
    """
    if spec in MODELS:
        return
    if spec.endswith(".py"):
        raise ModelError(f"{spec} names no factory; give {spec}:FACTORY, the function that builds the model")
    if ":" not in spec or not spec.rsplit(":", 1)[0].endswith(".py"):
        raise ModelError(
            f"unknown model {spec!r}; choose one of {', '.join(MODELS)}, or give FILE.py:FACTORY"
        )
    path_text, factory_name = spec.rsplit(":", 1)
    if not Path(path_text).is_file():
        raise ModelError(f"model file {path_text} does not exist")
    if not factory_name.isidentifier():
        raise ModelError(f"{factory_name!r} in {spec} is not a Python function name")


def load(spec: str) -> tuple[str, torch.nn.Module, tuple[Any, ...]]:
    """Build the model *spec* names; return ``(name, model, example_inputs)``.

    *spec* is a key of :data:`MODELS` or ``path/to/file.py:factory``. The
    returned name is the one the output file is named after. Raises
    :class:`ModelError` with a one-line message for anything that does not
    give a module and a tuple of tensors.
    """
    check(spec)
    if spec in MODELS:
        model, example_inputs = MODELS[spec].factory()
        return spec, model, example_inputs
    path_text, factory_name = spec.rsplit(":", 1)
    path = Path(path_text)
    module = _import_file(path)
    factory = getattr(module, factory_name, None)
    if factory is None:
        defined = sorted(
            name for name, value in vars(module).items()
            if inspect.isfunction(value) and value.__module__ == module.__name__
            and not name.startswith("_")
        )
        listing = f"; it defines: {', '.join(defined)}" if defined else ""
        raise ModelError(f"{path_text} has no function {factory_name!r}{listing}")
    if not callable(factory):
        raise ModelError(f"{path_text}:{factory_name} is {_describe(factory)}, not a function")
    try:
        result = factory()
    except Exception as error:
        raise ModelError(f"{path_text}:{factory_name}() raised {_one_line(error)}") from error
    model, example_inputs = _check_factory_result(result, f"{path_text}:{factory_name}()")
    return f"{path.stem}_{factory_name}", model, example_inputs


def _import_file(path: Path) -> Any:
    """Import a Python file as a module whose name is unlikely to clash."""
    name = f"_xnnguide_user_model_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ModelError(f"{path} cannot be imported as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up here
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[name]
        raise ModelError(f"importing {path} raised {_one_line(error)}") from error
    return module


def _check_factory_result(result: Any, where: str) -> tuple[torch.nn.Module, tuple[Any, ...]]:
    if not (isinstance(result, tuple) and len(result) == 2):
        raise ModelError(
            f"{where} must return (model, example_inputs), not {_describe(result)}"
        )
    model, example_inputs = result
    if not isinstance(model, torch.nn.Module):
        raise ModelError(f"{where} returned {_describe(model)} as the model; expected a torch.nn.Module")
    if isinstance(example_inputs, torch.Tensor):
        raise ModelError(
            f"{where} returned a single tensor as example_inputs; wrap it in a tuple: (tensor,)"
        )
    if not isinstance(example_inputs, tuple) or not all(
        isinstance(item, torch.Tensor) for item in example_inputs
    ):
        raise ModelError(
            f"{where} returned {_describe(example_inputs)} as example_inputs; "
            "expected a tuple of tensors"
        )
    # Export needs inference behaviour (batch norm statistics, no dropout);
    # a factory that forgets eval() would give a different program.
    return model.eval(), example_inputs


def _describe(value: Any) -> str:
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} ({', '.join(type(item).__name__ for item in value)})"
    name = type(value).__name__
    return f"{'an' if name[0].lower() in 'aeiou' else 'a'} {name}"


def _one_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def calibration_inputs(example_inputs: tuple[Any, ...], count: int, seed: int = 0) -> list[tuple[Any, ...]]:
    """*count* synthetic input tuples shaped like *example_inputs*, for calibration.

    The first is the example itself; the others draw floating-point tensors
    from a normal distribution with each example tensor's mean and standard
    deviation, and integer tensors (such as token ids) uniformly between the
    example's smallest and largest value. Random data calibrates the
    compiler's checks, not a model's accuracy: for a deployed model,
    calibrate with real samples through :func:`xnnguide.tools.quantization.quantize`.
    """
    generator = torch.Generator().manual_seed(seed)
    samples = [example_inputs]
    for _ in range(count - 1):
        sample = []
        for tensor in example_inputs:
            if tensor.numel() == 0:
                sample.append(tensor.clone())
            elif tensor.is_floating_point():
                values = tensor.double()
                std = values.std().item() if tensor.numel() > 1 else 0.0
                noise = torch.randn(tensor.shape, generator=generator, dtype=torch.double)
                sample.append((noise * std + values.mean().item()).to(tensor.dtype))
            elif tensor.dtype == torch.bool:
                sample.append(torch.randint(0, 2, tensor.shape, generator=generator).bool())
            else:
                low, high = int(tensor.min()), int(tensor.max())
                sample.append(torch.randint(low, high + 1, tensor.shape, generator=generator,
                                            dtype=tensor.dtype))
        samples.append(tuple(sample))
    return samples
