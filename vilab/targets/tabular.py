"""Your own data: a CSV file read, checked and turned into a logistic or Poisson regression.

The lab's regression pages (Adam vs SNNGM, Trajectories) take a user's CSV file through this module:

* :func:`read_csv` reads the bytes of an upload with pandas' C parser (no ``eval``, no pickle, no
  code of any kind), after checking the size limit; it refuses files that are not UTF-8 text, have no
  header row, repeat a column name or exceed :data:`LIMITS`.
* :func:`design_matrix` builds X (standardised predictors, optional intercept column) and y from the
  chosen response and predictor columns, checking types, missing values (or dropping their rows when
  asked), the response's values (0/1 for logistic regression, counts 0, 1, 2, ... for Poisson) and
  constant columns.
* :func:`glm_model` wraps the result in :class:`vilab.targets.regression.GLMModel`, the model of
  Tan (2025) Sec. 8 (prior theta ~ N(0, sigma0^2 I), sigma0^2 = 100), the same object as the lab's own
  data sets: ``model.target()`` gives the :class:`vilab.targets.Target` the update-rule catalogue takes,
  ``vilab.algorithms.optim.run(model, ...)`` runs Tan's optimizers on it.

For fits in more than two dimensions, pages show two coefficients: :func:`project_trace` keeps two
coordinates of a run (the mean's path and the 2 x 2 marginal covariances), :func:`slice_log_joint`
evaluates log p(y, theta) on a 2-D slice through a point (the other coefficients held fixed) and
:func:`slice_target` gives that slice as a 2-D :class:`~vilab.targets.Target`.

Every failure is a ValueError with a sentence a student can act on.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.special import gammaln

__all__ = ["LIMITS", "FAMILIES", "limits_text", "read_csv", "numeric_columns", "response_columns",
           "default_response",
           "Design", "design_matrix", "glm_model", "project_trace", "slice_log_joint", "slice_target"]

#: What a CSV file may hold.
LIMITS = dict(file_mb=5, rows=100_000, predictors=50, min_rows=10)

#: The models a CSV file can be fitted with: the page's word -> GLMModel's family.
FAMILIES = {"logistic": "bernoulli", "poisson": "poisson"}

_DELIMITERS = {",": "commas", ";": "semicolons", "\t": "tabs"}


def limits_text() -> str:
    """The limits of :data:`LIMITS` in a sentence, for the page."""
    L = LIMITS
    return (f"a comma-separated text file (UTF-8) with a header row naming the columns, at most {L['file_mb']} MB, "
            f"{L['min_rows']} to {L['rows']:,} rows and at most {L['predictors']} predictors")


def _q(name) -> str:
    return f"'{name}'"


def _names(names, limit: int = 6) -> str:
    names = [_q(n) for n in names]
    if len(names) > limit:
        return ", ".join(names[:limit]) + f" and {len(names) - limit} more"
    return ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1]


def _rows_text(idx, limit: int = 5) -> str:
    """Data rows as the file's line numbers (the header is line 1)."""
    lines = [str(int(i) + 2) for i in idx]
    more = f" and {len(lines) - limit} more" if len(lines) > limit else ""
    return ", ".join(lines[:limit]) + more


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------------------------------- reading
def read_csv(raw, name: str = "The file") -> pd.DataFrame:
    """Read a CSV file's bytes into a DataFrame, checking it against :data:`LIMITS`.

    Only text is read: the bytes must decode as UTF-8 (a byte-order mark is allowed); the first line
    must name the columns (not all numbers, none empty, no name twice); values are separated by
    commas (semicolons or tabs are recognised too, from the header line). pandas' C parser reads at
    most ``LIMITS["rows"] + 1`` rows, so an oversized file is refused without being read to its end.
    Cells such as "", "NA" or "nan" become missing values (checked later, by :func:`design_matrix`).
    """
    if isinstance(raw, str):
        raw = raw.encode("utf-8")
    if not isinstance(raw, (bytes, bytearray, memoryview)):
        raise ValueError(f"{name} must be given as the bytes of a file.")
    raw = bytes(raw)
    L = LIMITS
    if len(raw) > L["file_mb"] * 2**20:
        raise ValueError(f"{name} is {len(raw) / 2**20:.1f} MB; the lab takes CSV files of at most {L['file_mb']} MB.")
    if not raw.strip():
        raise ValueError(f"{name} is empty: a CSV file needs a header row and rows of values.")
    if b"\x00" in raw:
        raise ValueError(f"{name} is not a CSV file: it holds binary data, not text. Save your table as CSV "
                         "(comma-separated values) and upload that.")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{name} is not UTF-8 text (byte {exc.start + 1} cannot be read): is it a CSV file? "
                         "Save your table as 'CSV UTF-8' and upload that.") from None
    header_line = next((ln for ln in text.splitlines() if ln.strip()), "")
    counts = {d: header_line.count(d) for d in _DELIMITERS}
    sep = max(counts, key=counts.get)
    if counts[sep] == 0:
        raise ValueError(f"{name} is not a CSV file with at least two columns: its first line has no commas. "
                         "A CSV file starts with a header row such as 'y,x1,x2', then one row of values per line.")
    try:
        header = next(csv.reader([header_line], delimiter=sep))
    except csv.Error as exc:
        raise ValueError(f"{name}: its header row cannot be read as CSV ({exc}).") from None
    header = [h.strip() for h in header]
    if any(h == "" for h in header):
        where = [str(i + 1) for i, h in enumerate(header) if h == ""]
        raise ValueError(f"{name}: the header row has no name for column {', '.join(where)}; the first row must "
                         "name every column.")
    if all(_is_number(h) for h in header):
        raise ValueError(f"{name} has no header row: its first line holds numbers ({header_line.strip()[:60]}). "
                         "Add a first line naming the columns, e.g. 'y,x1,x2'.")
    seen, dup = set(), []
    for h in header:
        if h in seen and h not in dup:
            dup.append(h)
        seen.add(h)
    if dup:
        raise ValueError(f"{name} names the column{'s' if len(dup) > 1 else ''} {_names(dup)} more than once; "
                         "give every column its own name.")
    if len(header) > L["predictors"] + 1 + 200:  # far beyond any use: do not parse it at all
        raise ValueError(f"{name} has {len(header)} columns; the lab takes at most {L['predictors']} predictors.")
    try:
        df = pd.read_csv(io.StringIO(text), sep=sep, engine="c", nrows=L["rows"] + 1, skipinitialspace=True,
                         skip_blank_lines=True, dtype=None, low_memory=False)
    except pd.errors.ParserError as exc:
        msg = str(exc)
        hint = msg.split("Error tokenizing data. C error: ")[-1].strip().rstrip(".")
        raise ValueError(f"{name} is not a well-formed CSV file: {hint}. Every row must have as many values as "
                         "the header has columns.") from None
    except (pd.errors.EmptyDataError, UnicodeError, csv.Error) as exc:
        raise ValueError(f"{name} cannot be read as a CSV file ({exc}).") from None
    df.columns = header
    if len(df) > L["rows"]:
        raise ValueError(f"{name} has more than {L['rows']:,} rows; the lab takes at most {L['rows']:,}. Use a "
                         "sample of your data.")
    if len(df) < L["min_rows"]:
        raise ValueError(f"{name} has {len(df)} row{'s' if len(df) != 1 else ''} of data; the lab needs at least "
                         f"{L['min_rows']}.")
    return df


