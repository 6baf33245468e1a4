"""The networks of the CNN lab, by name (the architectures themselves live in :mod:`vilab.models.nets`).

    net = build("lenet5", (28, 28, 1))     # Tan (2025) Sec. 8.3 LeNet-5, P = 61,706
    net = build("bong-cnn", (28, 28, 1))   # Jones, Chang & Murphy Sec. 5, P = 57,722
    net = build("lenet5-digits", (8, 8, 1))  # 8x8 LeNet-style analogue, P = 3,814

See :mod:`vilab.models.nets` for the layer-by-layer definitions and parameter counts.
"""

from __future__ import annotations

from typing import Callable

from vilab.models.nets import Model, bong_cnn, layer_counts, lenet5, lenet5_digits, mlp

__all__ = ["CNN", "lenet5", "bong_cnn", "lenet5_digits", "mlp", "MODELS", "build", "layer_counts", "models_for"]

CNN = Model  # the CNN lab's name for vilab.models.nets.Model

# name -> (builder for an input shape (H, W, C), one-line description)
MODELS: dict[str, tuple[Callable, str]] = {
    "lenet5": (lambda shape: lenet5(shape), "Tan (2025) LeNet-5 (ReLU, max pool, padded first conv)"),
    "lenet5-digits": (lambda shape: lenet5_digits(), "LeNet-style network for 8x8 images"),
    "bong-cnn": (lambda shape: bong_cnn(shape), "Jones, Chang & Murphy's CNN (2 conv x 16, dense 64)"),
    "mlp": (lambda shape: mlp(shape), "MLP with one hidden layer of 32 units"),
}


def models_for(input_shape) -> list[str]:
    """The model names that fit images of ``input_shape`` (LeNet-5 needs at least 12x12)."""
    H, W, C = (int(s) for s in input_shape)
    names = ["lenet5-digits"] if (H, W, C) == (8, 8, 1) else (["lenet5"] if min(H, W) >= 12 else [])
    return names + ["bong-cnn", "mlp"] if min(H, W) >= 4 else names + ["mlp"]


def build(name: str, input_shape) -> Model:
    """The network ``name`` (a key of MODELS) for images of ``input_shape`` = (H, W, C)."""
    if name not in MODELS:
        raise ValueError(f"Unknown model {name!r}; choose one of {', '.join(MODELS)}.")
    if len(tuple(input_shape)) != 3:
        raise ValueError(f"The input shape must be (height, width, channels), e.g. (28, 28, 1); got {input_shape!r}.")
    shape = tuple(int(s) for s in input_shape)
    if name == "lenet5-digits" and shape != (8, 8, 1):
        raise ValueError("lenet5-digits is built for 8x8x1 images; use 'lenet5' for 28x28 or 32x32 images.")
    return MODELS[name][0](shape)
