"""Checks TPC-H answers against DuckDB's answers to the specification's SQL on the same
Parquet files: the comparison ``python/tests/test_tpch.py`` makes, and a command that makes
it at any scale (SF1, SF10) for the Python queries or for the answers the Rust example wrote
(``tpch run --out DIR``, from the Rust queries or, with ``--sql``, from the SQL texts).

An answer equals DuckDB's when it has the same columns and rows (values within a relative
1e-9, decimals compared as numbers, dates as dates) and, where the query orders, the same
sequence of ORDER BY keys: rows tied on every key may come in any order, as SQL allows.

    python python/tpch_check.py --data /tmp/tpch-sf1 --python [--workers 2] [--memory-budget 2G]
    python python/tpch_check.py --data /tmp/tpch-sf1 --answers /tmp/answers   # Rust's q<N>.parquet

Prints one line per query (rows, seconds, ``ok`` or what differs) and exits 1 if any differ.
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "tests"))

#: Each query's ORDER BY columns (none: an unordered answer or one row).
ORDER = {
    1: ["l_returnflag", "l_linestatus"], 2: ["s_acctbal", "n_name", "s_name", "p_partkey"],
    3: ["revenue", "o_orderdate"], 4: ["o_orderpriority"], 5: ["revenue"], 6: [],
    7: ["supp_nation", "cust_nation", "l_year"], 8: ["o_year"], 9: ["nation", "o_year"],
    10: ["revenue"], 11: ["value"], 12: ["l_shipmode"], 13: ["custdist", "c_count"], 14: [],
    15: ["s_suppkey"], 16: ["supplier_cnt", "p_brand", "p_type", "p_size"], 17: [],
    18: ["o_totalprice", "o_orderdate"], 19: [], 20: ["s_name"], 21: ["numwait", "s_name"],
    22: ["cntrycode"],
}


def _normal(v):
    """A value as the comparison reads it: numbers as float, dates as dates."""
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return None
    if isinstance(v, (decimal.Decimal, np.integer, np.floating, int, float)) and not isinstance(
            v, bool):
        return float(v)
    if isinstance(v, pd.Timestamp):
        return v.date() if v == v.normalize() else v.to_pydatetime()
    if isinstance(v, np.datetime64):
        return _normal(pd.Timestamp(v))
    if isinstance(v, dt.datetime):
        return v.date() if v.time() == dt.time() else v
    return v


def _rows(df: pd.DataFrame, columns=None):
    cols = list(df.columns) if columns is None else columns
    return [tuple(_normal(v) for v in row) for row in df[cols].itertuples(index=False)]


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-9 * max(abs(a), abs(b)) + 1e-9
    return a == b


def _same_rows(got, want):
    return len(got) == len(want) and all(
        len(g) == len(w) and all(_same(x, y) for x, y in zip(g, w)) for g, w in zip(got, want))


def _sort_key(row):
    return tuple((v is None, str(type(v)), v if v is not None else 0) for v in row)


def assert_answer(n, got: pd.DataFrame, want: pd.DataFrame):
    """Raises AssertionError naming what differs where query ``n``'s answer ``got`` is not
    DuckDB's ``want``."""
    assert list(got.columns) == list(want.columns), f"Q{n}: columns"
    assert len(got) == len(want), f"Q{n}: {len(got)} rows, DuckDB {len(want)}"
    if ORDER[n]:
        assert _same_rows(_rows(got, ORDER[n]), _rows(want, ORDER[n])), f"Q{n}: order"
    g, w = sorted(_rows(got), key=_sort_key), sorted(_rows(want), key=_sort_key)
    assert _same_rows(g, w), f"Q{n}: values\n{got.head(10)}\nDuckDB:\n{want.head(10)}"


def duckdb_on(folder):
    """A DuckDB connection with a view of each table of ``folder``."""
    import duckdb
    import tpch_queries

    con = duckdb.connect()
    for name in tpch_queries.TABLES:
        path = Path(folder) / f"{name}.parquet"
        con.execute(f"create view {name} as select * from read_parquet('{path}')")
    return con


def _bytes(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    return int(float(text[:-1]) * units[text[-1]]) if text[-1:] in units else int(text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="folder of <table>.parquet")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--python", action="store_true", help="run python/tpch_queries.py")
    src.add_argument("--answers", help="folder of q<N>.parquet (the Rust example's --out)")
    ap.add_argument("--query", type=int, action="append", help="repeatable; default: all 22")
    ap.add_argument("--workers", type=int, help="a local cluster of this many workers")
    ap.add_argument("--memory-budget", help="the session's memory budget, e.g. 2G")
    args = ap.parse_args(argv)
    from tpch_sql import SQL

    queries = args.query or list(range(1, 23))
    con = duckdb_on(args.data)
    session = None
    if args.python:
        import tessera as ts
        import tpch_queries

        if args.workers:
            session = ts.Session.local_cluster(args.workers)
        else:
            budget = _bytes(args.memory_budget) if args.memory_budget else None
            session = ts.Session(memory_budget=budget)
        tables = tpch_queries.Tables(args.data)
    wrong = 0
    for n in queries:
        start = time.perf_counter()
        try:
            if args.python:
                got = tpch_queries.run(n, tables, session)
            else:
                got = pd.read_parquet(Path(args.answers) / f"q{n}.parquet")
            seconds = time.perf_counter() - start
            assert_answer(n, got, con.execute(SQL[n]).df())
            print(f"q{n}: {len(got)} rows, {seconds:.2f} s, ok", flush=True)
        except Exception as e:  # noqa: BLE001 - every failure is reported, then counted
            wrong += 1
            print(f"q{n}: FAILED {type(e).__name__}: {e}", flush=True)
    if session is not None:
        session.close()
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