def numeric_columns(df: pd.DataFrame) -> list[str]:
    """The columns whose values are all numbers (missing values allowed), in the file's order."""
    return [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) or pd.api.types.is_bool_dtype(df[c])]


def response_columns(df: pd.DataFrame, family: str) -> list[str]:
    """The columns that can be the response of ``family``: numbers that are all 0 or 1 ("logistic", both
    present) or all counts 0, 1, 2, ... ("poisson"), missing values allowed."""
    _check_family(family)
    out = []
    for c in numeric_columns(df):
        v = df[c].dropna().to_numpy(dtype=float)
        if not (v.size and np.isfinite(v).all()):
            continue
        if (family == "logistic" and np.isin(v, (0.0, 1.0)).all() and np.unique(v).size == 2) or (
                family == "poisson" and ((v >= 0) & (v == np.round(v))).all()):
            out.append(c)
    return out


def default_response(df: pd.DataFrame, family: str | None = None) -> str:
    """A guess at the response column: one named y, response, outcome, target, label, class or count;
    else the first of :func:`response_columns` for ``family``; else the last numeric column (else the
    last column)."""
    for c in df.columns:
        if str(c).strip().lower() in ("y", "response", "outcome", "target", "label", "class", "count", "counts"):
            return c
    fits = response_columns(df, family) if family in FAMILIES else []
    if fits:
        return fits[0]
    num = numeric_columns(df)
    return num[-1] if num else df.columns[-1]


