"""The 22 TPC-H queries written as a pandas user writes them, on ``import tessera as ts``
(the specification's validation parameters, as ``../shared/peers/tpch_queries.py``).

Each ``qN(t)`` takes the tables (``t.lineitem`` … as lazy :class:`tessera.DataFrame`) and
returns a lazy frame, or a lazy scalar for the queries whose answer is one number. Scalar
subqueries (Q11's threshold, Q15's maximum, Q22's average) are computed first, as a pandas
user's ``df.x.sum()`` would be, and used as constants. :func:`run` computes a query into a
:class:`pandas.DataFrame`. Used by ``python/bench.py tpch`` and ``python/tests/test_tpch.py``.
"""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal
from typing import Any, Callable, Dict

import pandas as pd

import tessera as ts

TABLES = ("lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region")


class Tables:
    """The eight tables of a ``tpchgen`` folder (``<table>.parquet``), read lazily."""

    def __init__(self, folder: str) -> None:
        for name in TABLES:
            setattr(self, name, ts.read_parquet(os.path.join(folder, f"{name}.parquet")))


def revenue(df):
    """``l_extendedprice * (1 - l_discount)``."""
    return df.l_extendedprice * (1 - df.l_discount)


def q1(t):
    li = t.lineitem
    li = li[li.l_shipdate <= dt.date(1998, 12, 1) - dt.timedelta(days=90)]
    li = li.assign(disc_price=revenue(li))
    li = li.assign(charge=li.disc_price * (1 + li.l_tax))
    return li.groupby(["l_returnflag", "l_linestatus"], as_index=False).agg(
        sum_qty=("l_quantity", "sum"),
        sum_base_price=("l_extendedprice", "sum"),
        sum_disc_price=("disc_price", "sum"),
        sum_charge=("charge", "sum"),
        avg_qty=("l_quantity", "mean"),
        avg_price=("l_extendedprice", "mean"),
        avg_disc=("l_discount", "mean"),
        count_order=("l_quantity", "size"),
    ).sort_values(["l_returnflag", "l_linestatus"])


def _europe_partsupp(t):
    region = t.region[t.region.r_name == "EUROPE"]
    nation = t.nation.merge(region, left_on="n_regionkey", right_on="r_regionkey")
    supplier = t.supplier.merge(nation, left_on="s_nationkey", right_on="n_nationkey")
    return t.partsupp.merge(supplier, left_on="ps_suppkey", right_on="s_suppkey")


def q2(t):
    part = t.part[(t.part.p_size == 15) & t.part.p_type.str.endswith("BRASS")]
    ps = _europe_partsupp(t)
    cheapest = ps.groupby("ps_partkey", as_index=False).agg(min_cost=("ps_supplycost", "min"))
    ps = ps.merge(part, left_on="ps_partkey", right_on="p_partkey")
    ps = ps.merge(cheapest, on="ps_partkey")
    ps = ps[ps.ps_supplycost == ps.min_cost]
    return ps[["s_acctbal", "s_name", "n_name", "p_partkey", "p_mfgr", "s_address", "s_phone",
               "s_comment"]].sort_values(["s_acctbal", "n_name", "s_name", "p_partkey"],
                                         ascending=[False, True, True, True]).head(100)


def q3(t):
    day = dt.date(1995, 3, 15)
    c = t.customer[t.customer.c_mktsegment == "BUILDING"]
    o = t.orders[t.orders.o_orderdate < day]
    li = t.lineitem[t.lineitem.l_shipdate > day]
    j = c.merge(o, left_on="c_custkey", right_on="o_custkey")
    j = j.merge(li, left_on="o_orderkey", right_on="l_orderkey")
    j = j.assign(revenue=revenue(j))
    out = j.groupby(["l_orderkey", "o_orderdate", "o_shippriority"], as_index=False).agg(
        revenue=("revenue", "sum"))
    out = out.sort_values(["revenue", "o_orderdate"], ascending=[False, True]).head(10)
    return out[["l_orderkey", "revenue", "o_orderdate", "o_shippriority"]]


