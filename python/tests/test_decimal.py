"""Decimal columns (TPC-H's money columns, pyarrow's ``decimal128(15, 2)``) against pandas
computing on ``decimal.Decimal`` objects (an independent, exact implementation), under two
chunkings: arithmetic, comparisons with float and integer constants, reductions, groupby,
casts, ``decimal.Decimal`` constants and overflow."""

import decimal
from decimal import Decimal as D

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tessera as ts
from tessera.errors import TesseraTypeError, TesseraValueError

ROWS_PER_CHUNK = [None, 7]
MONEY = pa.decimal128(15, 2)


@pytest.fixture(autouse=True)
def exact_context():
    # The reference sums and products need more than the default 28 digits' headroom.
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        yield


def cents(values):
    """Decimals of two places from integers of cents (None stays None)."""
    return [None if v is None else D(int(v)).scaleb(-2) for v in values]


@pytest.fixture
def pdf():
    rng = np.random.default_rng(11)
    n = 61
    price = [None if i % 9 == 4 else v for i, v in enumerate(rng.integers(-10_000, 10_000_000, n))]
    return pd.DataFrame(
        {
            "flag": rng.choice(["A", "N", "R"], n),
            "price": cents(price),
            "disc": cents(rng.integers(0, 11, n)),
            "tax": cents(rng.integers(0, 9, n)),
            "qty": cents(rng.integers(1, 51, n) * 100),
            "n": rng.integers(-3, 4, n).astype(np.int64),
            "f": rng.integers(-400, 400, n) / 8.0,
        }
    )


def table(pdf):
    schema = pa.schema(
        [("flag", pa.string())]
        + [(c, MONEY) for c in ["price", "disc", "tax", "qty"]]
        + [("n", pa.int64()), ("f", pa.float64())]
    )
    return pa.Table.from_pandas(pdf, schema=schema, preserve_index=False)


def frames(pdf):
    for rows in ROWS_PER_CHUNK:
        yield ts.from_arrow(table(pdf), rows_per_chunk=rows)


def rowwise(f, *columns):
    """``f`` of each row's values, None where one is None (pandas' object arithmetic
    raises on None; this is what it would give with NA propagation)."""
    return [None if any(v is None for v in vs) else f(*vs) for vs in zip(*columns)]