# ------------------------------------------------------------------------------------ design matrix
@dataclass(frozen=True, eq=False)
class Design:
    """X, y and how they were made from the file.

    X : (n, d) float64, the intercept first where there is one, then the predictors (standardised:
        each minus its mean, divided by its standard deviation, when ``standardised``).
    y : (n,) float64 responses. names : the columns of X ("intercept" first).
    n_dropped : rows left out for missing values. center, scale : what standardising subtracted and
    divided by, per predictor (0 and 1 without standardising).
    """

    X: np.ndarray
    y: np.ndarray
    names: tuple
    family: str
    response: str
    n_dropped: int
    center: np.ndarray
    scale: np.ndarray
    standardised: bool
    intercept: bool

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])


def _check_family(family: str) -> str:
    if family not in FAMILIES:
        raise ValueError(f"The model must be one of {', '.join(FAMILIES)}; got {family!r}.")
    return family


def design_matrix(df: pd.DataFrame, response: str, predictors=None, family: str = "logistic",
                  standardise: bool = True, intercept: bool = True, drop_missing: bool = False) -> Design:
    """X and y for a logistic (Bernoulli, logit link) or Poisson (log link) regression of ``response``
    on ``predictors`` (default: every other numeric column), as in Tan (2025) Sec. 8: continuous
    predictors standardised to mean 0 and sd 1, an intercept column of ones first.

    ValueError, naming the columns and rows concerned, for: an unknown column, a predictor that is not
    numbers, missing values (unless ``drop_missing``: then the rows with a missing value in the
    response or a chosen predictor are left out), values that are not finite, a response that is not
    0/1 (logistic) or a count 0, 1, 2, ... (Poisson), a constant predictor (it cannot be standardised,
    or it repeats the intercept), too many predictors or too few rows.
    """
    _check_family(family)
    if not isinstance(df, pd.DataFrame) or df.shape[1] < 2:
        raise ValueError("The data need at least two columns: a response and a predictor.")
    cols = list(df.columns)
    if response not in cols:
        raise ValueError(f"There is no column {_q(response)} in the file; choose the response among its columns.")
    if predictors is None:
        predictors = [c for c in numeric_columns(df) if c != response]
    predictors = list(predictors)
    unknown = [p for p in predictors if p not in cols]
    if unknown:
        raise ValueError(f"The file has no column {_names(unknown)}; choose the predictors among its columns.")
    if response in predictors:
        raise ValueError(f"The response {_q(response)} cannot also be a predictor.")
    if len(set(predictors)) != len(predictors):
        raise ValueError("A predictor is chosen twice; choose each column once.")
    if not predictors and not intercept:
        raise ValueError("Choose at least one predictor, or keep the intercept.")
    if len(predictors) > LIMITS["predictors"]:
        raise ValueError(f"{len(predictors)} predictors are chosen; the lab takes at most {LIMITS['predictors']}.")
    used = [response] + predictors
    # types first: a text column's missing values are beside the point
    text = [c for c in used if c not in numeric_columns(df)]
    if text:
        examples = []
        for c in text:
            bad = df[c][pd.to_numeric(df[c], errors="coerce").isna() & df[c].notna()]
            if len(bad):
                examples.append(f"{_q(bad.iloc[0])} in row {_rows_text([bad.index[0]])}")
        eg = f" (e.g. {'; '.join(examples[:3])})" if examples else ""
        if response in text:
            raise ValueError(f"The response {_q(response)} is not numbers{eg}: code it as numbers "
                             + ("0 and 1." if family == "logistic" else "0, 1, 2, ... (counts)."))
        raise ValueError(f"The predictor column{'s' if len(text) > 1 else ''} {_names(text)} "
                         f"{'are' if len(text) > 1 else 'is'} not numbers{eg}: leave "
                         f"{'them' if len(text) > 1 else 'it'} out, or code categories as 0/1 columns.")
    sub = df[used].astype(float)
    missing = sub.isna()
    n_dropped = 0
    if missing.any().any():
        rows = np.flatnonzero(missing.any(axis=1).to_numpy())
        if not drop_missing:
            per_col = [f"{_q(c)} ({int(missing[c].sum())})" for c in used if missing[c].any()]
            total = int(missing.to_numpy().sum())
            raise ValueError(f"The data have {total} missing value{'s' if total > 1 else ''} in {len(rows)} "
                             f"row{'s' if len(rows) > 1 else ''} (rows {_rows_text(sub.index[rows])} of the file), "
                             f"in the column{'s' if len(per_col) > 1 else ''} {', '.join(per_col)}. Fill them in, or "
                             "choose to drop the rows with missing values.")
        n_dropped = len(rows)
        sub = sub[~missing.any(axis=1)]
    if len(sub) < LIMITS["min_rows"]:
        raise ValueError(f"Only {len(sub)} rows are complete; the lab needs at least {LIMITS['min_rows']}.")
    vals = sub.to_numpy(dtype=np.float64)
    if not np.isfinite(vals).all():
        r, c = np.argwhere(~np.isfinite(vals))[0]
        raise ValueError(f"The column {_q(used[c])} holds an infinite value (row {_rows_text([sub.index[r]])}); "
                         "every value must be a finite number.")
    y, A = vals[:, 0], vals[:, 1:]
    idx = sub.index
    if family == "logistic":
        bad = np.flatnonzero((y != 0) & (y != 1))
        if bad.size:
            levels = np.unique(y)
            shown = ", ".join(f"{v:g}" for v in levels[:6]) + (", ..." if levels.size > 6 else "")
            raise ValueError(f"For logistic regression the response {_q(response)} must be 0 or 1; it takes "
                             f"{levels.size} different values ({shown}), e.g. {y[bad[0]]:g} in row "
                             f"{_rows_text([idx[bad[0]]])}. Choose another response, or Poisson regression for "
                             "counts.")
        if np.all(y == y[0]):
            raise ValueError(f"The response {_q(response)} is {y[0]:g} in every row: logistic regression needs both "
                             "0s and 1s.")
    else:
        bad = np.flatnonzero((y < 0) | (y != np.round(y)))
        if bad.size:
            raise ValueError(f"For Poisson regression the response {_q(response)} must be a count 0, 1, 2, ...; "
                             f"row {_rows_text([idx[bad[0]]])} has {y[bad[0]]:g}"
                             + (f" ({bad.size} such rows)" if bad.size > 1 else "") + ".")
        if y.max() > 1e6:
            raise ValueError(f"The response {_q(response)} has counts up to {y.max():.3g}; the lab takes counts "
                             "up to a million.")
    center, scale = np.zeros(A.shape[1]), np.ones(A.shape[1])
    if A.shape[1]:
        sd = A.std(0)
        mean = A.mean(0)
        const = [p for p, s, m in zip(predictors, sd, mean) if not s > 1e-12 * max(1.0, abs(m))]
        if const and (standardise or intercept):
            why = "it cannot be standardised" if standardise else "it repeats the intercept"
            raise ValueError(f"The predictor{'s' if len(const) > 1 else ''} {_names(const)} "
                             f"{'have' if len(const) > 1 else 'has'} the same value in every "
                             f"{'used ' if n_dropped else ''}row, so {why}: leave "
                             f"{'them' if len(const) > 1 else 'it'} out.")
        if standardise:
            center, scale = mean, sd
            A = (A - center) / scale
    X = np.column_stack([np.ones(len(y)), A]) if intercept else A
    names = (("intercept",) if intercept else ()) + tuple(str(p) for p in predictors)
    return Design(np.ascontiguousarray(X), y, names, family, str(response), n_dropped, center, scale,
                  bool(standardise), bool(intercept))


