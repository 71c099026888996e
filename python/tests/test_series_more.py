"""Series functions and the ``str`` / ``dt`` accessors against pandas, with nulls, under
several chunkings."""

import datetime as dt

import numpy as np
import pandas as pd
import pytest

import tessera as ts
from tessera.errors import TesseraError

ROWS_PER_CHUNK = [None, 1, 3, 7]

WORDS = ["  Apple", "banana ", None, "Cherry pie", "apple", "", "BANANA", "kiwi", None, "ä-Ü x"]


@pytest.fixture
def pdf():
    n = len(WORDS)
    base = dt.datetime(2023, 12, 30, 22, 59, 58)
    stamps = [base + dt.timedelta(days=37 * i, hours=5 * i, minutes=13 * i, seconds=7 * i)
              for i in range(n)]
    return pd.DataFrame(
        {
            "s": pd.Series(WORDS, dtype=object),
            "x": np.array([1.5, -2.0, 3.25, 0.0, 7.0, -1.0, 2.0, 5.5, 4.0, 2.5]),
            "i": np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3], dtype=np.int64),
            "t": pd.Series(stamps, dtype="datetime64[us]"),
        }
    )


def values(series):
    """A pandas series as a plain list, nulls (None, NaN, NaT, <NA>) as None."""
    return [None if pd.isna(v) else v for v in series.tolist()]


def check(got, want):
    got, want = values(got), values(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, float) and g is not None:
            assert g == pytest.approx(w)
        else:
            assert g == w, (got, want)


@pytest.mark.parametrize("rows", ROWS_PER_CHUNK)
def test_str_accessor_matches_pandas(session, pdf, rows):
    df = ts.from_pandas(pdf, rows_per_chunk=rows)
    s, p = df["s"], pdf["s"]
    for name in ["lower", "upper", "len", "strip"]:
        check(getattr(s.str, name)().compute(session), getattr(p.str, name)())
    for name, pat in [("startswith", "a"), ("endswith", " "), ("contains", "an"),
                      ("contains", "")]:
        check(getattr(s.str, name)(pat).compute(session), getattr(p.str, name)(pat))
    check(s.str.replace("an", "AN").compute(session), p.str.replace("an", "AN", regex=False))
    for start, stop in [(None, 3), (1, None), (-3, None), (2, -1), (5, 2)]:
        check(s.str.slice(start, stop).compute(session), p.str.slice(start, stop))
    # Chained, and used as a filter.
    got = df[df["s"].str.lower().str.startswith("b")]["i"].compute(session)
    assert sorted(got.tolist()) == sorted(pdf[p.str.lower().str.startswith("b") == True]["i"])  # noqa: E712


@pytest.mark.parametrize("rows", ROWS_PER_CHUNK)
def test_dt_accessor_matches_pandas(session, pdf, rows):
    df = ts.from_pandas(pdf, rows_per_chunk=rows)
    t, p = df["t"], pdf["t"]
    for name in ["year", "month", "day", "hour", "minute", "second", "weekday", "dayofweek",
                 "dayofyear", "quarter"]:
        check(getattr(t.dt, name).compute(session), getattr(p.dt, name))
    for freq in ["D", "h", "min", "s"]:
        got = t.dt.floor(freq).compute(session)
        want = p.dt.floor(freq)
        assert [pd.Timestamp(v) for v in got.tolist()] == [pd.Timestamp(v) for v in want.tolist()]


@pytest.mark.parametrize("zone", ["America/New_York", "UTC", "Asia/Kolkata", "+05:45"])
@pytest.mark.parametrize("rows", [None, 3])
def test_dt_accessor_of_zoned_timestamps_matches_pandas(session, pdf, rows, zone):
    # The same instants on a zone's wall clock (New York's cross its summer time).
    tz = dt.timezone(dt.timedelta(hours=5, minutes=45)) if zone.startswith("+") else zone
    stamps = pdf["t"].dt.tz_localize("UTC").dt.tz_convert(tz)
    stamps = stamps.where(stamps.index != 2)
    p = pd.DataFrame({"t": stamps})
    t = ts.from_pandas(p, rows_per_chunk=rows)["t"]
    for name in ["year", "month", "day", "hour", "minute", "second", "weekday", "dayofyear",
                 "quarter"]:
        check(getattr(t.dt, name).compute(session), getattr(p["t"].dt, name))
    for freq in ["D", "h", "min"]:
        got = t.dt.floor(freq).compute(session)
        want = p["t"].dt.floor(freq)
        assert [None if pd.isna(v) else pd.Timestamp(v) for v in got.tolist()] == [
            None if pd.isna(v) else v for v in want.tolist()], freq