def same_decimals(got, want):
    got, want = list(got), list(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if w is None:
            assert g is None or (isinstance(g, float) and np.isnan(g)), (g, w)
        else:
            assert isinstance(g, D), (g, w)
            assert g == w, (g, w)


def test_round_trip_keeps_decimals(session, pdf):
    for df in frames(pdf):
        t = df.to_arrow(session)
        assert t.schema.field("price").type == MONEY
        out = df.compute(session)
        same_decimals(out["price"], pdf["price"])
        same_decimals(out["disc"], pdf["disc"])


def test_from_pandas_infers_decimal128(session):
    pdf = pd.DataFrame({"x": [D("1.10"), None, D("-3.33"), D("12.50")]})
    df = ts.from_pandas(pdf, rows_per_chunk=2)
    assert df.dtypes["x"].startswith("Decimal128(")
    same_decimals(df.compute(session)["x"], pdf["x"])
    assert df.x.sum().compute(session) == D("10.27")


def test_tpch_charge_is_exact(session, pdf):
    want = rowwise(lambda p, d, t: p * (1 - d) * (1 + t), pdf.price, pdf.disc, pdf.tax)
    for df in frames(pdf):
        charge = df.price * (1 - df.disc) * (1 + df.tax)
        t = charge.to_arrow(session)
        # DuckDB's types: Decimal(15 + 16 + 1, 4), then Decimal(38, 6).
        assert t.type == pa.decimal128(38, 6)
        same_decimals(charge.compute(session), want)


def test_arithmetic_with_integers_floats_and_decimals(session, pdf):
    for df in frames(pdf):
        same_decimals((df.price + df.n).compute(session), rowwise(lambda p, n: p + n, pdf.price, pdf.n))
        same_decimals((df.price - 2).compute(session), rowwise(lambda p: p - 2, pdf.price))
        same_decimals((-df.price).compute(session), rowwise(lambda p: -p, pdf.price))
        same_decimals((df.price * D("0.5")).compute(session), rowwise(lambda p: p * D("0.5"), pdf.price))
        # Floored modulo (the divisor's sign), where Decimal's own % truncates.
        floored = rowwise(lambda p: p - D(3) * (p / D(3)).to_integral_value(decimal.ROUND_FLOOR), pdf.price)
        same_decimals((df.price % 3).compute(session), floored)
        # Floats and / give floats.
        got = (df.price + df.f).compute(session)
        want = rowwise(lambda p, f: float(p) + f, pdf.price, pdf.f)
        np.testing.assert_allclose(got.astype(float), np.array(want, dtype=float), rtol=1e-12)
        got = (df.price / df.qty).compute(session)
        want = rowwise(lambda p, q: float(p / q), pdf.price, pdf.qty)
        np.testing.assert_allclose(got.astype(float), np.array(want, dtype=float), rtol=1e-12)


def test_comparisons_with_constants_select_what_decimals_do(session, pdf):
    cases = [
        (lambda s: s.disc.between(0.05, 0.07), lambda p: p.disc.between(D("0.05"), D("0.07"))),
        (lambda s: s.qty < 24, lambda p: p.qty < 24),
        (lambda s: s.disc == 0.06, lambda p: p.disc == D("0.06")),
        (lambda s: s.disc > 0.055, lambda p: p.disc > D("0.055")),
        (lambda s: s.price >= D("1000.005"), lambda p: p.price.map(lambda v: v is not None and v >= D("1000.005"))),
        (lambda s: s.tax < s.disc, lambda p: p.tax < p.disc),
        (lambda s: s.disc * 100 > s.n, lambda p: p.disc * 100 > p.n),
    ]
    for df in frames(pdf):
        for ours, theirs in cases:
            want = pdf[theirs(pdf).astype(bool)]
            got = df[ours(df)].compute(session)
            assert sorted(got["qty"].tolist()) == sorted(want["qty"].tolist())
            assert len(got) == len(want)


def test_reductions(session, pdf):
    present = pdf.price.dropna()
    for df in frames(pdf):
        assert df.price.sum().compute(session) == present.sum()
        assert isinstance(df.price.sum().compute(session), D)
        assert df.price.min().compute(session) == present.min()
        assert df.price.max().compute(session) == present.max()
        assert df.price.count().compute(session) == len(present)
        assert df.disc.nunique().compute(session) == pdf.disc.nunique()
        assert df.price.mean().compute(session) == pytest.approx(float(present.sum() / len(present)), rel=1e-12)
        assert df.price.std().compute(session) == pytest.approx(present.astype(float).std(), rel=1e-9)


def test_groupby(session, pdf):
    ref = pdf.assign(
        charge=rowwise(lambda p, d, t: p * (1 - d) * (1 + t), pdf.price, pdf.disc, pdf.tax)
    )
    want = (
        ref.groupby("flag")
        .agg(
            charge=("charge", "sum"),
            qty=("qty", "sum"),
            lo=("price", "min"),
            hi=("price", "max"),
            first=("price", "first"),
            last=("price", "last"),
            count=("price", "count"),
            distinct=("disc", "nunique"),
        )
        .reset_index()
    )
    for df in frames(pdf):
        got = (
            df.assign(charge=df.price * (1 - df.disc) * (1 + df.tax))
            .groupby("flag")
            .agg(
                charge=("charge", "sum"),
                qty=("qty", "sum"),
                lo=("price", "min"),
                hi=("price", "max"),
                first=("price", "first"),
                last=("price", "last"),
                count=("price", "count"),
                distinct=("disc", "nunique"),
                mean=("price", "mean"),
            )
            .compute(session)
            .reset_index()
        )
        assert got["flag"].tolist() == want["flag"].tolist()
        for c in ["charge", "qty", "lo", "hi", "first", "last"]:
            same_decimals(got[c], want[c])
        assert got["count"].tolist() == want["count"].tolist()
        assert got["distinct"].tolist() == want["distinct"].tolist()
        means = [float(s / c) for s, c in zip(ref.groupby("flag")["price"].sum(), want["count"])]
        np.testing.assert_allclose(got["mean"].astype(float), means, rtol=1e-12)
        # Grouped by a decimal key.
        by_disc = df.groupby("disc").agg(total=("price", "sum")).compute(session).reset_index()
        want_disc = ref.groupby("disc")["price"].sum().reset_index()
        same_decimals(by_disc["disc"], want_disc["disc"])
        same_decimals(by_disc["total"], want_disc["price"])


def test_casts(session, pdf):
    whole = pdf[pdf.price.notna()]
    for df in frames(whole):
        got = df.price.astype("float64").compute(session)
        np.testing.assert_array_equal(got.to_numpy(), whole.price.astype(float).to_numpy())
        assert df.price.astype("int64").compute(session).tolist() == [int(v) for v in whole.price]
        assert df.price.astype(str).compute(session).tolist() == [str(v) for v in whole.price]
        widened = df.price.astype("decimal(20, 4)")
        assert widened.to_arrow(session).type == pa.decimal128(20, 4)
        same_decimals(widened.compute(session), whole.price)
        arrow_dtype = pd.ArrowDtype(pa.decimal128(12, 3))
        got = df.f.astype(arrow_dtype).compute(session)
        same_decimals(got, [D(repr(v)).quantize(D("0.001")) for v in whole.f])
        same_decimals(df.n.astype("decimal(5,0)").compute(session), [D(int(v)) for v in whole.n])
    with pytest.raises(TesseraTypeError):
        ts.from_arrow(table(pdf)).price.astype("decimal(40, 2)")


def test_fillna_where_and_constants(session, pdf):
    for df in frames(pdf):
        same_decimals(df.price.fillna(0).compute(session), [D(0) if v is None else v for v in pdf.price])
        same_decimals(
            df.price.fillna(D("-0.01")).compute(session), [D("-0.01") if v is None else v for v in pdf.price]
        )
        where = df.price.where(df.flag == "A", df.tax).compute(session)
        want = [p if fl == "A" else t for fl, p, t in zip(pdf.flag, pdf.price, pdf.tax)]
        same_decimals(where, want)
        out = df.assign(k=D("1.50")).compute(session)
        assert set(out["k"]) == {D("1.50")}
        assert df.price.isin([D("0.00")]).compute(session).tolist() == [v == 0 for v in pdf.price]


def test_sort_by_a_decimal(session, pdf):
    want = sorted(v for v in pdf.price if v is not None)
    for df in frames(pdf):
        got = df.sort_values("price").compute(session)["price"].tolist()
        assert got[: len(want)] == want


def test_errors_are_typed(session):
    big = pa.table({"m": pa.array([D(10**37), D(9 * 10**37)], pa.decimal128(38, 0))})
    df = ts.from_arrow(big, rows_per_chunk=1)
    with pytest.raises(TesseraValueError, match="overflow"):
        (df.m + df.m).compute(session)
    with pytest.raises(TesseraValueError, match="overflow"):
        df.m.sum().compute(session)
    fine = ts.from_arrow(pa.table({"x": pa.array([D("1")], pa.decimal128(30, 20))}))
    with pytest.raises(TesseraTypeError, match="scale"):
        (fine.x * fine.x).compute(session)
    for bad in [D("NaN"), D("Infinity"), D("1" * 39)]:
        with pytest.raises(TesseraValueError):
            fine.x + bad
