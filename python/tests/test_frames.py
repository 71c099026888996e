"""DataFrames against pandas: reading, selection, filters, assign, groupby, merge, sort,
with nulls and NaN, under several chunkings."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet
import pytest

import tessera as ts

ROWS_PER_CHUNK = [None, 1, 4, 13]


@pytest.fixture
def pdf():
    rng = np.random.default_rng(5)
    n = 40
    return pd.DataFrame(
        {
            "k": rng.choice(["a", "b", "c"], n),
            "g": rng.integers(0, 4, n),
            "x": rng.normal(size=n),
            "y": rng.integers(-5, 5, n).astype(np.int64),
        }
    )


def sort(df, by):
    return df.sort_values(by).reset_index(drop=True)


def assert_frame(got, want, by=None):
    if by is not None:
        got, want = sort(got, by), sort(want, by)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True),
                                  check_dtype=False, check_exact=False, rtol=1e-10)


@pytest.mark.parametrize("rows", ROWS_PER_CHUNK)
def test_round_trip_and_selection(session, pdf, rows):
    df = ts.from_pandas(pdf, rows_per_chunk=rows)
    assert df.columns == ["k", "g", "x", "y"]
    assert_frame(df.compute(session), pdf)
    assert_frame(df[["x", "k"]].compute(session), pdf[["x", "k"]])
    pd.testing.assert_series_equal(df["x"].compute(session), pdf["x"], check_names=True)
    assert len(df) == len(pdf)
    t = df.to_arrow(session)
    assert isinstance(t, pa.Table) and t.num_rows == len(pdf)


@pytest.mark.parametrize("rows", ROWS_PER_CHUNK)
def test_filter_and_assign(session, pdf, rows):
    df = ts.from_pandas(pdf, rows_per_chunk=rows)
    assert_frame(df[df.x > 0].compute(session), pdf[pdf.x > 0], by=["x"])
    assert_frame(df[(df.y >= 0) & (df.k != "b")].compute(session),
                 pdf[(pdf.y >= 0) & (pdf.k != "b")], by=["x"])
    assert_frame(df[~(df.g == 1)].compute(session), pdf[~(pdf.g == 1)], by=["x"])
    got = df.assign(z=df.x * 2 + df.y, w=1.5, v=10 - df.y).compute(session)
    want = pdf.assign(z=pdf.x * 2 + pdf.y, w=1.5, v=10 - pdf.y)
    assert_frame(got, want)
    assert_frame(df[df.k.isin(["a", "c"])].compute(session), pdf[pdf.k.isin(["a", "c"])], by=["x"])


@pytest.mark.parametrize("rows", ROWS_PER_CHUNK)
def test_groupby_spellings(session, pdf, rows):
    df = ts.from_pandas(pdf, rows_per_chunk=rows)
    g, pg = df.groupby("k"), pdf.groupby("k")
    # The keys come back as the index, as pandas' default as_index=True gives them.
    assert_frame(g.agg({"x": "sum"}).compute(session).reset_index(),
                 pg.agg({"x": "sum"}).reset_index())
    got = g.agg({"x": ["sum", "mean"], "y": "max"}).compute(session).reset_index()
    want = pg.agg({"x": ["sum", "mean"], "y": "max"})
    want.columns = ["x_sum", "x_mean", "y"]
    assert_frame(got, want.reset_index())
    got = df.groupby(["k", "g"]).agg(total=("x", "sum"), n=("y", "count"), hi=("y", "max"))
    want = pdf.groupby(["k", "g"]).agg(total=("x", "sum"), n=("y", "count"), hi=("y", "max"))
    assert_frame(got.compute(session).reset_index(), want.reset_index())
    assert_frame(df.groupby("g").sum().compute(session).reset_index()[["g", "x", "y"]],
                 pdf.groupby("g")[["x", "y"]].sum().reset_index())
    assert_frame(df.groupby("k").mean().compute(session).reset_index()[["k", "g", "x", "y"]],
                 pdf.groupby("k")[["g", "x", "y"]].mean().reset_index())
    size = df.groupby("k").size().compute(session)
    assert size.to_dict() == pdf.groupby("k").size().to_dict()
    assert_frame(df.groupby("k").agg("max").compute(session).reset_index(),
                 pg.max().reset_index())


@pytest.mark.parametrize("how", ["inner", "left", "right", "outer"])
@pytest.mark.parametrize("rows", [None, 3])
def test_merge_matches_pandas(session, how, rows):
    left = pd.DataFrame({"id": [1, 2, 3, 4, 5], "v": [10.0, 20.0, 30.0, 40.0, 50.0]})
    right = pd.DataFrame({"key": [2, 4, 4, 6], "v": [0.2, 0.4, 0.41, 0.6]})
    l, r = ts.from_pandas(left, rows), ts.from_pandas(right, rows)
    got = l.merge(r, how=how, left_on="id", right_on="key", suffixes=("_l", "_r")).compute(session)
    want = left.merge(right, how=how, left_on="id", right_on="key", suffixes=("_l", "_r"))
    assert_frame(got, want, by=["id", "key", "v_l", "v_r"])
    right2 = right.rename(columns={"key": "id", "v": "w"})
    got = l.merge(ts.from_pandas(right2, rows), on="id", how=how).compute(session)
    assert_frame(got, left.merge(right2, on="id", how=how), by=["id", "v", "w"])


def test_sort_head_drop_duplicates_value_counts(session, pdf):
    df = ts.from_pandas(pdf, rows_per_chunk=7)
    assert_frame(df.sort_values("x").compute(session), pdf.sort_values("x"))
    assert_frame(df.sort_values(["k", "x"], ascending=False).compute(session),
                 pdf.sort_values(["k", "x"], ascending=False))
    assert_frame(df.sort_values("x").head(5).compute(session), pdf.sort_values("x").head(5))
    assert len(df.head(3).compute(session)) == 3
    assert_frame(df.drop_duplicates(["k", "g"]).compute(session)[["k", "g"]],
                 pdf.drop_duplicates(["k", "g"])[["k", "g"]], by=["k", "g"])
    vc = df.k.value_counts().compute(session)
    assert dict(zip(vc["k"], vc["count"])) == pdf.k.value_counts().to_dict()


def test_nulls_and_nan(session):
    pdf = pd.DataFrame({"k": ["a", "b", None, "a"], "x": [1.0, np.nan, 3.0, None],
                        "i": pd.array([1, None, 3, 4], dtype="Int64")})
    df = ts.from_pandas(pdf, rows_per_chunk=2)
    got = df.compute(session)
    assert got["k"].isna().tolist() == [False, False, True, False]
    assert got["x"].isna().tolist() == [False, True, False, True]
    assert got["i"].isna().tolist() == [False, True, False, False]
    assert df.x.sum().compute(session) == pytest.approx(4.0)
    assert df.x.count().compute(session) == 2
    assert df.i.mean().compute(session) == pytest.approx(8 / 3)
    filled = df.assign(x=df.x.fillna(0.0)).compute(session)
    assert filled["x"].tolist() == [1.0, 0.0, 3.0, 0.0]
    assert df.to_arrow(session).schema.field("i").type == pa.int64()


def test_series_reductions(session, pdf):
    df = ts.from_pandas(pdf, rows_per_chunk=6)
    for name in ["sum", "mean", "min", "max", "count", "std", "var", "nunique"]:
        assert getattr(df.x, name)().compute(session) == pytest.approx(getattr(pdf.x, name)()), name
    assert df.y.sum().compute(session) == pdf.y.sum()


def test_csv_and_parquet_round_trip(session, pdf, tmp_path):
    p = tmp_path / "d.csv"
    pdf.to_csv(p, index=False)
    df = ts.read_csv(p)
    assert_frame(df.compute(session), pdf)
    q = tmp_path / "d.parquet"
    assert df.to_parquet(q, session) == len(pdf)
    assert_frame(ts.read_parquet(q).compute(session), pdf)
    assert_frame(ts.read_parquet(q, columns=["x"]).compute(session), pdf[["x"]])
    out = tmp_path / "o.csv"
    assert ts.from_pandas(pdf).to_csv(out, session) == len(pdf)
    assert_frame(pd.read_csv(out), pdf)


def test_from_arrow_shares_buffers_and_describe(session):
    t = pa.table({"a": np.arange(100.0), "b": np.arange(100)})
    df = ts.from_arrow(t, rows_per_chunk=30)
    assert df.a.sum().compute(session) == pytest.approx(4950.0)
    d = df.describe(session)
    assert d.shape[0] >= 5
    assert ts.from_arrow(t.to_batches()[0]).b.max().compute(session) == 99
    empty = ts.from_arrow(t.slice(0, 0))
    assert len(empty.compute(session)) == 0


def test_to_arrow_imports_no_pandas(tmp_path):
    """A frame job's result reaches pyarrow without pandas: ``pa.table(stream)`` would
    import it (a quarter of a second) on the first call of a process."""
    import subprocess
    import sys

    path = tmp_path / "t.parquet"
    pa.parquet.write_table(pa.table({"k": ["a", "b", "a"], "v": [1, 2, 3]}), path)
    code = (
        "import sys, tessera as ts\n"
        "with ts.Session(progress=False) as s:\n"
        f"    t = ts.read_parquet({str(path)!r}).groupby(['k']).agg({{'v': 'sum'}}).to_arrow(s)\n"
        "assert sorted(t.column('v').to_pylist()) == [2, 4], t\n"
        "assert 'pandas' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_persist_frame(session, pdf):
    df = ts.from_pandas(pdf, rows_per_chunk=10)
    p = df[df.x > 0].persist(session)
    assert_frame(p.compute(session), pdf[pdf.x > 0], by=["x"])
    assert "columns" in repr(p)


@pytest.mark.parametrize("how", ["inner", "left", "outer"])
def test_filters_over_a_merge_go_down_where_the_answer_allows(session, how):
    rng = np.random.default_rng(53)
    left = pd.DataFrame({"id": rng.integers(0, 30, 80), "a": rng.integers(0, 100, 80)})
    right = pd.DataFrame({"id": np.arange(0, 40, 2), "b": rng.integers(0, 100, 20)})
    l, r = ts.from_pandas(left, 9), ts.from_pandas(right, 4)
    j = l.merge(r, on="id", how=how)
    mask = (j.a > 30) & ((j.b < 50) | j.b.isna()) & ((j.a < 60) | (j.b > 80))
    got = j[mask].compute(session)
    pj = left.merge(right, on="id", how=how)
    want = pj[(pj.a > 30) & ((pj.b < 50) | pj.b.isna()) & ((pj.a < 60) | (pj.b > 80))]
    key = ["id", "a", "b"]
    pd.testing.assert_frame_equal(
        got.sort_values(key, na_position="first").reset_index(drop=True),
        want.sort_values(key, na_position="first").reset_index(drop=True),
        check_dtype=False)
    plan = j[mask].explain()
    above, below = plan[:plan.index("JOIN")], plan[plan.index("JOIN"):]
    # Each conjunct goes below the join where its side's rows are kept whole by it.
    a_down = how in ("inner", "left")
    b_down = how == "inner"
    assert ('col("a") > 30' in below, 'col("a") > 30' in above) == (a_down, not a_down), plan
    assert ('col("b") < 50' in below, 'col("b") < 50' in above) == (b_down, not b_down), plan
