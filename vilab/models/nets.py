"""Neural networks in plain JAX with a flat parameter vector: the MLPs and CNNs of the papers.

Why plain ``jax.lax`` and not flax: a variational posterior over *all* weights wants the
weights as ONE flat vector theta (mu and sigma have the same shape; the natural gradient of
Tan (2025) Sec. 5 "diagonal C" is elementwise on it; the BONG filters of vilab.online take
f(x, theta) with a flat theta). ``jax.flatten_util.ravel_pytree`` of a small dict of arrays
gives exactly that with no framework state, and the count of every layer is visible here.

Every builder returns a :class:`Model`::

    net = lenet5()                                 # Tan (2025) Sec. 8.3, P = 61,706
    theta = net.init(jax.random.PRNGKey(0))        # (P,) flat parameter vector
    logits = net.apply_batch(theta, X)             # X: (N, *in_shape) or (N, prod(in_shape)) -> (N, C)
    logits1 = net.apply(theta, x)                  # ONE example -> (C,)
    net.n_params, net.layers                       # P, ((layer, count), ...)

``apply(theta, x)`` takes one example, as the online filters of Jones, Chang & Murphy process
one example per step (f_t(theta) = f(x_t, theta)); ``apply_batch`` is the batched forward pass
used by minibatch training. ``unravel`` maps a flat vector back to the per-layer dictionary
(ravel order: layer names sorted, ``b`` before ``w``).

Architectures
-------------
* :func:`lenet5` - Tan (2025) Sec. 8.3 (digest Sec. 5.7): LeNet-5 with sigmoid -> ReLU and
  average -> max pooling: Conv 5x5 (c -> 6, padding 2) -> ReLU -> MaxPool 2 -> Conv 5x5
  (6 -> 16, no padding) -> ReLU -> MaxPool 2 -> Dense 120 -> ReLU -> Dense 84 -> ReLU -> Dense 10.
  28x28x1: 156 + 2,416 + 48,120 + 10,164 + 850 = 61,706; 32x32x3 (CIFAR-10): 456 + 2,416 +
  69,240 + 10,164 + 850 = 83,126 (the paper's d; without the padding MNIST would give 44,426).
* :func:`lenet5_digits` - the LeNet-style network sized for scikit-learn's 8x8 digits
  (first convolution as in LeNet-5, second one 3x3 SAME, dense 64 -> 32 -> 16 -> 10): P = 3,814.
* :func:`bong_cnn` - Jones, Chang & Murphy Sec. 5 (authors' ``bong/util.py`` class CNN):
  Conv(16, 5x5, SAME) -> ReLU -> AvgPool 2 -> Conv(16, 5x5, SAME) -> ReLU -> AvgPool 2 ->
  Dense 64 -> ReLU -> Dense 10. 28x28x1: 416 + 6,416 + 50,240 + 650 = 57,722 (the paper's
  count); on 8x8x1 it is the "digits-CNN" of the BONG digest Sec. 4.1 (b): 416 + 6,416 +
  4,160 + 650 = 11,642.
* :func:`mlp` - dense ReLU network on the flattened image (digits 64-32-10: P = 2,410).
* The online-learning API (vilab.online): :func:`make_mlp` (``[64, 32, 10]`` is the digits
  MLP of the BONG digest Sec. 4.1 (a), 2,410 parameters), :func:`make_linear` (softmax
  regression, 650 for digits), :func:`make_cnn` (= :func:`bong_cnn` on grey H x W images),
  :func:`digits_mlp`, :func:`digits_cnn`. Same code as the builders above.

Initialisation: LeCun-normal kernels (variance 1/fan_in) and zero biases, Flax's defaults and
the "standard NN initializer" from which the BONG paper draws mu_0 (Tan uses Xavier for DNN
weights; both are fan-scaled Gaussians). dtype: ``init(key, dtype=None)`` uses the builder's
default, float32 for the CNN-lab builders (:func:`lenet5`, :func:`lenet5_digits`,
:func:`bong_cnn`, :func:`mlp`; DEVELOPING.md: neural-network code is float32) and float64 for
the ``make_*`` / ``digits_*`` builders of the online-learning layer (vilab's x64 analytic
default). ``apply`` always computes in theta's dtype.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from ..core.checks import integer

__all__ = ["Model", "lenet5", "lenet5_digits", "bong_cnn", "mlp", "layer_counts",
           "make_mlp", "make_cnn", "make_linear", "digits_mlp", "digits_cnn", "n_params_of"]


class Model(NamedTuple):
    """A network with a flat parameter vector.

    init(key, dtype=None) -> (P,); apply(theta, x) -> (out_dim,) for ONE example;
    n_params = P; unravel(theta) -> layer dict; name; in_shape = shape of one input
    ((H, W, C) for images, (d,) for make_mlp); out_dim; apply_batch(theta, X) -> (N, out_dim);
    layers: ((layer, n_params), ...); dtype: the default dtype of ``init``.
    """

    init: Callable
    apply: Callable
    n_params: int
    unravel: Callable
    name: str
    in_shape: tuple
    out_dim: int
    apply_batch: Callable
    layers: tuple
    dtype: type


# ------------------------------------------------------------------------------- layers
def _lecun(key, shape, fan_in, dtype):
    return jax.random.normal(key, shape, dtype) * jnp.asarray(np.sqrt(1.0 / fan_in), dtype)


def _conv(h, w, b, padding):
    """NHWC convolution with HWIO kernel, stride 1 (jax.lax.conv_general_dilated)."""
    return jax.lax.conv_general_dilated(h, w, (1, 1), padding, dimension_numbers=("NHWC", "HWIO", "NHWC")) + b


def _maxpool2(h):
    """2x2 max pooling, stride 2, VALID (LeNet-5's pooling after Tan's average -> max change)."""
    return jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def _avgpool2(h):
    """2x2 average pooling, stride 2, VALID (flax.linen.avg_pool as in the BONG repository)."""
    N, H, W, C = h.shape
    return h[:, : H // 2 * 2, : W // 2 * 2].reshape(N, H // 2, 2, W // 2, 2, C).mean(axis=(2, 4))


def _dense_tree(keys, sizes, dtype, first=0):
    return {
        f"dense{first + l}": {"w": _lecun(keys[l], (sizes[l], sizes[l + 1]), sizes[l], dtype),
                              "b": jnp.zeros((sizes[l + 1],), dtype)}
        for l in range(len(sizes) - 1)
    }


def _dense_forward(p, h, n_layers, activation=jax.nn.relu, first=0):
    for l in range(n_layers):
        h = h @ p[f"dense{first + l}"]["w"] + p[f"dense{first + l}"]["b"]
        if l < n_layers - 1:
            h = activation(h)
    return h


def _unraveller(shapes):
    """``ravel_pytree``'s unravel function for a tree of ``jax.ShapeDtypeStruct``, made under ``jax.eval_shape``:
    it depends on the leaves' shapes and dtypes only, and building it from arrays of zeros ran one eager
    operation per leaf (each compiled once per process: 0.3 s of a restarted server's first LeNet-5)."""
    made = {}

    def flat():
        v, made["unravel"] = ravel_pytree(jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), shapes))
        return v

    jax.eval_shape(flat)
    return made["unravel"]


