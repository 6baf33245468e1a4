"""vilab: natural-gradient variational inference, exact and verified.

The analytic and toy layer works in float64: iteration counts reproduced from the papers
depend on it. JAX's 64-bit mode is switched on here, once, for the whole package; code that
wants float32 (the neural-network demos) asks for it explicitly.

Nothing in this package imports streamlit: the UI lives in ``pages/`` and ``vilab_ui``.
"""

import jax

jax.config.update("jax_enable_x64", True)

__version__ = "0.1.0"
__all__ = ["__version__"]