def q4(t):
    start = dt.date(1993, 7, 1)
    o = t.orders
    o = o[(o.o_orderdate >= start) & (o.o_orderdate < start + pd.DateOffset(months=3))]
    late = t.lineitem[t.lineitem.l_commitdate < t.lineitem.l_receiptdate]
    o = o[o.o_orderkey.isin(late.l_orderkey)]
    return o.groupby("o_orderpriority", as_index=False).agg(
        order_count=("o_orderkey", "size")).sort_values("o_orderpriority")


def q5(t):
    start = dt.date(1994, 1, 1)
    region = t.region[t.region.r_name == "ASIA"]
    nation = t.nation.merge(region, left_on="n_regionkey", right_on="r_regionkey")
    o = t.orders
    o = o[(o.o_orderdate >= start) & (o.o_orderdate < start + pd.DateOffset(years=1))]
    j = t.customer.merge(o, left_on="c_custkey", right_on="o_custkey")
    j = j.merge(t.lineitem, left_on="o_orderkey", right_on="l_orderkey")
    j = j.merge(t.supplier, left_on=["l_suppkey", "c_nationkey"],
                right_on=["s_suppkey", "s_nationkey"])
    j = j.merge(nation, left_on="s_nationkey", right_on="n_nationkey")
    j = j.assign(revenue=revenue(j))
    return j.groupby("n_name", as_index=False).agg(revenue=("revenue", "sum")).sort_values(
        "revenue", ascending=False)


def q6(t):
    start = dt.date(1994, 1, 1)
    li = t.lineitem
    li = li[(li.l_shipdate >= start) & (li.l_shipdate < start + pd.DateOffset(years=1))
            & li.l_discount.between(0.05, 0.07) & (li.l_quantity < 24)]
    return (li.l_extendedprice * li.l_discount).sum()


def q7(t):
    pair = ["FRANCE", "GERMANY"]
    n1 = t.nation[t.nation.n_name.isin(pair)][["n_nationkey", "n_name"]].rename(
        columns={"n_nationkey": "supp_nationkey", "n_name": "supp_nation"})
    n2 = t.nation[t.nation.n_name.isin(pair)][["n_nationkey", "n_name"]].rename(
        columns={"n_nationkey": "cust_nationkey", "n_name": "cust_nation"})
    li = t.lineitem
    li = li[(li.l_shipdate >= dt.date(1995, 1, 1)) & (li.l_shipdate <= dt.date(1996, 12, 31))]
    j = li.merge(t.supplier, left_on="l_suppkey", right_on="s_suppkey")
    j = j.merge(n1, left_on="s_nationkey", right_on="supp_nationkey")
    j = j.merge(t.orders, left_on="l_orderkey", right_on="o_orderkey")
    j = j.merge(t.customer, left_on="o_custkey", right_on="c_custkey")
    j = j.merge(n2, left_on="c_nationkey", right_on="cust_nationkey")
    j = j[j.supp_nation != j.cust_nation]
    j = j.assign(l_year=j.l_shipdate.dt.year, volume=revenue(j))
    return j.groupby(["supp_nation", "cust_nation", "l_year"], as_index=False).agg(
        revenue=("volume", "sum")).sort_values(["supp_nation", "cust_nation", "l_year"])


def q8(t):
    region = t.region[t.region.r_name == "AMERICA"]
    n1 = t.nation.merge(region, left_on="n_regionkey", right_on="r_regionkey")[["n_nationkey"]]
    n2 = t.nation[["n_nationkey", "n_name"]].rename(
        columns={"n_nationkey": "supp_nationkey", "n_name": "nation"})
    part = t.part[t.part.p_type == "ECONOMY ANODIZED STEEL"]
    o = t.orders
    o = o[(o.o_orderdate >= dt.date(1995, 1, 1)) & (o.o_orderdate <= dt.date(1996, 12, 31))]
    j = t.lineitem.merge(part, left_on="l_partkey", right_on="p_partkey")
    j = j.merge(o, left_on="l_orderkey", right_on="o_orderkey")
    j = j.merge(t.customer, left_on="o_custkey", right_on="c_custkey")
    j = j.merge(n1, left_on="c_nationkey", right_on="n_nationkey")
    j = j.merge(t.supplier, left_on="l_suppkey", right_on="s_suppkey")
    j = j.merge(n2, left_on="s_nationkey", right_on="supp_nationkey")
    j = j.assign(o_year=j.o_orderdate.dt.year, volume=revenue(j))
    j = j.assign(brazil=j.volume.where(j.nation == "BRAZIL", 0))
    out = j.groupby("o_year", as_index=False).agg(brazil=("brazil", "sum"),
                                                   volume=("volume", "sum"))
    out = out.assign(mkt_share=out.brazil / out.volume)
    return out[["o_year", "mkt_share"]].sort_values("o_year")