def _finish(name, init_tree, forward, in_shape, out_dim, dtype) -> Model:
    """Flat-vector Model from a parameter-tree initialiser and a batched forward pass."""
    tree0 = jax.eval_shape(lambda: init_tree(jax.random.PRNGKey(0), jnp.float32))
    counts = tuple((k, int(sum(int(np.prod(a.shape)) for a in jax.tree_util.tree_leaves(v))))
                   for k, v in sorted(tree0.items()))
    unravel0 = _unraveller(tree0)
    n = sum(c for _, c in counts)
    in_shape = tuple(int(s) for s in in_shape)
    default = jnp.dtype(dtype).type

    init_jit = jax.jit(lambda key, dt: ravel_pytree(init_tree(key, dt))[0], static_argnums=1)

    def init(key, dtype=None):
        return init_jit(key, default if dtype is None else jnp.dtype(dtype).type)

    def unravel(theta):
        return jax.tree_util.tree_map(lambda a: a.astype(theta.dtype), unravel0(theta))

    def apply_batch(theta, X):
        X = jnp.asarray(X, theta.dtype).reshape((-1,) + in_shape)
        return forward(unravel(theta), X)

    def apply(theta, x):
        return apply_batch(theta, jnp.reshape(x, (1,) + in_shape))[0]

    return Model(init, apply, int(n), unravel, name, in_shape, int(out_dim), apply_batch, counts, default)


def _check_shape(input_shape):
    if isinstance(input_shape, str) or np.ndim(input_shape) != 1 or len(input_shape) != 3:
        raise ValueError(f"The input shape must be (height, width, channels), e.g. (28, 28, 1); got {input_shape!r}.")
    return tuple(integer(s, "Every entry of the input shape (height, width, channels)", minimum=1) for s in input_shape)


def _widths(sizes, what: str) -> list[int]:
    """Layer widths (or channel counts) as positive ints, ValueError naming ``what`` otherwise."""
    if isinstance(sizes, (str, bytes)) or np.ndim(sizes) != 1:
        raise ValueError(f"{what} must be a list of positive whole numbers, e.g. [64, 32, 10]; got {sizes!r}.")
    return [integer(s, f"Every entry of {what}", minimum=1) for s in sizes]


