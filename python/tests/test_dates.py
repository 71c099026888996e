"""Date and time literals and date arithmetic against pandas, on the same data under two
chunkings: every kind of Python date, time and offset value (``datetime``, NumPy, pandas)
compared with and added to date (Arrow ``date32``, as TPC-H's) and timestamp columns.

Tessera's semantics where pandas has none or differs (see kernels' ``temporal`` module):
a date column compares with a date or timestamp as the instant of its midnight (pandas
raises on a ``datetime64`` column against a ``datetime.date``, so the reference compares
with ``pd.Timestamp(value)``); a comparison with null is null and a filter drops it (pandas'
``NaT != x`` is True, so the reference masks nulls out).
"""

import datetime as dt
import operator
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tessera as ts
from tessera.errors import TesseraTypeError, TesseraValueError

CHUNKINGS = [7, None]
OPS = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]

# Around every boundary the literals below sit on, and month ends for calendar offsets.
SPECIAL_DAYS = [dt.date(1995, 3, 14), dt.date(1995, 3, 15), dt.date(1995, 3, 16),
                dt.date(1995, 1, 31), dt.date(1996, 1, 31), dt.date(1996, 2, 29),
                dt.date(1995, 3, 31), dt.date(1994, 12, 31), dt.date(1994, 1, 1),
                dt.date(1993, 12, 31), dt.date(1995, 1, 1), dt.date(1998, 9, 2),
                dt.date(1998, 9, 3), dt.date(1969, 12, 31), dt.date(1970, 1, 1)]


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(51)
    n = 80
    first = dt.date(1992, 1, 1).toordinal()
    ship = [dt.date.fromordinal(first + int(d)) for d in rng.integers(0, 2557, n)]
    ship[: len(SPECIAL_DAYS)] = SPECIAL_DAYS
    commit = [d + dt.timedelta(days=int(k)) for d, k in zip(ship, rng.integers(-30, 60, n))]
    receipt = [d + dt.timedelta(days=int(k)) for d, k in zip(ship, rng.integers(1, 31, n))]
    ship = [None if i % 9 == 4 else d for i, d in enumerate(ship)]
    commit = [None if i % 11 == 6 else d for i, d in enumerate(commit)]
    # Timestamps at random microseconds, and on either side of the literals' instants.
    stamps = [dt.datetime.combine(d or dt.date(1995, 3, 15), dt.time())
              + dt.timedelta(microseconds=int(u)) for d, u in
              zip(ship, rng.integers(0, 86_400_000_000, n))]
    stamps[:6] = [dt.datetime(1995, 3, 15), dt.datetime(1995, 3, 15, 12),
                  dt.datetime(1995, 3, 14, 23, 59, 59, 999000), dt.datetime(1995, 3, 15, 6),
                  dt.datetime(1995, 3, 15, 0, 0, 0, 1), dt.datetime(1995, 3, 15, 5)]
    stamps = [None if i % 10 == 8 else s for i, s in enumerate(stamps)]
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "l_shipdate": pa.array(ship, pa.date32()),
        "l_commitdate": pa.array(commit, pa.date32()),
        "l_receiptdate": pa.array(receipt, pa.date32()),
        "t": pa.array(stamps, pa.timestamp("us")),
        "utc": pa.array(stamps, pa.timestamp("us")).cast(pa.timestamp("us", tz="UTC")),
    })


@pytest.fixture(scope="module")
def pdf(table):
    return table.to_pandas(date_as_object=False)


def frame(table, rows):
    return ts.from_arrow(table, rows_per_chunk=rows)


def to_pandas(df, session):
    out = df.to_arrow(session).to_pandas(date_as_object=False)
    return out.sort_values("id").reset_index(drop=True)


def check_rows(got, want, session):
    """The filtered frame `got` has the rows of the pandas frame `want` (compared by id)."""
    ids = to_pandas(got[["id"]], session)["id"].tolist()
    assert ids == sorted(want["id"].tolist())


def check_column(df, expr, want, session):
    """Column `expr` of `df` equals the pandas series `want` (times compared in ns)."""
    got = to_pandas(df.assign(out=expr)[["id", "out"]], session)["out"]
    kind = "timedelta64[ns]" if pd.api.types.is_timedelta64_dtype(want) else "datetime64[ns]"
    pd.testing.assert_series_equal(got.astype(kind), want.reset_index(drop=True).astype(kind),
                                   check_names=False)