def q9(t):
    part = t.part[t.part.p_name.str.contains("green")]
    j = t.lineitem.merge(part, left_on="l_partkey", right_on="p_partkey")
    j = j.merge(t.supplier, left_on="l_suppkey", right_on="s_suppkey")
    j = j.merge(t.partsupp, left_on=["l_suppkey", "l_partkey"],
                right_on=["ps_suppkey", "ps_partkey"])
    j = j.merge(t.orders, left_on="l_orderkey", right_on="o_orderkey")
    j = j.merge(t.nation, left_on="s_nationkey", right_on="n_nationkey")
    j = j.assign(nation=j.n_name, o_year=j.o_orderdate.dt.year,
                 amount=revenue(j) - j.ps_supplycost * j.l_quantity)
    return j.groupby(["nation", "o_year"], as_index=False).agg(
        sum_profit=("amount", "sum")).sort_values(["nation", "o_year"], ascending=[True, False])


def q10(t):
    start = dt.date(1993, 10, 1)
    o = t.orders
    o = o[(o.o_orderdate >= start) & (o.o_orderdate < start + pd.DateOffset(months=3))]
    li = t.lineitem[t.lineitem.l_returnflag == "R"]
    j = t.customer.merge(o, left_on="c_custkey", right_on="o_custkey")
    j = j.merge(li, left_on="o_orderkey", right_on="l_orderkey")
    j = j.merge(t.nation, left_on="c_nationkey", right_on="n_nationkey")
    j = j.assign(revenue=revenue(j))
    keys = ["c_custkey", "c_name", "c_acctbal", "c_phone", "n_name", "c_address", "c_comment"]
    out = j.groupby(keys, as_index=False).agg(revenue=("revenue", "sum"))
    out = out.sort_values("revenue", ascending=False).head(20)
    return out[["c_custkey", "c_name", "revenue", "c_acctbal", "n_name", "c_address", "c_phone",
                "c_comment"]]


def q11(t):
    nation = t.nation[t.nation.n_name == "GERMANY"]
    ps = t.partsupp.merge(t.supplier, left_on="ps_suppkey", right_on="s_suppkey")
    ps = ps.merge(nation, left_on="s_nationkey", right_on="n_nationkey")
    ps = ps.assign(value=ps.ps_supplycost * ps.ps_availqty)
    threshold = ps.value.sum().compute() * Decimal("0.0001")
    out = ps.groupby("ps_partkey", as_index=False).agg(value=("value", "sum"))
    return out[out.value > threshold].sort_values("value", ascending=False)


def q12(t):
    li = t.lineitem
    li = li[li.l_shipmode.isin(["MAIL", "SHIP"]) & (li.l_commitdate < li.l_receiptdate)
            & (li.l_shipdate < li.l_commitdate) & (li.l_receiptdate >= dt.date(1994, 1, 1))
            & (li.l_receiptdate < dt.date(1995, 1, 1))]
    j = t.orders.merge(li, left_on="o_orderkey", right_on="l_orderkey")
    high = j.o_orderpriority.isin(["1-URGENT", "2-HIGH"])
    j = j.assign(high_line_count=high.astype("int64"), low_line_count=(~high).astype("int64"))
    return j.groupby("l_shipmode", as_index=False).agg(
        high_line_count=("high_line_count", "sum"),
        low_line_count=("low_line_count", "sum")).sort_values("l_shipmode")


