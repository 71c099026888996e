"""The 22 TPC-H queries, written in pandas style on Tessera (python/tpch_queries.py), in
Rust (examples/tpch/queries.rs) and as SQL translated by Tessera (examples/tpch/sql/),
against DuckDB's answers to the specification's SQL on the same tpchgen Parquet files
(scale factor 0.02, the smallest at which every answer has rows), compared as
``python/tpch_check.py`` compares.
"""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tpch_queries  # noqa: E402
from tpch_check import assert_answer, duckdb_on  # noqa: E402
from tpch_sql import SQL  # noqa: E402

import tessera as ts  # noqa: E402

SF = os.environ.get("TESSERA_TPCH_SF", "0.02")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tpch_dir(tmp_path_factory):
    """tpchgen-cli's eight Parquet tables at scale factor SF."""
    d = tmp_path_factory.mktemp(f"tpch-sf{SF}")
    cli = Path(sys.executable).parent / "tpchgen-cli"
    subprocess.run([str(cli), "parquet", "-s", SF, "--output-dir", str(d)],
                   check=True, capture_output=True)
    return d


@pytest.fixture(scope="module")
def duck(tpch_dir):
    return duckdb_on(tpch_dir)


def test_the_reference_is_not_empty(duck):
    # The comparisons mean something only where DuckDB's answers have rows.
    empty = [n for n in SQL if len(duck.execute(SQL[n]).df()) == 0]
    assert empty == []


@pytest.mark.parametrize("n", range(1, 23))
def test_python_query_equals_duckdb(n, tpch_dir, duck, session):
    got = tpch_queries.run(n, tpch_queries.Tables(str(tpch_dir)), session)
    assert_answer(n, got, duck.execute(SQL[n]).df())


@pytest.mark.parametrize("chunk", [1 << 14])
def test_python_queries_do_not_depend_on_chunking(chunk, tpch_dir, duck):
    # Small chunks: many chunks per table, so joins and groupbys shuffle and merge.
    with ts.Session(threads=2, chunk_bytes=chunk) as s:
        for n in (1, 3, 5, 9, 13, 18, 21, 22):
            got = tpch_queries.run(n, tpch_queries.Tables(str(tpch_dir)), s)
            assert_answer(n, got, duck.execute(SQL[n]).df())


def _rust_binary():
    exe = ROOT / "target" / "debug" / "examples" / "tpch"
    if not exe.exists():
        subprocess.run(["cargo", "build", "-q", "-p", "tessera-examples", "--example", "tpch"],
                       cwd=ROOT, check=True)
    return exe


def _cluster_binaries():
    return all((ROOT / "target" / "debug" / b).exists()
               for b in ("tessera-scheduler", "tessera-worker"))


def _assert_plans(printed):
    """Each query's optimised plan is printed before its answer, and reads its tables."""
    plans = printed.split(" plan:\n")[1:]
    assert len(plans) == 22, printed
    assert all("[#1] " in p and "READ PARQUET" in p for p in plans), printed


def _assert_answers(out, duck):
    """The answers ``tpch run --out`` wrote equal DuckDB's."""
    wrong = []
    for n in range(1, 23):
        got = pd.read_parquet(out / f"q{n}.parquet")
        try:
            assert_answer(n, got, duck.execute(SQL[n]).df())
        except AssertionError as e:
            wrong.append(str(e))
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("workers", [None, 2])
def test_rust_queries_equal_duckdb(workers, tpch_dir, duck, tmp_path):
    out = tmp_path / "answers"
    cmd = [str(_rust_binary()), "run", "--data", str(tpch_dir), "--out", str(out)]
    if workers:
        if not _cluster_binaries():
            subprocess.run(["cargo", "build", "-q", "-p", "tessera-server", "--bins"],
                           cwd=ROOT, check=True)
        # Small chunks, so that every table is cut among the two workers and joins shuffle.
        cmd += ["--workers", str(workers), "--threads", "1", "--chunk-bytes", "64K"]
    else:
        cmd += ["--explain"]
    printed = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    if not workers:
        _assert_plans(printed)
    _assert_answers(out, duck)


@pytest.mark.parametrize("chunk_bytes", [None, "64K"])
def test_rust_sql_queries_equal_duckdb(chunk_bytes, tpch_dir, duck, tmp_path):
    # The same SQL texts DuckDB answers, translated by Session::sql (decorrelated
    # subqueries, join trees from WHERE), on one chunk per table and on many.
    out = tmp_path / "answers"
    cmd = [str(_rust_binary()), "run", "--sql", "--explain", "--data", str(tpch_dir),
           "--out", str(out)]
    if chunk_bytes:
        cmd += ["--chunk-bytes", chunk_bytes]
    printed = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    _assert_plans(printed)
    _assert_answers(out, duck)