# ------------------------------------------------------------------------ architectures
def lenet5(input_shape=(28, 28, 1), n_classes: int = 10, conv2_kernel: int = 5, conv2_padding: str = "VALID",
           hidden: Sequence[int] = (120, 84), name: str | None = None) -> Model:
    """Tan (2025) Sec. 8.3 LeNet-5 variant (ReLU, max pooling, first convolution padded by 2).

    Conv 5x5 (c -> 6, pad 2) -> ReLU -> MaxPool 2 -> Conv k x k (6 -> 16, ``conv2_padding``) ->
    ReLU -> MaxPool 2 -> Dense hidden[0] -> ReLU -> ... -> Dense n_classes.
    Defaults give 61,706 parameters for (28, 28, 1) and 83,126 for (32, 32, 3) (Tan Sec. 8.3).
    """
    H, W, C = _check_shape(input_shape)
    k2 = integer(conv2_kernel, "conv2_kernel", minimum=1)
    h1, w1 = H // 2, W // 2  # conv1 keeps the size (5x5 with padding 2), then pool
    if conv2_padding == "VALID":
        h2, w2 = h1 - k2 + 1, w1 - k2 + 1
    elif conv2_padding == "SAME":
        h2, w2 = h1, w1
    else:
        raise ValueError("conv2_padding must be 'VALID' or 'SAME'.")
    h2, w2 = h2 // 2, w2 // 2
    if min(h1, w1, h2, w2) < 1:
        raise ValueError(f"An image of {H}x{W} is too small for LeNet-5's two 2x2 poolings with a "
                         f"{k2}x{k2} second convolution; use lenet5-digits for 8x8 images.")
    sizes = [h2 * w2 * 16] + _widths(hidden, "hidden") + [integer(n_classes, "n_classes", minimum=1)]

    def init_tree(key, dtype):
        ks = jax.random.split(key, 2 + len(sizes) - 1)
        tree = {
            "conv0": {"w": _lecun(ks[0], (5, 5, C, 6), 25 * C, dtype), "b": jnp.zeros((6,), dtype)},
            "conv1": {"w": _lecun(ks[1], (k2, k2, 6, 16), k2 * k2 * 6, dtype), "b": jnp.zeros((16,), dtype)},
        }
        tree.update(_dense_tree(ks[2:], sizes, dtype))
        return tree

    def forward(p, X):
        h = _maxpool2(jax.nn.relu(_conv(X, p["conv0"]["w"], p["conv0"]["b"], ((2, 2), (2, 2)))))
        h = _maxpool2(jax.nn.relu(_conv(h, p["conv1"]["w"], p["conv1"]["b"], conv2_padding)))
        return _dense_forward(p, h.reshape(h.shape[0], -1), len(sizes) - 1)

    return _finish(name or f"lenet5-{H}x{W}x{C}", init_tree, forward, (H, W, C), n_classes, jnp.float32)


def lenet5_digits(n_classes: int = 10) -> Model:
    """LeNet-style network for 8x8x1 digits: LeNet-5's first block, a 3x3 SAME second convolution,
    dense 64 -> 32 -> 16 -> 10 (P = 156 + 880 + 2,080 + 528 + 170 = 3,814). Our scaled-down
    analogue of Tan (2025) Sec. 8.3 (the 5x5 VALID second convolution does not fit a 4x4 map)."""
    return lenet5((8, 8, 1), n_classes, conv2_kernel=3, conv2_padding="SAME", hidden=(32, 16), name="lenet5-digits")


def bong_cnn(input_shape=(28, 28, 1), channels: Sequence[int] = (16, 16), kernel: int = 5, hidden: int = 64,
             n_classes: int = 10, name: str | None = None, dtype=jnp.float32) -> Model:
    """The CNN of Jones, Chang & Murphy Sec. 5 (57,722 parameters on 28x28x1).

    Conv(c, kxk, SAME) -> ReLU -> AvgPool 2 for each c in ``channels``, Dense(hidden) -> ReLU ->
    Dense(n_classes). (8, 8, 1) gives the digits-CNN (11,642, BONG digest Sec. 4.1 (b)).
    """
    H, W, C = _check_shape(input_shape)
    chans = [C] + _widths(channels, "channels")
    h, w = H, W
    for _ in channels:
        h, w = h // 2, w // 2
    if h < 1 or w < 1:
        raise ValueError("The image is too small for this many 2x2 poolings; use fewer convolution layers.")
    n_flat = h * w * chans[-1]
    k = integer(kernel, "kernel", minimum=1)
    hidden, n_classes = integer(hidden, "hidden", minimum=1), integer(n_classes, "n_classes", minimum=1)

    def init_tree(key, dt):
        ks = jax.random.split(key, len(channels) + 2)
        tree = {
            f"conv{l}": {"w": _lecun(ks[l], (k, k, chans[l], chans[l + 1]), k * k * chans[l], dt),
                         "b": jnp.zeros((chans[l + 1],), dt)}
            for l in range(len(channels))
        }
        tree.update(_dense_tree(ks[len(channels):], [n_flat, int(hidden), int(n_classes)], dt))
        return tree

    def forward(p, X):
        h = X
        for l in range(len(channels)):
            h = _avgpool2(jax.nn.relu(_conv(h, p[f"conv{l}"]["w"], p[f"conv{l}"]["b"], "SAME")))
        return _dense_forward(p, h.reshape(h.shape[0], -1), 2)

    return _finish(name or f"bong-cnn-{H}x{W}x{C}", init_tree, forward, (H, W, C), n_classes, dtype)