def q13(t):
    o = t.orders[~t.orders.o_comment.str.contains("special.*requests")]
    j = t.customer.merge(o, left_on="c_custkey", right_on="o_custkey", how="left")
    counts = j.groupby("c_custkey", as_index=False).agg(c_count=("o_orderkey", "count"))
    return counts.groupby("c_count", as_index=False).agg(
        custdist=("c_custkey", "size")).sort_values(["custdist", "c_count"],
                                                    ascending=[False, False])


def q14(t):
    start = dt.date(1995, 9, 1)
    li = t.lineitem
    li = li[(li.l_shipdate >= start) & (li.l_shipdate < start + pd.DateOffset(months=1))]
    j = li.merge(t.part, left_on="l_partkey", right_on="p_partkey")
    j = j.assign(volume=revenue(j))
    j = j.assign(promo=j.volume.where(j.p_type.str.startswith("PROMO"), 0))
    promo, volume = j.promo.sum().compute(), j.volume.sum().compute()
    return float(100 * promo / volume)


def q15(t):
    start = dt.date(1996, 1, 1)
    li = t.lineitem
    li = li[(li.l_shipdate >= start) & (li.l_shipdate < start + pd.DateOffset(months=3))]
    li = li.assign(revenue=revenue(li))
    rev = li.groupby("l_suppkey", as_index=False).agg(total_revenue=("revenue", "sum"))
    top = rev.total_revenue.max().compute()
    rev = rev[rev.total_revenue == top]
    j = t.supplier.merge(rev, left_on="s_suppkey", right_on="l_suppkey")
    return j[["s_suppkey", "s_name", "s_address", "s_phone", "total_revenue"]].sort_values(
        "s_suppkey")


def q16(t):
    part = t.part
    part = part[(part.p_brand != "Brand#45") & ~part.p_type.str.startswith("MEDIUM POLISHED")
                & part.p_size.isin([49, 14, 23, 45, 19, 3, 36, 9])]
    complaints = t.supplier[t.supplier.s_comment.str.contains("Customer.*Complaints")]
    ps = t.partsupp[~t.partsupp.ps_suppkey.isin(complaints.s_suppkey)]
    j = ps.merge(part, left_on="ps_partkey", right_on="p_partkey")
    return j.groupby(["p_brand", "p_type", "p_size"], as_index=False).agg(
        supplier_cnt=("ps_suppkey", "nunique")).sort_values(
        ["supplier_cnt", "p_brand", "p_type", "p_size"], ascending=[False, True, True, True])


def q17(t):
    part = t.part[(t.part.p_brand == "Brand#23") & (t.part.p_container == "MED BOX")]
    j = t.lineitem.merge(part, left_on="l_partkey", right_on="p_partkey")
    avg = j.groupby("l_partkey", as_index=False).agg(avg_qty=("l_quantity", "mean"))
    j = j.merge(avg, on="l_partkey")
    j = j[j.l_quantity < 0.2 * j.avg_qty]
    return float(j.l_extendedprice.sum().compute()) / 7.0


def q18(t):
    per_order = t.lineitem.groupby("l_orderkey", as_index=False).agg(
        sum_qty=("l_quantity", "sum"))
    big = per_order[per_order.sum_qty > 300]
    o = t.orders[t.orders.o_orderkey.isin(big.l_orderkey)]
    j = t.customer.merge(o, left_on="c_custkey", right_on="o_custkey")
    j = j.merge(t.lineitem, left_on="o_orderkey", right_on="l_orderkey")
    out = j.groupby(["c_name", "c_custkey", "o_orderkey", "o_orderdate", "o_totalprice"],
                    as_index=False).agg(sum_qty=("l_quantity", "sum"))
    return out.sort_values(["o_totalprice", "o_orderdate"], ascending=[False, True]).head(100)


def q19(t):
    j = t.lineitem.merge(t.part, left_on="l_partkey", right_on="p_partkey")
    common = j.l_shipmode.isin(["AIR", "AIR REG"]) & (j.l_shipinstruct == "DELIVER IN PERSON")

    def kind(brand, containers, low, size):
        return ((j.p_brand == brand) & j.p_container.isin(containers)
                & j.l_quantity.between(low, low + 10) & j.p_size.between(1, size))

    j = j[common & (kind("Brand#12", ["SM CASE", "SM BOX", "SM PACK", "SM PKG"], 1, 5)
                    | kind("Brand#23", ["MED BAG", "MED BOX", "MED PKG", "MED PACK"], 10, 10)
                    | kind("Brand#34", ["LG CASE", "LG BOX", "LG PACK", "LG PKG"], 20, 15))]
    return revenue(j).sum()


