"""The horseshoe crab data (Agresti 2018, An Introduction to Categorical Data Analysis, Table 3.2; Brockmann 1996):
for each of n = 173 female horseshoe crabs, the number of male satellites ``sat`` and the female's carapace
``width`` (cm), ``weight`` (kg), ``color`` (1 = medium light ... 4 = dark) and ``spine`` condition.

The table ships with vilab (``vilab/data/horseshoe_crabs.csv``, 173 rows; taken from ``Crabs.dat`` of the
author's repository github.com/alanagresti/categorical-data, see ``vilab/data/SOURCES.md``). It is checked
against three published numbers: sum y = 505 and sum log y! = 530.034417, the constants of Tan (2025)'s
1-D toy (:mod:`vilab.targets.papers`), and the maximum-likelihood fit log E(sat) = -3.305 + 0.164 width
that Agresti prints for Model 1.

:func:`horseshoe_crabs` builds the two Poisson loglinear models of Tan (2025) Sec. 5 / Fig. 2 (prior
N(0, 100 I)):

* ``"width"``           Model 1, Sa ~ Width: eta = b0 + b1 width, d = 2;
* ``"colour + width"``  Model 2, Sa ~ Color + Width, colour as a factor (dummies for colours 2, 3, 4;
                        colour 1 is the baseline; the paper does not say how it codes colour), d = 5.

Width is used raw (not centred), as in the paper's formula.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

__all__ = ["CRAB_MODELS", "crab_table", "crab_data_path", "horseshoe_crabs"]

#: model key -> what a student reads
CRAB_MODELS = {
    "width": "satellites ~ width (Model 1, d = 2)",
    "colour + width": "satellites ~ colour + width (Model 2, d = 5)",
}


def crab_data_path() -> Path:
    """The shipped table (``vilab/data/horseshoe_crabs.csv``)."""
    return Path(__file__).resolve().parent.parent / "data" / "horseshoe_crabs.csv"


@lru_cache(maxsize=1)
def crab_table():
    """The 173 rows as a pandas DataFrame (columns crab, sat, y, weight, width, color, spine)."""
    import pandas as pd

    return pd.read_csv(crab_data_path())


@lru_cache(maxsize=4)
def horseshoe_crabs(model: str = "width", prior_var: float = 100.0):
    """Poisson loglinear regression of the number of satellites (Tan (2025) Sec. 5, Fig. 2), as a
    :class:`vilab.targets.regression.GLMModel` with the exact ELBO of Supp. S2 (sum log y! included)."""
    from scipy.special import gammaln

    from .regression import GLMModel

    if not isinstance(model, str) or model not in CRAB_MODELS:
        raise ValueError(f"Unknown crab model {model!r}; choose one of {', '.join(map(repr, CRAB_MODELS))}.")
    df = crab_table()
    y = df["sat"].to_numpy(float)
    cols, names = [np.ones(len(y))], ["intercept"]
    if model == "colour + width":
        for c in (2, 3, 4):
            cols.append((df["color"] == c).to_numpy(float))
            names.append(f"colour {c}")
    cols.append(df["width"].to_numpy(float))
    names.append("width")
    return GLMModel(CRAB_MODELS[model], np.column_stack(cols), y, "poisson", float(prior_var),
                    log_y_factorial_sum=float(gammaln(y + 1.0).sum()), feature_names=tuple(names),
                    source="Agresti (2018) Table 3.2, horseshoe crabs, n = 173 (shipped with vilab)")