def _dense_model(in_shape, sizes, activation, name, dtype) -> Model:
    if len(sizes) < 2 or min(sizes) < 1:
        raise ValueError("An MLP needs an input and an output width and at least one unit per layer, e.g. [64, 32, 10].")

    def init_tree(key, dt):
        return _dense_tree(jax.random.split(key, len(sizes) - 1), sizes, dt)

    def forward(p, X):
        return _dense_forward(p, X.reshape(X.shape[0], -1), len(sizes) - 1, activation)

    return _finish(name or "mlp-" + "-".join(map(str, sizes)), init_tree, forward, in_shape, sizes[-1], dtype)


def mlp(input_shape=(8, 8, 1), hidden: Sequence[int] = (32,), n_classes: int = 10, name: str | None = None) -> Model:
    """Dense ReLU network on the flattened image (digits 64-32-10: P = 2,410, as :func:`digits_mlp`)."""
    H, W, C = _check_shape(input_shape)
    sizes = [H * W * C] + _widths(hidden, "hidden") + [integer(n_classes, "n_classes", minimum=1)]
    return _dense_model((H, W, C), sizes, jax.nn.relu, name, jnp.float32)


def layer_counts(net: Model) -> dict[str, int]:
    """Parameters per layer, e.g. {'conv0': 156, 'conv1': 2416, 'dense0': 48120, ...}."""
    return dict(net.layers)


# ------------------------------------------------- online-learning API (vilab.online), float64
def make_mlp(sizes: Sequence[int], activation: Callable = jax.nn.relu, name: str | None = None) -> Model:
    """Multilayer perceptron with layer widths ``sizes = [d_in, h_1, ..., d_out]`` (float64 init).

    Parameters: sum_l (sizes[l] * sizes[l+1] + sizes[l+1]). ``[64, 32, 10]`` gives 2,410.
    """
    sizes = _widths(sizes, "sizes")
    return _dense_model((sizes[0] if sizes else 1,), sizes, activation, name, jnp.float64)


def make_linear(d_in: int, d_out: int) -> Model:
    """Affine model f(x, theta) = W^T x + b (P = d_in * d_out + d_out)."""
    return make_mlp([d_in, d_out], name=f"linear-{d_in}-{d_out}")


def make_cnn(image_shape: tuple[int, int] = (8, 8), channels: Sequence[int] = (16, 16), kernel: int = 5,
             hidden: int = 64, n_classes: int = 10, name: str | None = None) -> Model:
    """:func:`bong_cnn` on grey ``image_shape`` images, float64 init (x may be flat (H*W,)).
    (8, 8) gives the digits-CNN with P = 11,642; (28, 28) the paper's P = 57,722."""
    if isinstance(image_shape, str) or np.ndim(image_shape) != 1 or len(image_shape) != 2:
        raise ValueError(f"image_shape must be (height, width), e.g. (8, 8); got {image_shape!r}.")
    Hh, Ww = (integer(s, "Every entry of image_shape", minimum=1) for s in image_shape)
    return bong_cnn((Hh, Ww, 1), channels, kernel, hidden, n_classes, name=name or f"cnn-{Hh}x{Ww}",
                    dtype=jnp.float64)


def digits_mlp() -> Model:
    """The digits MLP 64-32-10 (P = 2,410), BONG digest Sec. 4.1 (a)."""
    return make_mlp([64, 32, 10], name="digits-mlp")


def digits_cnn() -> Model:
    """The digits-CNN (P = 11,642), BONG digest Sec. 4.1 (b)."""
    return make_cnn((8, 8), name="digits-cnn")


def n_params_of(sizes: Sequence[int]) -> int:
    """Parameter count of ``make_mlp(sizes)`` without building it."""
    s = _widths(sizes, "sizes")
    return sum(a * b + b for a, b in zip(s[:-1], s[1:]))