def q20(t):
    start = dt.date(1994, 1, 1)
    li = t.lineitem
    li = li[(li.l_shipdate >= start) & (li.l_shipdate < start + pd.DateOffset(years=1))]
    shipped = li.groupby(["l_partkey", "l_suppkey"], as_index=False).agg(
        sum_qty=("l_quantity", "sum"))
    forest = t.part[t.part.p_name.str.startswith("forest")]
    ps = t.partsupp[t.partsupp.ps_partkey.isin(forest.p_partkey)]
    ps = ps.merge(shipped, left_on=["ps_partkey", "ps_suppkey"],
                  right_on=["l_partkey", "l_suppkey"])
    ps = ps[ps.ps_availqty > 0.5 * ps.sum_qty]
    nation = t.nation[t.nation.n_name == "CANADA"]
    s = t.supplier[t.supplier.s_suppkey.isin(ps.ps_suppkey)]
    s = s.merge(nation, left_on="s_nationkey", right_on="n_nationkey")
    return s[["s_name", "s_address"]].sort_values("s_name")


def q21(t):
    li = t.lineitem
    # Orders with more than one supplier (EXISTS another supplier's line), and orders where
    # exactly one supplier was late (NOT EXISTS another late supplier).
    suppliers = li.groupby("l_orderkey", as_index=False).agg(n_supp=("l_suppkey", "nunique"))
    late = li[li.l_receiptdate > li.l_commitdate]
    late_suppliers = late.groupby("l_orderkey", as_index=False).agg(
        n_late=("l_suppkey", "nunique"))
    nation = t.nation[t.nation.n_name == "SAUDI ARABIA"]
    s = t.supplier.merge(nation, left_on="s_nationkey", right_on="n_nationkey")
    o = t.orders[t.orders.o_orderstatus == "F"]
    j = late.merge(s, left_on="l_suppkey", right_on="s_suppkey")
    j = j.merge(o, left_on="l_orderkey", right_on="o_orderkey")
    j = j.merge(suppliers, on="l_orderkey").merge(late_suppliers, on="l_orderkey")
    j = j[(j.n_supp > 1) & (j.n_late == 1)]
    return j.groupby("s_name", as_index=False).agg(numwait=("l_orderkey", "size")).sort_values(
        ["numwait", "s_name"], ascending=[False, True]).head(100)


def q22(t):
    codes = ["13", "31", "23", "29", "30", "18", "17"]
    c = t.customer.assign(cntrycode=t.customer.c_phone.str[:2])
    c = c[c.cntrycode.isin(codes)]
    avg = c[c.c_acctbal > 0.00].c_acctbal.mean().compute()
    c = c[(c.c_acctbal > avg) & ~c.c_custkey.isin(t.orders.o_custkey)]
    return c.groupby("cntrycode", as_index=False).agg(
        numcust=("c_acctbal", "size"), totacctbal=("c_acctbal", "sum")).sort_values("cntrycode")


QUERIES: Dict[int, Callable[[Tables], Any]] = {
    i: globals()[f"q{i}"] for i in range(1, 23)
}

#: The column name of the queries whose answer is one number (as in the SQL texts).
SCALAR_NAMES = {6: "revenue", 14: "promo_revenue", 17: "avg_yearly", 19: "revenue"}


def run(n: int, t: Tables, session=None) -> pd.DataFrame:
    """Query ``n`` computed into a :class:`pandas.DataFrame` (a one-row frame for the
    queries that answer one number)."""
    out = QUERIES[n](t)
    if isinstance(out, ts.DataFrame):
        return out.compute(session)
    value = out.compute(session) if hasattr(out, "compute") else out
    return pd.DataFrame({SCALAR_NAMES[n]: [value]})
