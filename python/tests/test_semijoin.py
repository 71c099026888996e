"""Semi, anti and mark joins against pandas: ``Series.isin`` with a lazy Series (and ``~``,
combined masks, ``assign``), ``merge(indicator=True)``, ``merge(how="leftsemi"|"leftanti")``,
and the shapes of TPC-H Q4, Q18 and Q22, over two chunkings, broadcast and shuffled."""

import numpy as np
import pandas as pd
import pytest

import tessera as ts
from tessera.errors import TesseraTypeError, TesseraValueError

ROWS_PER_CHUNK = [None, 7]


@pytest.fixture(scope="module")
def shuffle_session():
    """A session that never broadcasts a join's right side."""
    s = ts.Session(threads=2, chunk_bytes=1 << 16, broadcast_bytes=0)
    yield s
    s.close()


@pytest.fixture(params=["broadcast", "shuffle"])
def plan_session(request, session, shuffle_session):
    return session if request.param == "broadcast" else shuffle_session


def frames():
    """A left and a right frame with duplicate keys and missing keys on both sides."""
    rng = np.random.default_rng(51)
    n, m = 60, 25
    k = rng.integers(0, 20, n).astype(float)
    k[rng.random(n) < 0.1] = np.nan
    rk = rng.integers(5, 30, m).astype(float)
    rk[[3, 11]] = np.nan
    words = np.array(["a", "b", "c", "d", "e"], dtype=object)
    s = words[rng.integers(0, 5, n)]
    s[rng.random(n) < 0.1] = None
    rs = words[rng.integers(2, 5, m)]
    left = pd.DataFrame({"k": k, "s": s, "b": rng.integers(0, 8, n), "id": np.arange(n)})
    right = pd.DataFrame({"k": rk, "s": rs, "w": rng.integers(-3, 4, m)})
    return left, right


def check(got, want):
    """Equal frames, whatever the row order (missing values all None in object columns)."""
    by = list(want.columns)
    got, want = [
        f.sort_values(by).reset_index(drop=True).pipe(lambda f: f.where(f.notna(), None))
        for f in (got, want)
    ]
    pd.testing.assert_frame_equal(got, want, check_dtype=False)


@pytest.mark.parametrize("rows", ROWS_PER_CHUNK)
def test_isin_with_a_lazy_series_filters_like_pandas(plan_session, rows):
    left, right = frames()
    df, other = ts.from_pandas(left, rows), ts.from_pandas(right, rows)
    s = plan_session
    for key in ["k", "s"]:
        check(df[df[key].isin(other[key])].compute(s), left[left[key].isin(right[key])])
        check(df[~df[key].isin(other[key])].compute(s), left[~left[key].isin(right[key])])
    # Values of a filtered lazy frame, combined with a plain mask and with another mark.
    lazy = other[other.w > 0]
    want = right[right.w > 0]
    check(df[df.k.isin(lazy.k) | (df.b > 5)].compute(s), left[left.k.isin(want.k) | (left.b > 5)])
    check(df[df.k.isin(lazy.k) & ~df.s.isin(other.s)].compute(s),
          left[left.k.isin(want.k) & ~left.s.isin(right.s)])
    # Values of the same frame.
    check(df[df.b.isin(df.id)].compute(s), left[left.b.isin(left.id)])
    # Assigned as a column, and counted.
    check(df.assign(found=df.k.isin(other.k)).compute(s),
          left.assign(found=left.k.isin(right.k)))
    assert df.k.isin(other.k).sum().compute(s) == left.k.isin(right.k).sum()
    # The list form keeps working.
    check(df[df.s.isin(["a", "e"])].compute(s), left[left.s.isin(["a", "e"])])


