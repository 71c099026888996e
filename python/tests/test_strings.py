r"""String patterns (``str.contains``, ``match``, ``fullmatch``, ``extract``, regex
``replace``, ``slice``, ``str[a:b]``, SQL ``like``) against pandas on the same data, under
two chunkings, with the TPC-H filters among them; and the patterns Tessera refuses."""

import random
import re

import pandas as pd
import pyarrow as pa
import pytest

import tessera as ts

CHUNKINGS = [3, 1000]

WORDS = ["almond", "green", "Customer", "Complaints", "special", "requests", "the", "quick",
         "gray", "grey", "PROMO", "BRASS", "ünïcödé", "naïve", "x²", "e\u0301", "a.c", "$5",
         "joe@site", "ann@web", "2024-01-05", "+1-555-0100"]


def _strings(n=300, seed=51):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if i % 17 == 5:
            out.append(None)
        elif i % 23 == 7:
            out.append("")
        else:
            words = [rng.choice(WORDS) for _ in range(rng.randint(1, 5))]
            sep = rng.choice([" ", " ", "-", "\n", "_"])
            out.append(sep.join(words))
    # Edge values: a value ending in a line break, case variants, digits.
    out += ["abc\n", "GREEN", "Customer has no Complaints", "13-555-0123", "green",
            "quick\nthe", "joe@site.org"]
    return out


def _types(n=300, seed=7):
    rng = random.Random(seed)
    sizes = ["STANDARD", "SMALL", "PROMO", "LARGE", "ECONOMY"]
    finish = ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"]
    metal = ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"]
    return [None if i % 29 == 3 else
            f"{rng.choice(sizes)} {rng.choice(finish)} {rng.choice(metal)}" for i in range(n)]


@pytest.fixture(scope="module")
def table():
    s = _strings()
    t = _types(len(s))
    return pa.table({
        "s": pa.array(s, pa.string()),
        "t": pa.array(t, pa.string()),
        # The same values, as a dictionary (pandas' category).
        "c": pa.array(s, pa.string()).dictionary_encode(),
        "k": pa.array(list(range(len(s))), pa.int64()),
    })


@pytest.fixture(scope="module")
def pdf(table):
    return pd.DataFrame({"s": pd.Series(table["s"].to_pylist(), dtype=object),
                         "t": pd.Series(table["t"].to_pylist(), dtype=object),
                         "k": table["k"].to_pylist()})


@pytest.fixture(params=CHUNKINGS)
def df(request, table):
    return ts.from_arrow(table, rows_per_chunk=request.param)


def values(series):
    """A pandas series as a list, nulls (None, NaN, <NA>) as None."""
    return [None if v is None or (isinstance(v, float) and v != v) or v is pd.NA else v
            for v in series.tolist()]


