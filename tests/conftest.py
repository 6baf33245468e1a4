import os
import sys
from pathlib import Path

import pytest

# The pages' results are not kept on disk in tests (vilab_ui/caching.py): a test that replaces a function
# would be served the real function's results. Tests of the store switch it on for themselves.
os.environ["VILAB_RESULT_CACHE"] = "off"
os.environ["VILAB_DATA_CACHE"] = "off"  # decoded data sets (vilab.cnn.data): tests of the folder switch it on

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import vilab  # noqa: E402,F401  (enables x64 before any test builds arrays)


@pytest.fixture
def rng():
    import numpy as np

    return np.random.default_rng(12345)


def random_spd(rng, d, cond=10.0):
    """A random symmetric positive definite matrix with condition number about ``cond``."""
    import numpy as np

    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    w = np.exp(rng.uniform(0, np.log(cond), size=d))
    return (Q * w) @ Q.T


def random_lower(rng, d):
    """A random lower-triangular factor with positive diagonal."""
    import numpy as np

    C = np.tril(rng.normal(size=(d, d)) * 0.5)
    C[np.diag_indices(d)] = np.exp(rng.normal(size=d) * 0.3)
    return C


@pytest.fixture(autouse=True)
def _release_compiled_programs():
    """Free the compiled XLA programs once a test leaves the worker crowded. A pytest worker runs many
    modules in one process; without this, the programs' memory mappings pile up to the kernel's limit
    (vm.max_map_count, 65530 by default) and XLA crashes while compiling."""
    yield
    if vilab.clear_caches_if_crowded(fraction=0.3):
        import gc

        gc.collect()