@pytest.mark.parametrize("rows", CHUNKINGS)
def test_tpch_date_filters(session, table, pdf, rows):
    df = frame(table, rows)
    # Q1: shipped by 90 days before 1998-12-01 (computed in Python: a datetime.date).
    cutoff = dt.date(1998, 12, 1) - pd.Timedelta(days=90)
    check_rows(df[df.l_shipdate <= cutoff], pdf[pdf.l_shipdate <= pd.Timestamp(cutoff)], session)
    # Q4/Q5: orders of one year (the end is a pd.Timestamp).
    start = dt.date(1994, 1, 1)
    end = start + pd.DateOffset(years=1)
    assert isinstance(end, pd.Timestamp)
    got = df[(df.l_shipdate >= start) & (df.l_shipdate < end)]
    want = pdf[(pdf.l_shipdate >= pd.Timestamp(start)) & (pdf.l_shipdate < end)]
    assert len(want) > 5
    check_rows(got, want, session)
    # Q4: committed before received, two date columns.
    check_rows(df[df.l_commitdate < df.l_receiptdate],
               pdf[pdf.l_commitdate < pdf.l_receiptdate], session)
    # Date parts in a filter.
    check_rows(df[df.l_shipdate.dt.year == 1995], pdf[pdf.l_shipdate.dt.year == 1995], session)
    check_rows(df[(df.l_shipdate.dt.year == 1995) & (df.l_shipdate.dt.month <= 3)],
               pdf[(pdf.l_shipdate.dt.year == 1995) & (pdf.l_shipdate.dt.month <= 3)], session)


NAIVE = [
    dt.date(1995, 3, 15),
    dt.datetime(1995, 3, 15),
    dt.datetime(1995, 3, 15, 12),
    pd.Timestamp("1995-03-15"),
    pd.Timestamp("1995-03-15 00:00:00.000000001"),
    pd.Timestamp("1995-03-15 06:00").as_unit("ms"),
    np.datetime64("1995-03-15"),
    np.datetime64("1995-03-15T06", "h"),
    np.datetime64("1995-03-14T23:59:59.999", "ms"),
    np.datetime64("1995-03-15T00:00:00.000000001", "ns"),
]


@pytest.mark.parametrize("rows", CHUNKINGS)
@pytest.mark.parametrize("value", NAIVE, ids=repr)
def test_naive_literals_compare_as_instants(session, table, pdf, rows, value):
    df = frame(table, rows)
    instant = pd.Timestamp(value)
    for column in ["l_shipdate", "t"]:
        for op in OPS:
            want = pdf[op(pdf[column], instant) & pdf[column].notna()]
            check_rows(df[op(df[column], value)], want, session)
        # The literal on the left.
        want = pdf[(instant < pdf[column]) & pdf[column].notna()]
        check_rows(df[value < df[column]], want, session)


@pytest.mark.parametrize("rows", CHUNKINGS)
def test_aware_literals_compare_as_instants(session, table, pdf, rows):
    from zoneinfo import ZoneInfo

    df = frame(table, rows)
    values = [
        pd.Timestamp("1995-03-15 07:00", tz="US/Eastern"),
        pd.Timestamp("1995-03-15", tz="UTC"),
        dt.datetime(1995, 3, 15, 5, tzinfo=dt.timezone.utc),
        dt.datetime(1995, 3, 15, 13, tzinfo=ZoneInfo("Europe/Paris")),
        dt.datetime(1995, 3, 15, 5, 30, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30))),
    ]
    for value in values:
        for op in OPS:
            want = pdf[op(pdf.utc, value) & pdf.utc.notna()]
            check_rows(df[op(df.utc, value)], want, session)
        # tz-aware against tz-naive raises, as in pandas.
        with pytest.raises(TypeError):
            _ = pdf.t < value
        with pytest.raises(TesseraTypeError, match="tz-aware"):
            df[df.t < value]
        with pytest.raises(TesseraTypeError, match="tz-aware"):
            df[df.l_shipdate < value]
    with pytest.raises(TesseraTypeError, match="tz-aware"):
        df[df.utc < dt.date(1995, 3, 15)]
    with pytest.raises(TesseraTypeError, match="tz-aware"):
        df[df.utc < pd.Timestamp("1995-03-15")]


OFFSETS = [
    pd.Timedelta(days=90),
    -pd.Timedelta(days=1),
    pd.Timedelta(hours=36),
    dt.timedelta(days=3),
    dt.timedelta(hours=5, microseconds=7),
    np.timedelta64(3, "D"),
    np.timedelta64(90, "m"),
    np.timedelta64(1500, "ms"),
    pd.DateOffset(months=1),
    pd.DateOffset(years=1),
    pd.DateOffset(months=-1),
    pd.DateOffset(weeks=2, days=1),
    pd.DateOffset(2, months=1),
    pd.DateOffset(years=1, months=1, days=-3),
    pd.DateOffset(),
]


@pytest.mark.parametrize("rows", CHUNKINGS)
@pytest.mark.parametrize("offset", OFFSETS, ids=repr)
def test_date_and_timestamp_columns_plus_offsets(session, table, pdf, rows, offset):
    df = frame(table, rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pd.errors.PerformanceWarning)
        for column in ["l_shipdate", "t"]:
            check_column(df, df[column] + offset, pdf[column] + offset, session)
            check_column(df, df[column] - offset, pdf[column] - offset, session)
            if not isinstance(offset, pd.DateOffset):
                check_column(df, offset + df[column], offset + pdf[column], session)
            else:
                # pandas' DateOffset takes the series itself: the same offset reversed.
                check_column(df, df[column] + offset, offset + pdf[column], session)