def glm_model(df: pd.DataFrame, response: str, predictors=None, family: str = "logistic",
              standardise: bool = True, intercept: bool = True, drop_missing: bool = False,
              prior_var: float = 100.0, name: str = "your data"):
    """The Bayesian GLM of Tan (2025) Sec. 8 (prior N(0, sigma0^2 I)) on a CSV file's columns: a
    :class:`vilab.targets.regression.GLMModel` built from :func:`design_matrix` (same arguments).
    Its ``info["design"]`` is the :class:`Design`."""
    from vilab.targets.regression import GLMModel

    des = design_matrix(df, response, predictors, family, standardise, intercept, drop_missing)
    label = "logistic" if family == "logistic" else "Poisson"
    lyf = float(gammaln(des.y + 1.0).sum()) if family == "poisson" else 0.0
    return GLMModel(f"{name} ({label}, n = {des.n}, d = {des.d})", des.X, des.y, FAMILIES[family], prior_var,
                    log_y_factorial_sum=lyf, feature_names=des.names,
                    source=f"{name}: response {des.response}, {des.n} rows", info={"design": des})


# ---------------------------------------------------------------------------- two of d coefficients
def _coords(coords, d: int) -> tuple[int, int]:
    try:
        i, j = (int(c) for c in coords)
    except (TypeError, ValueError):
        raise ValueError("Choose two coefficients to show.") from None
    if not (0 <= i < d and 0 <= j < d) or i == j:
        raise ValueError(f"Choose two different coefficients among the {d}.")
    return i, j