def check(got, want):
    got, want = values(got), values(want)
    assert len(got) == len(want)
    bad = [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert not bad, bad[:5]


def both(df, session, pdf, make):
    """``make`` of column ``s`` and of its dictionary twin ``c`` against pandas'."""
    want = make(pdf["s"])
    check(make(df["s"]).compute(session), want)
    check(make(df["c"]).compute(session), want)


CONTAINS = [
    dict(pat="gr[ae]y"), dict(pat="^green"), dict(pat="green$"), dict(pat=r"\d+-\d+"),
    dict(pat="green"), dict(pat="Customer.*Complaints"), dict(pat=r"\bthe\b"),
    dict(pat=r"^\w+$"), dict(pat=r"\s"), dict(pat="GREEN", case=False),
    dict(pat="ünï", flags=re.IGNORECASE), dict(pat="a.c", regex=False),
    dict(pat="A.C", regex=False, case=False), dict(pat="^the", flags=re.MULTILINE),
    dict(pat="quick.the", flags=re.DOTALL), dict(pat=""), dict(pat="(?i)promo|brass"),
    dict(pat=r"\$5"), dict(pat="gr(?:ee|a)n?", na=False), dict(pat="x{,2}²"),
    dict(pat=re.compile("Gray", re.IGNORECASE)), dict(pat=r"[\w.]+@\w+"),
]


@pytest.mark.parametrize("kw", CONTAINS, ids=lambda kw: repr(kw))
def test_contains_matches_pandas(df, session, pdf, kw):
    both(df, session, pdf, lambda s: s.str.contains(**kw))


@pytest.mark.parametrize("pat", ["gr[ae]y", "green", r"\w+ \w+", "the|quick", "(?i)GREEN",
                                 "$", "a.c"])
def test_match_and_fullmatch_match_pandas(df, session, pdf, pat):
    both(df, session, pdf, lambda s: s.str.match(pat))
    both(df, session, pdf, lambda s: s.str.fullmatch(pat))
    both(df, session, pdf, lambda s: s.str.match(pat, case=False, na=True))


def test_extract_matches_pandas(df, session, pdf):
    s, p = df["s"], pdf["s"]
    # One group, expand=False: a series.
    check(s.str.extract(r"(\d+)", expand=False).compute(session),
          p.str.extract(r"(\d+)", expand=False))
    got = s.str.extract(r"(?P<user>\w+)@", expand=False)
    assert got.name == "user"
    check(got.compute(session), p.str.extract(r"(?P<user>\w+)@", expand=False))
    # Several groups (one optional, one named): a frame, the unnamed ones named "0", "1".
    pat = r"(\w+)@(?P<host>\w+)(\.\w+)?"
    got = s.str.extract(pat).compute(session)
    want = p.str.extract(pat)
    assert list(got.columns) == ["0", "host", "2"]
    for g, w in zip(got.columns, want.columns):
        check(got[g], want[w])
    # expand=True with one group is a one-column frame.
    got = s.str.extract(r"(gr.y)").compute(session)
    check(got["0"], p.str.extract(r"(gr.y)")[0])


@pytest.mark.parametrize("args", [
    (r"(\w+)@(\w+)", r"\2 at \1", {}),
    (r"(?P<user>\w+)@(?P<host>\w+)", r"<\g<host>:\g<user>:\g<0>>", {}),
    (r"\s+", " ", {}),
    (r"-?(\d)", r"[\1]", {}),
    ("x*", "_", {}),
    ("GREEN", "blue", dict(case=False)),
    ("a.c", "$1", {}),
    ("(gr)(e)?(a)?y", r"\1\2\3Y", {}),
])
def test_regex_replace_matches_pandas(df, session, pdf, args):
    pat, repl, kw = args
    regex = kw.get("case") is not False
    both(df, session, pdf, lambda s: s.str.replace(pat, repl, regex=regex, **kw))


def test_plain_replace_stays_plain(df, session, pdf):
    both(df, session, pdf, lambda s: s.str.replace("a.c", r"\1$", regex=False))


@pytest.mark.parametrize("bounds", [(0, 2), (1, 3), (-3, None), (None, -1), (2, -2),
                                    (5, 1), (-100, 100)])
def test_slices_match_pandas(df, session, pdf, bounds):
    a, b = bounds
    both(df, session, pdf, lambda s: s.str.slice(a, b))
    both(df, session, pdf, lambda s: s.str[a:b])


def _like(pattern, escape=None):
    """An independent LIKE: the pattern as a Python regex matched in full."""
    out, chars = [], iter(pattern)
    for c in chars:
        if escape is not None and c == escape:
            out.append(re.escape(next(chars)))
        elif c == "%":
            out.append(".*")
        elif c == "_":
            out.append(".")
        else:
            out.append(re.escape(c))
    rx = re.compile("".join(out), re.DOTALL)
    return lambda v: None if v is None else bool(rx.fullmatch(v))


@pytest.mark.parametrize("column,pattern", [
    ("s", "%green%"), ("s", "%Customer%Complaints%"), ("s", "%special%requests%"),
    ("t", "%BRASS"), ("t", "PROMO%"), ("t", "%O%B%S"), ("s", "g_ee%"), ("s", "_"),
    ("s", "%"), ("s", "green"), ("s", "%$_"), ("t", "SMALL _LATED TIN"),
])
def test_like_matches_an_independent_like(df, session, pdf, column, pattern):
    want = pdf[column].map(_like(pattern))
    check(df[column].str.like(pattern).compute(session), want)
    check((~df[column].str.like(pattern)).compute(session),
          want.map(lambda v: None if v is None else not v))


def test_like_escape(session):
    values_ = ["100%", "1000", "a_b", "axb", "a!b!", None]
    df = ts.from_arrow(pa.table({"s": values_}), rows_per_chunk=2)
    for pattern in ["100!%", "a!_b", "%!!", "%!%", "___!_"]:
        want = [_like(pattern, "!")(v) for v in values_]
        assert values(df["s"].str.like(pattern, escape="!").compute(session)) == want


def test_tpch_filters_match_pandas(df, session, pdf):
    """The TPC-H filters, as Tessera runs them, against pandas' spelling of each."""
    cases = [
        (df["s"].str.like("%green%"), pdf["s"].str.contains("green", regex=False)),
        (df["s"].str.like("%Customer%Complaints%"), pdf["s"].str.contains("Customer.*Complaints")),
        (~df["s"].str.like("%special%requests%"),
         ~pdf["s"].str.contains("special.*requests", na=True)),
        (df["t"].str.like("%BRASS"), pdf["t"].str.endswith("BRASS")),
        (df["t"].str.like("PROMO%"), pdf["t"].str.startswith("PROMO")),
    ]
    for mask, want in cases:
        got = df[mask].compute(session).sort_values("k")
        expect = pdf[want.astype("boolean").fillna(False).astype(bool)].sort_values("k")
        assert got["k"].tolist() == expect["k"].tolist()
    # substring(c_phone, 1, 2) and a filter on it.
    got = df.assign(code=df["s"].str[0:2]).compute(session).sort_values("k")
    check(got["code"], pdf.sort_values("k")["s"].str[0:2])
    kept = df[df["s"].str.slice(0, 2) == "13"].compute(session)
    assert sorted(kept["k"]) == sorted(pdf[pdf["s"].str[0:2] == "13"]["k"])


def test_patterns_the_engine_lacks_raise_by_name(session):
    df = ts.from_arrow(pa.table({"s": ["ab", None]}))
    s = df["s"]
    for pat, feature in [("a(?=b)", "look-ahead"), ("(?<!a)b", "look-behind"),
                         (r"(a)\1", "backreferences"), ("(?P<x>a)(?P=x)", "backreferences"),
                         ("(?>a)", "atomic groups"), ("a++", "possessive"),
                         (r"\N{DIGIT ONE}", "named Unicode"), ("(?a)a", "ASCII")]:
        # Raised where the series is made, not when it runs.
        with pytest.raises(ValueError, match=re.escape(feature)):
            s.str.contains(pat)
        with pytest.raises(ts.TesseraError, match=re.escape(feature)):
            s.str.replace(pat, "x", regex=True)
    with pytest.raises(ValueError, match="bad escape"):
        s.str.match(r"\p{L}")
    with pytest.raises(ValueError, match="invalid group reference"):
        s.str.replace("(a)", r"\2", regex=True)
    with pytest.raises(ValueError, match="no capture groups"):
        s.str.extract("ab")
    with pytest.raises(ValueError, match="ASCII"):
        s.str.contains("a", flags=re.ASCII)
    with pytest.raises(ValueError, match="compiled"):
        s.str.contains(re.compile("a"), flags=re.IGNORECASE)
    with pytest.raises(ValueError, match="must come before"):
        s.str.like("a!b", escape="!")
    with pytest.raises(TypeError, match="slice"):
        s.str[0]
    with pytest.raises(TypeError, match="callable"):
        s.str.replace("a", lambda m: "b", regex=True)
    # `$` on a value whose last line break is not its only one: an error, not a guess.
    multi = ts.from_arrow(pa.table({"s": ["a\nb\n"]}))
    with pytest.raises(ValueError, match=r"\\Z"):
        multi["s"].str.contains("b$").compute(session)
    assert values(multi["s"].str.contains(r"b\Z").compute(session)) == [False]
    assert values(multi["s"].str.contains("b$", flags=re.M).compute(session)) == [True]