@pytest.mark.parametrize("rows", [None, 3])
def test_tz_localize_and_convert_match_pandas(session, pdf, rows):
    p = pdf[["t"]].copy()
    p["t"] = p["t"].where(p.index != 4)
    df = ts.from_pandas(p, rows_per_chunk=rows)
    t = df["t"]
    for zone in ["America/New_York", "utc", "+05:45", dt.timezone(dt.timedelta(hours=-3))]:
        local = t.dt.tz_localize(zone)
        want = p["t"].dt.tz_localize(zone)
        got = local.compute(session)
        assert [None if pd.isna(v) else v for v in got.tolist()] == [
            None if pd.isna(v) else v for v in want.tolist()], zone
        check(local.dt.hour.compute(session), want.dt.hour)
        for to in ["Asia/Kolkata", "UTC", None]:
            got = local.dt.tz_convert(to).compute(session)
            pw = want.dt.tz_convert(to)
            assert [None if pd.isna(v) else pd.Timestamp(v) for v in got.tolist()] == [
                None if pd.isna(v) else v for v in pw.tolist()], (zone, to)
        back = local.dt.tz_localize(None).compute(session)
        assert [None if pd.isna(v) else pd.Timestamp(v) for v in back.tolist()] == [
            None if pd.isna(v) else v for v in p["t"].tolist()], zone
    # pandas' TypeErrors are our typed errors; its default refusals of skipped times too.
    with pytest.raises(TesseraError, match="tz_localize"):
        t.dt.tz_convert("UTC").compute(session)
    with pytest.raises(TesseraError, match="tz_convert"):
        t.dt.tz_localize("UTC").dt.tz_localize("UTC").compute(session)
    with pytest.raises(ValueError, match="ambiguous='raise'"):
        t.dt.tz_localize("UTC", ambiguous="NaT")
    skipped = pd.DataFrame({"t": pd.to_datetime(["2021-03-14 02:30"])})
    with pytest.raises(Exception):
        skipped["t"].dt.tz_localize("America/New_York")
    with pytest.raises(TesseraError, match="does not exist"):
        ts.from_pandas(skipped)["t"].dt.tz_localize("America/New_York").compute(session)


def test_dt_floor_onto_a_repeated_wall_clock_time_raises(session):
    # New York's 01:00 of 2021-11-07 happens twice: pandas raises by default, and so do we.
    repeated = pd.DataFrame({"t": pd.Series(pd.to_datetime(["2021-11-07 05:30"])).dt
                             .tz_localize("UTC").dt.tz_convert("America/New_York")})
    with pytest.raises(Exception):
        repeated["t"].dt.floor("h")
    with pytest.raises(TesseraError, match="occurs twice"):
        ts.from_pandas(repeated)["t"].dt.floor("h").compute(session)


@pytest.mark.parametrize("rows", ROWS_PER_CHUNK)
def test_between_astype_map_unique(session, pdf, rows):
    df = ts.from_pandas(pdf, rows_per_chunk=rows)
    check(df["x"].between(0, 4).compute(session), pdf["x"].between(0, 4))
    check(df["i"].between(2, 5).compute(session), pdf["i"].between(2, 5))
    check(df["x"].astype("int64").compute(session), pdf["x"].astype("int64"))
    check(df["i"].astype(float).compute(session), pdf["i"].astype(float))
    check(df["i"].astype(str).compute(session), pdf["i"].astype(str))
    got = df["s"].astype("category").compute(session)
    check(got.astype(object), pdf["s"])
    mapping = {1: 10, 3: 30, 5: 50}
    check(df["i"].map(mapping).compute(session), pdf["i"].map(mapping))
    words = {"kiwi": "fruit", "apple": "fruit", "": "empty"}
    check(df["s"].map(words).compute(session), pdf["s"].map(words))
    assert sorted(df["i"].unique().compute(session).tolist()) == sorted(pdf["i"].unique())
    got = df["s"].unique().compute(session).tolist()
    assert sorted(v for v in got if v is not None) == sorted(
        v for v in pdf["s"].unique() if v is not None)


def test_bad_accessor_use_raises_clearly(session, pdf):
    df = ts.from_pandas(pdf)
    with pytest.raises(ValueError, match="look-ahead"):
        df["s"].str.contains("a(?=c)")
    assert df["s"].str.contains("a.c", regex=False).compute(session).tolist() == [False] * 2 + [
        None] + [False] * 5 + [None, False]
    with pytest.raises(ValueError, match="step 1"):
        df["s"].str.slice(0, 4, 2)
    with pytest.raises(ValueError, match="'D', 'h', 'min' or 's'"):
        df["t"].dt.floor("W")
    with pytest.raises(TypeError, match='astype to "complex128"'):
        df["x"].astype("complex128")
    with pytest.raises(TypeError, match="dict"):
        df["i"].map(lambda v: v + 1)
    # A string function on a number column fails when built or run, naming the problem.
    with pytest.raises(TesseraError):
        df["x"].str.lower().compute(session)


@pytest.mark.parametrize("rows", ROWS_PER_CHUNK)
def test_where_and_mask_match_pandas(session, pdf, rows):
    df = ts.from_pandas(pdf, rows_per_chunk=rows)
    x, i, px, pi = df["x"], df["i"], pdf["x"], pdf["i"]
    check(x.where(x > 1).compute(session), px.where(px > 1))
    check(x.where(i > 2, -1.0).compute(session), px.where(pi > 2, -1.0))
    check(i.where(x > 0, i * 10).compute(session), pi.where(px > 0, pi * 10))
    check(x.mask(x > 1, 0.0).compute(session), px.mask(px > 1, 0.0))
    check(df["s"].where(i > 3, "-").compute(session), pdf["s"].where(pi > 3, "-"))


def test_where_refuses_conditions_it_cannot_align(session, pdf):
    df, other = ts.from_pandas(pdf), ts.from_pandas(pdf)
    with pytest.raises(TypeError, match="cond must be"):
        df["x"].where(True)
    with pytest.raises(ValueError, match="different frames"):
        df["x"].where(other["x"] > 0)