def project_trace(trace, coords):
    """A run's coordinates ``coords = (i, j)`` only: the mean's path (R, 2) and the marginal covariances
    (R, 2, 2) of those two coefficients (the marginals of q = N(m, V) are N(m_ij, V_ij)); a copy of the
    :class:`vilab.core.Trace`, everything else unchanged."""
    mean = np.asarray(trace.mean)
    i, j = _coords(coords, mean.shape[1])
    ix = np.array([i, j])
    cov = None if trace.cov is None else np.asarray(trace.cov)[:, ix][:, :, ix]
    var = None if getattr(trace, "var", None) is None else np.asarray(trace.var)[:, ix]
    return replace(trace, mean=mean[:, ix], cov=cov, var=var)


def slice_log_joint(model, coords, at, t1, t2) -> np.ndarray:
    """log p(y, theta) of a GLM on the 2-D slice theta_i = t1, theta_j = t2 through the point ``at``
    (the other coefficients held at their values in ``at``): array (len(t2), len(t1)), rows = t2.
    For a 2-D model the slice is the whole posterior (``at`` is then ignored)."""
    X, y = np.asarray(model.X, float), np.asarray(model.y, float)
    d = X.shape[1]
    i, j = _coords(coords, d)
    at = np.zeros(d) if at is None else np.asarray(at, float).reshape(-1)
    if at.shape != (d,) or not np.isfinite(at).all():
        raise ValueError(f"The slice needs a finite point with {d} coefficients.")
    T1, T2 = np.meshgrid(np.asarray(t1, float), np.asarray(t2, float))
    rest = [k for k in range(d) if k not in (i, j)]
    base = X[:, rest] @ at[rest] if rest else np.zeros(len(y))
    g1, g2 = T1.ravel(), T2.ravel()
    # the linear part y . eta from sufficient statistics, once: y.base + t1 y.x_i + t2 y.x_j
    ll = float(y @ base) + g1 * float(y @ X[:, i]) + g2 * float(y @ X[:, j])
    step = max(1, int(4_000_000 // max(1, len(y))))  # at most ~4 million terms (32 MB) at a time
    for a in range(0, g1.size, step):
        eta = base[:, None] + np.outer(X[:, i], g1[a:a + step]) + np.outer(X[:, j], g2[a:a + step])  # (n, G)
        if model.family == "bernoulli":
            ll[a:a + step] -= np.logaddexp(0.0, eta).sum(0)
        else:
            ll[a:a + step] -= np.exp(np.minimum(eta, 700.0)).sum(0)
    sq = T1.ravel() ** 2 + T2.ravel() ** 2 + float(at[rest] @ at[rest])
    lp = -0.5 * sq / model.prior_var - 0.5 * d * (math.log(2 * math.pi) + math.log(model.prior_var))
    return (ll - model.log_y_factorial_sum + lp).reshape(T1.shape)


def slice_target(model, coords, at, bounds=None):
    """The slice of :func:`slice_log_joint` as a 2-D :class:`vilab.targets.Target` (for contour plots
    of a d-dimensional posterior); for a 2-D model with ``coords = (0, 1)``, ``model.target()`` itself."""
    import jax.numpy as jnp

    from vilab.targets import Target

    d = model.d
    i, j = _coords(coords, d)
    if d == 2 and (i, j) == (0, 1):
        return model.target()
    at = jnp.asarray(np.zeros(d) if at is None else np.asarray(at, float).reshape(-1))
    full = model.log_joint

    def log_density(th):
        return full(at.at[i].set(th[0]).at[j].set(th[1]))

    names = model.feature_names or tuple(f"θ{k}" for k in range(d))
    return Target(name=f"{model.name}: slice in {names[i]}, {names[j]}", dim=2, log_density=log_density,
                  bounds=bounds)