@pytest.mark.parametrize("rows", ROWS_PER_CHUNK)
def test_missing_values_are_in_values_holding_one_as_in_pandas(plan_session, rows):
    left = pd.DataFrame({"k": [1.0, np.nan, 3.0, np.nan], "s": ["x", None, "y", "z"]})
    with_missing = pd.DataFrame({"k": [np.nan, 3.0, 3.0], "s": [None, "y", "q"]})
    without = pd.DataFrame({"k": [3.0, 7.0, 3.0], "s": ["y", "q", "q"]})
    df = ts.from_pandas(left, rows)
    for right, k_want, s_want in [
        (with_missing, [False, True, True, True], [False, True, True, False]),
        (without, [False, False, True, False], [False, False, True, False]),
    ]:
        other = ts.from_pandas(right, rows)
        for key, want in [("k", k_want), ("s", s_want)]:
            assert list(left[key].isin(right[key])) == want  # pandas, by hand
            got = df.assign(m=df[key].isin(other[key])).compute(plan_session)
            assert list(got.sort_values("s", na_position="first").m) == \
                list(left.assign(m=want).sort_values("s", na_position="first").m)


@pytest.mark.parametrize("rows", ROWS_PER_CHUNK)
def test_merge_indicator_like_pandas(plan_session, rows):
    left, right = frames()
    df, other = ts.from_pandas(left, rows), ts.from_pandas(right, rows)
    s = plan_session
    for how in ["inner", "left", "right", "outer"]:
        got = df.merge(other, on="k", how=how, indicator=True).compute(s)
        want = left.merge(right, on="k", how=how, indicator=True)
        assert isinstance(got["_merge"].dtype, pd.CategoricalDtype)
        assert list(got["_merge"].cat.categories) == list(want["_merge"].cat.categories)
        check(got.astype({"_merge": str}), want.astype({"_merge": str}))
    # The pandas spelling of an anti join.
    m = df.merge(other[["k"]], on="k", how="left", indicator="src")
    got = m[m.src == "left_only"].compute(s)
    pm = left.merge(right[["k"]], on="k", how="left", indicator="src")
    check(got.drop(columns="src"), pm[pm.src == "left_only"].drop(columns="src"))


@pytest.mark.parametrize("rows", ROWS_PER_CHUNK)
def test_merge_leftsemi_and_leftanti(plan_session, rows):
    left, right = frames()
    df, other = ts.from_pandas(left, rows), ts.from_pandas(right, rows)
    s = plan_session
    semi = df.merge(other, on=["k", "s"], how="leftsemi")
    assert semi.columns == ["k", "s", "b", "id"]
    both = left.merge(right[["k", "s"]].drop_duplicates(), on=["k", "s"])
    check(semi.compute(s), both)
    anti = df.merge(other, left_on="k", right_on="k", how="leftanti").compute(s)
    check(anti, left[~left.k.isin(right.k)])


def tpch():
    """Small orders, lineitem and customer tables (dates as yyyymmdd integers)."""
    rng = np.random.default_rng(4)
    n_cust, n_ord, n_li = 40, 120, 500
    customer = pd.DataFrame({
        "c_custkey": np.arange(n_cust),
        "c_phone": [f"{rng.choice([13, 17, 18, 23, 29, 30])}-{i:03d}" for i in range(n_cust)],
        "c_acctbal": np.round(rng.normal(3000, 4000, n_cust), 2),
    })
    # Customers 0..9 place no orders.
    orders = pd.DataFrame({
        "o_orderkey": np.arange(n_ord) * 4,
        "o_custkey": rng.integers(10, n_cust, n_ord),
        "o_orderdate": rng.choice([19930601, 19930715, 19930820, 19931002, 19931101], n_ord),
        "o_orderpriority": rng.choice(["1-URGENT", "2-HIGH", "3-MEDIUM", "5-LOW"], n_ord),
    })
    lineitem = pd.DataFrame({
        "l_orderkey": rng.choice(orders.o_orderkey, n_li),
        "l_commitdate": rng.integers(19930601, 19930630, n_li),
        "l_receiptdate": rng.integers(19930601, 19930630, n_li),
        "l_quantity": rng.integers(1, 50, n_li),
    })
    return customer, orders, lineitem