@pytest.mark.parametrize("rows", CHUNKINGS)
def test_whole_days_keep_a_date_column(session, table, rows):
    df = frame(table, rows)
    for offset in [pd.Timedelta(days=90), dt.timedelta(weeks=1), np.timedelta64(3, "D"),
                   pd.DateOffset(months=1)]:
        out = df.assign(out=df.l_shipdate - offset).to_arrow(session)
        assert out.schema.field("out").type == pa.date32(), offset
    out = df.assign(out=df.l_shipdate + pd.Timedelta(hours=1)).to_arrow(session)
    assert pa.types.is_timestamp(out.schema.field("out").type)


@pytest.mark.parametrize("rows", CHUNKINGS)
def test_differences_of_dates_and_timestamps(session, table, pdf, rows):
    df = frame(table, rows)
    late = df.l_receiptdate - df.l_commitdate
    want = pdf.l_receiptdate - pdf.l_commitdate
    check_column(df, late, want, session)
    for limit in [pd.Timedelta(days=3), dt.timedelta(days=3), np.timedelta64(36, "h"),
                  pd.Timedelta(hours=-12)]:
        check_rows(df[late > limit], pdf[(want > limit) & want.notna()], session)
        check_rows(df[late <= limit], pdf[(want <= limit) & want.notna()], session)
    # A date or timestamp literal minus a column, and a column minus a timestamp.
    check_column(df, dt.date(1999, 1, 1) - df.l_shipdate,
                 pd.Timestamp("1999-01-01") - pdf.l_shipdate, session)
    check_column(df, df.t - pd.Timestamp("1995-03-15"),
                 pdf.t - pd.Timestamp("1995-03-15"), session)
    check_column(df, df.t - np.datetime64("1995-03-15T00:00:00.000000001"),
                 pdf.t - pd.Timestamp("1995-03-15 00:00:00.000000001"), session)


@pytest.mark.parametrize("rows", CHUNKINGS)
def test_isin_between_and_fillna_take_dates(session, table, pdf, rows):
    df = frame(table, rows)
    days = [dt.date(1995, 3, 15), np.datetime64("1996-02-29"), pd.Timestamp("1995-01-31")]
    want = pdf[pdf.l_shipdate.isin([pd.Timestamp(d) for d in days])]
    check_rows(df[df.l_shipdate.isin(days)], want, session)
    low, high = dt.date(1995, 3, 14), pd.Timestamp("1995-03-16")
    check_rows(df[df.l_shipdate.between(low, high)],
               pdf[pdf.l_shipdate.between(pd.Timestamp(low), high)], session)
    check_column(df, df.l_shipdate.fillna(dt.date(2000, 1, 1)),
                 pdf.l_shipdate.fillna(pd.Timestamp("2000-01-01")), session)


def test_values_without_a_meaning_here_raise(session, table):
    df = frame(table, None)
    for value in [pd.NaT, np.datetime64("NaT"), np.timedelta64("NaT"),
                  pd.offsets.MonthEnd(), pd.offsets.BDay(2), pd.DateOffset(hours=1),
                  pd.DateOffset(month=3), pd.DateOffset(months=1, normalize=True),
                  np.timedelta64(1, "M"), np.timedelta64(5), np.datetime64("1995-03-15", "ps")]:
        with pytest.raises(TesseraValueError):
            df.l_shipdate + value
    with pytest.raises(TesseraValueError, match="MonthEnd"):
        df.l_shipdate < pd.offsets.MonthEnd()
    for bad in [lambda: df.l_shipdate + "1995-01-01", lambda: df.l_shipdate + 1,
                lambda: df.l_shipdate + df.l_commitdate,
                lambda: pd.Timedelta(days=1) - df.l_shipdate,
                lambda: df[df.l_shipdate < pd.DateOffset(months=1)]]:
        with pytest.raises(TesseraTypeError):
            bad().compute(session)


def test_numpy_scalars_on_either_side(session):
    # Series defers NumPy's scalar operators (for datetime64 on the left), so NumPy's
    # numbers reach it as themselves, on either side.
    p = pd.DataFrame({"a": [1, 2, 3, 4]})
    df = ts.from_pandas(p, rows_per_chunk=3)
    for value in [np.int64(3), np.int8(-2), np.float32(1.5), np.float64(2.5), np.uint16(2)]:
        for got, want in [(df.a + value, p.a + value), (value + df.a, value + p.a),
                          (value < df.a, value < p.a), (df.a * value, p.a * value)]:
            assert got.compute(session).tolist() == want.tolist(), value
    got = ((df.a > 2) == np.bool_(True)).compute(session).tolist()
    assert got == [False, False, True, True]
    with pytest.raises(TesseraValueError, match="int64"):
        df.a + np.uint64(2**63)
