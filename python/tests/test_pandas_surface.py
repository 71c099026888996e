"""The pandas methods analytic queries reach for, against pandas on the same data under
several chunkings: rename, concat, isna/notna, case_when and where on columns, round, abs,
reflected arithmetic, callable assign, GroupBy["col"], as_index and reset_index,
nlargest/nsmallest, count against size."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tessera as ts

CHUNKS = [None, 3, 16]


@pytest.fixture(scope="module")
def pdf():
    rng = np.random.default_rng(9)
    n = 60
    x = rng.normal(scale=10, size=n).round(3)
    x[rng.integers(0, n, 6)] = np.nan
    return pd.DataFrame({
        "k": rng.choice(["a", "b", "c"], n),
        "g": rng.integers(0, 4, n).astype(np.int64),
        "x": x,
        "y": rng.integers(-50, 50, n).astype(np.int64),
    })


def frame(pdf, rows):
    return ts.from_pandas(pdf, rows_per_chunk=rows)


def same(got, want, **kw):
    pd.testing.assert_frame_equal(got, want, check_dtype=False, **kw)


def same_series(got, want):
    pd.testing.assert_series_equal(got, want, check_dtype=False, check_names=False)


@pytest.mark.parametrize("rows", CHUNKS)
def test_rename_concat_and_callable_assign(session, pdf, rows):
    df = frame(pdf, rows)
    got = df.rename(columns={"x": "xx", "nope": "zz"}).compute(session)
    same(got, pdf.rename(columns={"x": "xx", "nope": "zz"}))
    same(df.rename(columns=str.upper).compute(session), pdf.rename(columns=str.upper))
    both = ts.concat([df, df[df.g == 1]]).compute(session)
    same(both, pd.concat([pdf, pdf[pdf.g == 1]], ignore_index=True))
    got = df.assign(z=lambda d: d.y * 2, w=lambda d: d.z + 1).compute(session)
    same(got, pdf.assign(z=lambda d: d.y * 2, w=lambda d: d.z + 1))


@pytest.mark.parametrize("rows", CHUNKS)
def test_missing_values_abs_round_and_reflected_operators(session, pdf, rows):
    df = frame(pdf, rows)
    got = df.assign(
        na=df.x.isna(), nn=df.x.notnull(), a=df.y.abs(), ax=abs(df.x), r=df.x.round(1),
        r0=round(df.x), ry=df.y.round(-1), inv=1 / df.y, rem=100 % df.g, back=7 - df.y,
    ).compute(session)
    want = pdf.assign(
        na=pdf.x.isna(), nn=pdf.x.notnull(), a=pdf.y.abs(), ax=abs(pdf.x), r=pdf.x.round(1),
        r0=round(pdf.x), ry=pdf.y.round(-1), inv=1 / pdf.y, rem=100 % pdf.g, back=7 - pdf.y,
    )
    # pandas gives 100 % 0 NaN (a float column); Tessera an integer null.
    want["rem"] = want["rem"].where(pdf.g != 0)
    same(got, want)


@pytest.mark.parametrize("rows", CHUNKS)
def test_case_when_and_where_on_columns(session, pdf, rows):
    df = frame(pdf, rows)
    got = df.assign(
        c=df.y.case_when([(df.y > 20, 1), (df.x < 0, df.g)]),
        w=ts.where(df.k == "a", df.y, -1),
        v=ts.where(df.x > 0, 1.5, df.x),
    ).compute(session)
    want = pdf.assign(
        c=pdf.y.case_when([(pdf.y > 20, 1), (pdf.x < 0, pdf.g)]),
        w=np.where(pdf.k == "a", pdf.y, -1),
        v=np.where(pdf.x > 0, 1.5, pdf.x),
    )
    same(got, want)


@pytest.mark.parametrize("rows", CHUNKS)
def test_groupby_as_index_selection_count_and_size(session, pdf, rows):
    df = frame(pdf, rows)
    # pandas' default: the keys are the index.
    same(df.groupby(["k", "g"]).agg(total=("y", "sum"), n=("x", "count")).compute(session),
         pdf.groupby(["k", "g"]).agg(total=("y", "sum"), n=("x", "count")))
    same(df.groupby("k").sum().compute(session), pdf.groupby("k")[["g", "x", "y"]].sum())
    same(df.groupby("k", as_index=False).mean().compute(session),
         pdf.groupby("k", as_index=False)[["g", "x", "y"]].mean())
    same_series(df.groupby("k")["y"].sum().compute(session), pdf.groupby("k")["y"].sum())
    same(df.groupby("k")[["x", "y"]].max().compute(session), pdf.groupby("k")[["x", "y"]].max())
    same(df.groupby("k", as_index=False)["y"].min().compute(session),
         pdf.groupby("k", as_index=False)["y"].min())
    # count skips missing values, size does not.
    same(df.groupby("g").count().compute(session), pdf.groupby("g").count())
    same_series(df.groupby("g").size().compute(session), pdf.groupby("g").size())
    same(df.groupby("g", as_index=False).size().compute(session),
         pdf.groupby("g", as_index=False).size())
    # reset_index and further work on an indexed result.
    top = df.groupby("k").agg(s=("y", "sum"))
    same(top.reset_index().compute(session), pdf.groupby("k").agg(s=("y", "sum")).reset_index())
    assert top.columns == ["s"] and top.index_names == ["k"]
    same(top[top.s > 0].compute(session), pdf.groupby("k").agg(s=("y", "sum")).query("s > 0"))


def same_extremes(got, want, by):
    """The same values of ``by`` in the same order, and the same rows (pandas orders tied
    rows by an unstable sort when n covers every row, so ties are compared as sets)."""
    want = want.reset_index(drop=True)
    same(got[by], want[by])
    same(got.sort_values(list(got.columns)).reset_index(drop=True),
         want.sort_values(list(want.columns)).reset_index(drop=True))


@pytest.mark.parametrize("rows", CHUNKS)
def test_nlargest_nsmallest_keep_first_and_skip_missing(session, pdf, rows):
    df = frame(pdf, rows)
    for n in (0, 5, 100):
        same_extremes(df.nlargest(n, "y").compute(session), pdf.nlargest(n, "y"), ["y"])
        same_extremes(df.nsmallest(n, ["g", "y"]).compute(session), pdf.nsmallest(n, ["g", "y"]),
                      ["g", "y"])
        same_series(df.x.nlargest(n).compute(session), pdf.x.nlargest(n).reset_index(drop=True))
        same_series(df.x.nsmallest(n).compute(session),
                    pdf.x.nsmallest(n).reset_index(drop=True))


def test_bad_arguments_raise_typed_errors(pdf):
    df = frame(pdf, None)
    with pytest.raises(ValueError):
        df.nlargest(3, "y", keep="all")
    with pytest.raises(ValueError):
        df.head(-1)
    with pytest.raises(TypeError):
        df.rename(columns=["x"])
    with pytest.raises(TypeError):
        ts.concat([])
    with pytest.raises(TypeError):
        df.y.case_when([(True, 1)])
    with pytest.raises(KeyError):
        df.groupby("k")["nope"]
    with pytest.raises(ts.TesseraTypeError):
        df.k.abs().compute()