@pytest.mark.parametrize("rows", ROWS_PER_CHUNK)
def test_tpch_q4_shape(plan_session, rows):
    _, orders, lineitem = tpch()
    o, li = ts.from_pandas(orders, rows), ts.from_pandas(lineitem, rows)
    s = plan_session

    def q4(o, li):
        late = li[li.l_commitdate < li.l_receiptdate]
        o = o[(o.o_orderdate >= 19930701) & (o.o_orderdate < 19931001)]
        o = o[o.o_orderkey.isin(late.l_orderkey)]
        return o.groupby("o_orderpriority").agg(order_count=("o_orderkey", "count"))

    # Both hold the keys as the index (pandas' as_index=True).
    want = q4(orders, lineitem)
    got = q4(o, li).compute(s)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)


@pytest.mark.parametrize("rows", ROWS_PER_CHUNK)
def test_tpch_q18_shape(plan_session, rows):
    _, orders, lineitem = tpch()
    o, li = ts.from_pandas(orders, rows), ts.from_pandas(lineitem, rows)
    totals = li.groupby("l_orderkey").agg(total=("l_quantity", "sum"))
    big = totals[totals.total > 120]
    got = o[o.o_orderkey.isin(big.l_orderkey)].compute(plan_session)
    want_totals = lineitem.groupby("l_orderkey").agg(total=("l_quantity", "sum")).reset_index()
    want = orders[orders.o_orderkey.isin(want_totals[want_totals.total > 120].l_orderkey)]
    assert 0 < len(want) < len(orders)
    check(got, want)


@pytest.mark.parametrize("rows", ROWS_PER_CHUNK)
def test_tpch_q22_shape(plan_session, rows):
    customer, orders, _ = tpch()
    c, o = ts.from_pandas(customer, rows), ts.from_pandas(orders, rows)
    s = plan_session
    codes = ["13", "17", "18", "23", "29"]

    def q22(c, o, avg):
        c = c.assign(cntrycode=c.c_phone.str.slice(0, 2))
        c = c[c.cntrycode.isin(codes) & (c.c_acctbal > avg) & ~c.c_custkey.isin(o.o_custkey)]
        return c.groupby("cntrycode").agg(numcust=("c_acctbal", "count"),
                                          totacctbal=("c_acctbal", "sum"))

    positive = customer[(customer.c_acctbal > 0)
                        & customer.c_phone.str.slice(0, 2).isin(codes)].c_acctbal.mean()
    pc = c.assign(cntrycode=c.c_phone.str.slice(0, 2))
    avg = pc[(pc.c_acctbal > 0) & pc.cntrycode.isin(codes)].c_acctbal.mean().compute(s)
    assert avg == pytest.approx(positive)
    want = q22(customer, orders, positive)
    got = q22(c, o, avg).compute(s)
    assert len(want) > 0
    pd.testing.assert_frame_equal(got, want, check_dtype=False)


def test_bad_input_gives_typed_errors(session):
    left, right = frames()
    df, other = ts.from_pandas(left), ts.from_pandas(right)
    foreign = other.k.isin(df.k)
    with pytest.raises(TesseraValueError):
        df[foreign]
    with pytest.raises(TesseraValueError):
        df.assign(x=foreign)
    with pytest.raises(TesseraValueError):
        df.k.isin(other.k) | foreign
    with pytest.raises(TesseraTypeError):
        df.k.isin(other)
    with pytest.raises(TesseraTypeError):
        df.k.isin(other.s)
    with pytest.raises(TesseraValueError):
        df.merge(other, on="k", how="leftsemi", indicator=True)
    with pytest.raises(TesseraValueError):
        df.merge(other, on="k", how="sideways")
    with pytest.raises(TesseraValueError):
        df.merge(other.assign(_merge=1), on="k", indicator=True)
    # The session still works.
    assert len(df[df.k.isin(other.k)]) > 0
