"""vilab.targets.tabular: a user's CSV file read, checked and turned into a logistic or Poisson regression."""

import numpy as np
import pandas as pd
import pytest

from vilab.targets import tabular as T
from vilab.core import Trace


def _csv(rows, header="y,a,b"):
    return (header + "\n" + "\n".join(",".join(str(v) for v in r) for r in rows) + "\n").encode()


def _data(n=30, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(2.0, 3.0, n)
    b = rng.integers(0, 5, n)
    y = (rng.uniform(size=n) < 0.5).astype(int)
    y[:2] = [0, 1]
    return y, a, b


def _df(n=30, seed=0):
    y, a, b = _data(n, seed)
    return T.read_csv(_csv(zip(y, np.round(a, 6), b)))


def test_a_valid_file_gives_standardised_X_with_intercept_and_y():
    y, a, b = _data()
    a = np.round(a, 6)
    df = T.read_csv(_csv(zip(y, a, b)))
    assert list(df.columns) == ["y", "a", "b"] and len(df) == 30
    d = T.design_matrix(df, "y", family="logistic")
    assert d.names == ("intercept", "a", "b") and d.X.shape == (30, 3) and d.n_dropped == 0
    np.testing.assert_array_equal(d.X[:, 0], 1.0)
    A = np.column_stack([a, b]).astype(float)
    np.testing.assert_allclose(d.X[:, 1:], (A - A.mean(0)) / A.std(0), rtol=1e-12)
    np.testing.assert_allclose(d.X[:, 1:].mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(d.X[:, 1:].std(0), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(d.y, y)
    # no standardising, no intercept, predictors chosen: the raw columns in the chosen order
    d = T.design_matrix(df, "y", ["b", "a"], standardise=False, intercept=False)
    assert d.names == ("b", "a")
    np.testing.assert_allclose(d.X, np.column_stack([b, a]))


def test_poisson_model_and_logistic_model_are_the_regression_glms():
    y, a, b = _data()
    counts = (np.arange(30) % 7)
    df = T.read_csv(_csv(zip(counts, np.round(a, 6), b), header="n,a,b"))
    assert T.default_response(df, "poisson") == "n" and T.default_response(df) == "b"  # last numeric column
    assert T.response_columns(df, "poisson") == ["n", "b"] and T.response_columns(df, "logistic") == []
    m = T.glm_model(df, "n", family="poisson")
    assert m.family == "poisson" and m.d == 3 and m.n == 30
    from scipy.special import gammaln

    assert m.log_y_factorial_sum == pytest.approx(gammaln(counts + 1.0).sum())
    th = np.array([0.1, -0.2, 0.3])
    eta = m.X @ th
    want = counts @ eta - np.exp(eta).sum() - gammaln(counts + 1.0).sum() - th @ th / 200 - 1.5 * np.log(2 * np.pi * 100)
    assert float(m.log_joint(th)) == pytest.approx(want, rel=1e-12)
    tgt = m.target()
    assert tgt.dim == 3 and tgt.glm is not None
    lg = T.glm_model(_df(), "y", family="logistic")
    assert lg.family == "bernoulli" and lg.feature_names == ("intercept", "a", "b")


def test_missing_values_are_located_or_dropped_on_request():
    y, a, b = _data()
    rows = [list(r) for r in zip(y, np.round(a, 4), b)]
    rows[3][1] = ""
    rows[7][2] = "NA"
    df = T.read_csv(_csv(rows))
    with pytest.raises(ValueError, match=r"2 missing values in 2 rows \(rows 5, 9 of the file\).*'a' \(1\), 'b' \(1\)"
                                         r".*drop the rows"):
        T.design_matrix(df, "y")
    d = T.design_matrix(df, "y", drop_missing=True)
    assert d.n == 28 and d.n_dropped == 2
    # only the columns used count: without 'b', one row goes
    assert T.design_matrix(df, "y", ["a"], drop_missing=True).n == 29
    with pytest.raises(ValueError, match=r"1 missing value in 1 row \(rows 5 of the file\), in the column 'a' \(1\)"):
        T.design_matrix(df, "y", ["a"])


@pytest.mark.parametrize("raw, says", [
    (b"\x89PNG\r\n\x1a\n\x00\x00binary", "not a CSV file: it holds binary data"),
    ("y,x\n1,caf\xe9\n".encode("latin-1") + b"0,1\n" * 12, "not UTF-8"),
    (b"1,2,3\n" * 20, "no header row"),
    (b"just some words\nwithout separators\n", "its first line has no commas"),
    (b"y,x,x\n" + b"1,2,3\n" * 12, "names the column 'x' more than once"),
    (b"y,,x\n" + b"1,2,3\n" * 12, "no name for column 2"),
    (b"y,x\n" + b"1,2\n" * 5 + b"1,2,3\n" + b"1,2\n" * 6, "Expected 2 fields in line 7, saw 3"),
    (b"y,x\n" + b"1,2\n" * 4, "4 rows of data; the lab needs at least 10"),
    (b"", "is empty"),
])
def test_files_that_are_not_usable_csv_say_why(raw, says):
    with pytest.raises(ValueError, match=says.replace("(", r"\(")):
        T.read_csv(raw)


def test_size_and_row_limits(monkeypatch):
    big = b"y,x\n" + b"1,2.0000000000\n" * (5 * 2**20 // 15 + 10)
    with pytest.raises(ValueError, match="at most 5 MB"):
        T.read_csv(big)
    monkeypatch.setitem(T.LIMITS, "rows", 50)
    with pytest.raises(ValueError, match="more than 50 rows"):
        T.read_csv(b"y,x\n" + b"1,2\n" * 51)
    assert len(T.read_csv(b"y,x\n" + b"1,2\n" * 50)) == 50
    monkeypatch.setitem(T.LIMITS, "predictors", 2)
    df = T.read_csv(b"y,a,b,c\n" + b"1,2,3,4\n0,1,1,5\n" * 6)
    with pytest.raises(ValueError, match="3 predictors are chosen; the lab takes at most 2"):
        T.design_matrix(df, "y")


def test_semicolons_and_a_byte_order_mark_are_read():
    df = T.read_csv("\ufeffy;x\n".encode() + b"1;2,5\n0;3\n" * 6)
    assert list(df.columns) == ["y", "x"] and len(df) == 12


def test_text_predictors_are_named():
    rows = [[i % 2, i * 0.5, "male" if i % 3 else "female", "a"] for i in range(12)]
    df = T.read_csv(_csv(rows, header="y,x,sex,grp"))
    assert T.numeric_columns(df) == ["y", "x"]
    assert T.design_matrix(df, "y").names == ("intercept", "x")  # default: the numeric columns only
    with pytest.raises(ValueError, match=r"columns 'sex' and 'grp' are not numbers \(e\.g\. 'female' in row 2"):
        T.design_matrix(df, "y", ["x", "sex", "grp"])
    with pytest.raises(ValueError, match="response 'sex' is not numbers"):
        T.design_matrix(df, "sex", ["x"])
    with pytest.raises(ValueError, match="no column 'z'"):
        T.design_matrix(df, "y", ["z"])


def test_responses_must_fit_the_model():
    df = _df()
    with pytest.raises(ValueError, match=r"logistic regression the response 'b' must be 0 or 1; it takes 5 different"):
        T.design_matrix(df, "b", ["a"], family="logistic")
    df2 = T.read_csv(_csv([[i % 4 - 1, i] for i in range(12)], header="n,x"))
    with pytest.raises(ValueError, match=r"Poisson regression the response 'n' must be a count 0, 1, 2, \.\.\.; row 2 "
                                         r"has -1"):
        T.design_matrix(df2, "n", family="poisson")
    df3 = T.read_csv(_csv([[0.5 * i, i] for i in range(12)], header="n,x"))
    with pytest.raises(ValueError, match="row 3 has 0.5"):
        T.design_matrix(df3, "n", family="poisson")
    df4 = T.read_csv(_csv([[1, i] for i in range(12)], header="y,x"))
    with pytest.raises(ValueError, match="is 1 in every row: logistic regression needs both 0s and 1s"):
        T.design_matrix(df4, "y")
    with pytest.raises(ValueError, match="one of logistic, poisson"):
        T.design_matrix(df4, "y", family="gaussian")


def test_constant_columns_are_refused_after_dropping_rows():
    rows = [[i % 2, i, 3.0] for i in range(12)]
    rows[0][2] = 4.0
    rows[0][1] = ""  # the one row where c differs goes
    df = T.read_csv(_csv(rows, header="y,x,c"))
    assert T.design_matrix(df, "y", ["c"], drop_missing=False).d == 2  # c varies over all rows
    with pytest.raises(ValueError, match="'c' has the same value in every used row, so it cannot be standardised"):
        T.design_matrix(df, "y", drop_missing=True)
    with pytest.raises(ValueError, match="it repeats the intercept"):
        T.design_matrix(df, "y", ["x", "c"], drop_missing=True, standardise=False)
    d = T.design_matrix(df, "y", ["x", "c"], drop_missing=True, standardise=False, intercept=False)
    assert d.n == 11
    np.testing.assert_array_equal(d.X[:, 1], 3.0)


def test_infinite_values_are_refused():
    df = T.read_csv(_csv([[i % 2, "inf" if i == 4 else i] for i in range(12)], header="y,x"))
    with pytest.raises(ValueError, match="'x' holds an infinite value \\(row 6\\)"):
        T.design_matrix(df, "y")


def test_projection_and_slices_of_a_3d_fit():
    m = T.glm_model(_df(), "y")
    R = 4
    rng = np.random.default_rng(1)
    mean = rng.normal(size=(R, 3))
    L = rng.normal(size=(R, 3, 3))
    cov = L @ np.swapaxes(L, 1, 2) + np.eye(3)
    tr = Trace(mean=mean, cov=cov, objective=np.zeros(R), step_sizes=np.ones(R - 1), status="max_steps")
    p = T.project_trace(tr, (2, 0))
    np.testing.assert_array_equal(p.mean, mean[:, [2, 0]])
    np.testing.assert_array_equal(p.cov[:, 0, 1], cov[:, 2, 0])
    np.testing.assert_array_equal(p.cov[:, 1, 1], cov[:, 0, 0])
    assert p.status == "max_steps" and tr.mean.shape == (R, 3)
    at = np.array([0.3, -0.4, 0.5])
    t1, t2 = np.linspace(-1, 1, 5), np.linspace(-2, 2, 4)
    grid = T.slice_log_joint(m, (0, 2), at, t1, t2)
    assert grid.shape == (4, 5)
    th = at.copy()
    th[0], th[2] = t1[1], t2[3]
    assert grid[3, 1] == pytest.approx(float(m.log_joint(th)), rel=1e-12)
    tgt = T.slice_target(m, (0, 2), at)
    assert tgt.dim == 2 and float(tgt.value(np.array([t1[1], t2[3]]))) == pytest.approx(grid[3, 1], rel=1e-12)
    for bad in [(0, 0), (0, 3), ("a", 1)]:
        with pytest.raises(ValueError, match="two"):
            T.project_trace(tr, bad)
