"""``ts.sql`` and ``Session.sql``: SQL over Tessera frames, against DuckDB's and pandas'
answers on the same rows, and bad queries raising ``tessera.SqlError``."""

import duckdb
import pandas as pd
import pytest

import tessera as ts

ORDERS = pd.DataFrame({
    "o_id": range(12),
    "cust": [i % 4 for i in range(12)],
    "amount": [10.0 * i for i in range(12)],
    "note": [f"{'even' if i % 2 == 0 else 'odd'} order {i}" for i in range(12)],
})
CUST = pd.DataFrame({"c_id": range(5), "name": [f"c{i}" for i in range(5)]})

QUERIES = [
    "select cust, count(*) as n, sum(amount) as s, avg(amount) as mean from orders "
    "group by cust having count(*) > 2 order by cust",
    "select name, sum(amount) as total from orders, cust "
    "where cust = c_id and amount > 30 group by name order by name",
    "select c_id, count(o_id) as n from cust left join orders on c_id = cust "
    "and note like 'odd%' group by c_id order by c_id",
    "select c_id from cust where not exists (select * from orders where cust = c_id) "
    "order by c_id",
    "select o_id from orders o1 where amount > "
    "(select avg(amount) from orders o2 where o2.cust = o1.cust) order by o_id",
    "select o_id from orders o1 where exists (select * from orders o2 "
    "where o2.cust = o1.cust and o2.amount > o1.amount + 50) order by o_id",
    "with t as (select cust, sum(amount) as s from orders group by cust) "
    "select cust, s from t where s = (select max(s) from t)",
]


@pytest.fixture(scope="module")
def duck():
    con = duckdb.connect()
    con.register("orders", ORDERS)
    con.register("cust", CUST)
    return con


@pytest.mark.parametrize("query", QUERIES)
def test_sql_equals_duckdb(query, duck, session):
    tables = {"orders": ts.from_pandas(ORDERS, rows_per_chunk=5), "cust": ts.from_pandas(CUST)}
    got = ts.sql(query, tables, session=session).compute(session)
    want = duck.execute(query).df()
    assert list(got.columns) == list(want.columns)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want, check_dtype=False)


def test_session_sql_equals_pandas(session):
    got = session.sql("select o_id, amount * 2 as dbl from orders where amount >= 50 "
                      "order by o_id desc", {"orders": ts.from_pandas(ORDERS)}).compute(session)
    want = ORDERS[ORDERS.amount >= 50].assign(dbl=lambda d: d.amount * 2)[["o_id", "dbl"]]
    want = want.sort_values("o_id", ascending=False).reset_index(drop=True)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want, check_dtype=False)


def test_bad_queries_raise_sql_error(session):
    tables = {"orders": ts.from_pandas(ORDERS)}
    with pytest.raises(ts.SqlError, match="unknown column"):
        ts.sql("select nope from orders", tables, session=session)
    with pytest.raises(ts.SqlError, match="unknown table"):
        ts.sql("select * from nowhere", tables, session=session)
    with pytest.raises(ts.SqlError, match="parse error"):
        ts.sql("select from where", tables, session=session)
    with pytest.raises(ts.SqlError, match="window functions"):
        ts.sql("select sum(amount) over () from orders", tables, session=session)
    with pytest.raises(ts.TesseraTypeError):
        ts.sql("select 1", {"orders": ORDERS}, session=session)
    assert issubclass(ts.SqlError, ValueError)
