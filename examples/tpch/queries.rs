//! The 22 TPC-H queries in Tessera's Rust dataframe API, as a user writes them (the
//! specification's validation parameters, the SQL texts of `shared/peers/tpch_queries.py`).
//!
//! Every query is lazy and returns one frame: a scalar subquery (Q11's threshold, Q15's
//! maximum, Q17's per-part average, Q22's average) is a one-row aggregate joined on, and
//! a query whose answer is one number is a one-row frame. Semi and anti joins stand for
//! `EXISTS`, `IN` and `NOT EXISTS`.

use super::Tables;
use tessera::dataframe::{col, lit, when, Agg, DataFrame, Expr, How, Literal, StrFunction};

/// A `DATE` constant.
pub fn date(y: i32, m: u32, d: u32) -> Expr {
    lit(Literal::Date(days_from_civil(y, m, d)))
}

/// A calendar offset of `months` months and `days` days (SQL's `interval`).
fn interval(months: i32, days: i32) -> Expr {
    lit(Literal::Interval { months, days })
}

/// Days from 1970-01-01 to `y-m-d` in the proleptic Gregorian calendar (H. Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i32, m: u32, d: u32) -> i32 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i32 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i32 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// An inner join on `left_on = right_on`.
fn join(left: &DataFrame, right: &DataFrame, left_on: &[&str], right_on: &[&str]) -> DataFrame {
    left.merge_on(right, left_on, right_on, How::Inner, ("_x", "_y"))
}

/// `l_extendedprice * (1 - l_discount)`.
fn revenue() -> Expr {
    col("l_extendedprice") * (lit(1) - col("l_discount"))
}

/// Rows with `lo <= column < hi`.
fn within(df: &DataFrame, column: &str, lo: Expr, hi: Expr) -> DataFrame {
    df.filter(col(column).ge(lo).and_(col(column).lt(hi)))
}

/// `df` with the one row of `scalar` beside every row (a scalar subquery's value).
fn beside(df: &DataFrame, scalar: &DataFrame) -> DataFrame {
    let key = "\u{1f}one";
    join(
        &df.with_column(key, lit(1)),
        &scalar.with_column(key, lit(1)),
        &[key],
        &[key],
    )
    .drop(&[key])
}

/// Query `n` (1 to 22) over `t`.
pub fn query(n: usize, t: &Tables) -> Option<DataFrame> {
    Some(match n {
        1 => q1(t),
        2 => q2(t),
        3 => q3(t),
        4 => q4(t),
        5 => q5(t),
        6 => q6(t),
        7 => q7(t),
        8 => q8(t),
        9 => q9(t),
        10 => q10(t),
        11 => q11(t),
        12 => q12(t),
        13 => q13(t),
        14 => q14(t),
        15 => q15(t),
        16 => q16(t),
        17 => q17(t),
        18 => q18(t),
        19 => q19(t),
        20 => q20(t),
        21 => q21(t),
        22 => q22(t),
        _ => return None,
    })
}

fn q1(t: &Tables) -> DataFrame {
    t.lineitem
        .filter(col("l_shipdate").le(date(1998, 12, 1) - interval(0, 90)))
        .with_column("disc_price", revenue())
        .with_column("charge", col("disc_price") * (lit(1) + col("l_tax")))
        .groupby(&["l_returnflag", "l_linestatus"])
        .agg_as(&[
            ("sum_qty", "l_quantity", Agg::Sum),
            ("sum_base_price", "l_extendedprice", Agg::Sum),
            ("sum_disc_price", "disc_price", Agg::Sum),
            ("sum_charge", "charge", Agg::Sum),
            ("avg_qty", "l_quantity", Agg::Mean),
            ("avg_price", "l_extendedprice", Agg::Mean),
            ("avg_disc", "l_discount", Agg::Mean),
            ("count_order", "l_quantity", Agg::Size),
        ])
}

fn europe_partsupp(t: &Tables) -> DataFrame {
    let region = t.region.filter(col("r_name").eq("EUROPE"));
    let nation = join(&t.nation, &region, &["n_regionkey"], &["r_regionkey"]);
    let supplier = join(&t.supplier, &nation, &["s_nationkey"], &["n_nationkey"]);
    join(&t.partsupp, &supplier, &["ps_suppkey"], &["s_suppkey"])
}

fn q2(t: &Tables) -> DataFrame {
    let part = t.part.filter(
        col("p_size")
            .eq(15)
            .and_(col("p_type").str(StrFunction::EndsWith("BRASS".into()))),
    );
    let ps = europe_partsupp(t);
    let cheapest =
        ps.groupby(&["ps_partkey"])
            .sort(false)
            .agg_as(&[("min_cost", "ps_supplycost", Agg::Min)]);
    let ps = join(&ps, &part, &["ps_partkey"], &["p_partkey"]);
    join(&ps, &cheapest, &["ps_partkey"], &["ps_partkey"])
        .filter(col("ps_supplycost").eq(col("min_cost")))
        .select(&[
            "s_acctbal",
            "s_name",
            "n_name",
            "p_partkey",
            "p_mfgr",
            "s_address",
            "s_phone",
            "s_comment",
        ])
        .sort_values(
            &["s_acctbal", "n_name", "s_name", "p_partkey"],
            [false, true, true, true],
        )
        .head(100)
}

fn q3(t: &Tables) -> DataFrame {
    let day = || date(1995, 3, 15);
    let c = t.customer.filter(col("c_mktsegment").eq("BUILDING"));
    let o = t.orders.filter(col("o_orderdate").lt(day()));
    let l = t.lineitem.filter(col("l_shipdate").gt(day()));
    let j = join(
        &join(&c, &o, &["c_custkey"], &["o_custkey"]),
        &l,
        &["o_orderkey"],
        &["l_orderkey"],
    );
    j.with_column("revenue", revenue())
        .groupby(&["l_orderkey", "o_orderdate", "o_shippriority"])
        .sort(false)
        .agg_as(&[("revenue", "revenue", Agg::Sum)])
        .sort_values(&["revenue", "o_orderdate"], [false, true])
        .head(10)
        .select(&["l_orderkey", "revenue", "o_orderdate", "o_shippriority"])
}

fn q4(t: &Tables) -> DataFrame {
    let start = || date(1993, 7, 1);
    let o = within(&t.orders, "o_orderdate", start(), start() + interval(3, 0));
    let late = t
        .lineitem
        .filter(col("l_commitdate").lt(col("l_receiptdate")));
    o.semi_join(&late, &["o_orderkey"], &["l_orderkey"])
        .groupby(&["o_orderpriority"])
        .agg_as(&[("order_count", "o_orderkey", Agg::Size)])
}

fn q5(t: &Tables) -> DataFrame {
    let start = || date(1994, 1, 1);
    let region = t.region.filter(col("r_name").eq("ASIA"));
    let nation = join(&t.nation, &region, &["n_regionkey"], &["r_regionkey"]);
    let o = within(&t.orders, "o_orderdate", start(), start() + interval(12, 0));
    let j = join(&t.customer, &o, &["c_custkey"], &["o_custkey"]);
    let j = join(&j, &t.lineitem, &["o_orderkey"], &["l_orderkey"]);
    let j = join(
        &j,
        &t.supplier,
        &["l_suppkey", "c_nationkey"],
        &["s_suppkey", "s_nationkey"],
    );
    join(&j, &nation, &["s_nationkey"], &["n_nationkey"])
        .with_column("revenue", revenue())
        .groupby(&["n_name"])
        .sort(false)
        .agg_as(&[("revenue", "revenue", Agg::Sum)])
        .sort_values(&["revenue"], false)
}

fn q6(t: &Tables) -> DataFrame {
    let start = || date(1994, 1, 1);
    within(
        &t.lineitem,
        "l_shipdate",
        start(),
        start() + interval(12, 0),
    )
    .filter(
        col("l_discount")
            .between(0.05, 0.07)
            .and_(col("l_quantity").lt(24)),
    )
    .with_column("revenue", col("l_extendedprice") * col("l_discount"))
    .groupby(&[])
    .agg_as(&[("revenue", "revenue", Agg::Sum)])
}

fn q7(t: &Tables) -> DataFrame {
    let pair = [Literal::from("FRANCE"), Literal::from("GERMANY")];
    let nations = t.nation.filter(col("n_name").isin(&pair));
    let n1 = nations
        .select(&["n_nationkey", "n_name"])
        .rename(&[("n_nationkey", "supp_nationkey"), ("n_name", "supp_nation")]);
    let n2 = nations
        .select(&["n_nationkey", "n_name"])
        .rename(&[("n_nationkey", "cust_nationkey"), ("n_name", "cust_nation")]);
    let l = t
        .lineitem
        .filter(col("l_shipdate").between(date(1995, 1, 1), date(1996, 12, 31)));
    let j = join(&l, &t.supplier, &["l_suppkey"], &["s_suppkey"]);
    let j = join(&j, &n1, &["s_nationkey"], &["supp_nationkey"]);
    let j = join(&j, &t.orders, &["l_orderkey"], &["o_orderkey"]);
    let j = join(&j, &t.customer, &["o_custkey"], &["c_custkey"]);
    join(&j, &n2, &["c_nationkey"], &["cust_nationkey"])
        .filter(col("supp_nation").ne(col("cust_nation")))
        .with_column("l_year", col("l_shipdate").dt_year())
        .with_column("volume", revenue())
        .groupby(&["supp_nation", "cust_nation", "l_year"])
        .agg_as(&[("revenue", "volume", Agg::Sum)])
}

fn q8(t: &Tables) -> DataFrame {
    let region = t.region.filter(col("r_name").eq("AMERICA"));
    let n1 = join(&t.nation, &region, &["n_regionkey"], &["r_regionkey"]).select(&["n_nationkey"]);
    let n2 = t
        .nation
        .select(&["n_nationkey", "n_name"])
        .rename(&[("n_nationkey", "supp_nationkey"), ("n_name", "nation")]);
    let part = t.part.filter(col("p_type").eq("ECONOMY ANODIZED STEEL"));
    let o = t
        .orders
        .filter(col("o_orderdate").between(date(1995, 1, 1), date(1996, 12, 31)));
    let j = join(&t.lineitem, &part, &["l_partkey"], &["p_partkey"]);
    let j = join(&j, &o, &["l_orderkey"], &["o_orderkey"]);
    let j = join(&j, &t.customer, &["o_custkey"], &["c_custkey"]);
    let j = join(&j, &n1, &["c_nationkey"], &["n_nationkey"]);
    let j = join(&j, &t.supplier, &["l_suppkey"], &["s_suppkey"]);
    join(&j, &n2, &["s_nationkey"], &["supp_nationkey"])
        .with_column("o_year", col("o_orderdate").dt_year())
        .with_column("volume", revenue())
        .with_column(
            "brazil",
            when(col("nation").eq("BRAZIL"))
                .then(col("volume"))
                .otherwise(lit(0)),
        )
        .groupby(&["o_year"])
        .agg_as(&[
            ("brazil", "brazil", Agg::Sum),
            ("volume", "volume", Agg::Sum),
        ])
        .with_column("mkt_share", col("brazil") / col("volume"))
        .select(&["o_year", "mkt_share"])
}

fn q9(t: &Tables) -> DataFrame {
    let part = t.part.filter(col("p_name").str_contains("green"));
    let j = join(&t.lineitem, &part, &["l_partkey"], &["p_partkey"]);
    let j = join(&j, &t.supplier, &["l_suppkey"], &["s_suppkey"]);
    let j = join(
        &j,
        &t.partsupp,
        &["l_suppkey", "l_partkey"],
        &["ps_suppkey", "ps_partkey"],
    );
    let j = join(&j, &t.orders, &["l_orderkey"], &["o_orderkey"]);
    join(&j, &t.nation, &["s_nationkey"], &["n_nationkey"])
        .with_column("nation", col("n_name"))
        .with_column("o_year", col("o_orderdate").dt_year())
        .with_column(
            "amount",
            revenue() - col("ps_supplycost") * col("l_quantity"),
        )
        .groupby(&["nation", "o_year"])
        .sort(false)
        .agg_as(&[("sum_profit", "amount", Agg::Sum)])
        .sort_values(&["nation", "o_year"], [true, false])
}

fn q10(t: &Tables) -> DataFrame {
    let start = || date(1993, 10, 1);
    let o = within(&t.orders, "o_orderdate", start(), start() + interval(3, 0));
    let l = t.lineitem.filter(col("l_returnflag").eq("R"));
    let j = join(&t.customer, &o, &["c_custkey"], &["o_custkey"]);
    let j = join(&j, &l, &["o_orderkey"], &["l_orderkey"]);
    join(&j, &t.nation, &["c_nationkey"], &["n_nationkey"])
        .with_column("revenue", revenue())
        .groupby(&[
            "c_custkey",
            "c_name",
            "c_acctbal",
            "c_phone",
            "n_name",
            "c_address",
            "c_comment",
        ])
        .sort(false)
        .agg_as(&[("revenue", "revenue", Agg::Sum)])
        .sort_values(&["revenue"], false)
        .head(20)
        .select(&[
            "c_custkey",
            "c_name",
            "revenue",
            "c_acctbal",
            "n_name",
            "c_address",
            "c_phone",
            "c_comment",
        ])
}

fn q11(t: &Tables) -> DataFrame {
    let nation = t.nation.filter(col("n_name").eq("GERMANY"));
    let ps = join(&t.partsupp, &t.supplier, &["ps_suppkey"], &["s_suppkey"]);
    let ps = join(&ps, &nation, &["s_nationkey"], &["n_nationkey"])
        .with_column("value", col("ps_supplycost") * col("ps_availqty"));
    let total = ps.groupby(&[]).agg_as(&[("total", "value", Agg::Sum)]);
    let per_part = ps
        .groupby(&["ps_partkey"])
        .sort(false)
        .agg_as(&[("value", "value", Agg::Sum)]);
    beside(&per_part, &total)
        .filter(col("value").gt(col("total") * lit(0.0001)))
        .select(&["ps_partkey", "value"])
        .sort_values(&["value"], false)
}

fn q12(t: &Tables) -> DataFrame {
    let modes = [Literal::from("MAIL"), Literal::from("SHIP")];
    let l = within(
        &t.lineitem,
        "l_receiptdate",
        date(1994, 1, 1),
        date(1994, 1, 1) + interval(12, 0),
    )
    .filter(
        col("l_shipmode")
            .isin(&modes)
            .and_(col("l_commitdate").lt(col("l_receiptdate")))
            .and_(col("l_shipdate").lt(col("l_commitdate"))),
    );
    let urgent = [Literal::from("1-URGENT"), Literal::from("2-HIGH")];
    let high = || col("o_orderpriority").isin(&urgent);
    join(&t.orders, &l, &["o_orderkey"], &["l_orderkey"])
        .with_column("high", when(high()).then(lit(1)).otherwise(lit(0)))
        .with_column("low", when(high()).then(lit(0)).otherwise(lit(1)))
        .groupby(&["l_shipmode"])
        .agg_as(&[
            ("high_line_count", "high", Agg::Sum),
            ("low_line_count", "low", Agg::Sum),
        ])
}

fn q13(t: &Tables) -> DataFrame {
    let o = t
        .orders
        .filter(col("o_comment").like("%special%requests%").not());
    t.customer
        .merge_on(&o, &["c_custkey"], &["o_custkey"], How::Left, ("_x", "_y"))
        .groupby(&["c_custkey"])
        .sort(false)
        .agg_as(&[("c_count", "o_orderkey", Agg::Count)])
        .groupby(&["c_count"])
        .sort(false)
        .agg_as(&[("custdist", "c_custkey", Agg::Size)])
        .sort_values(&["custdist", "c_count"], false)
}

fn q14(t: &Tables) -> DataFrame {
    let start = || date(1995, 9, 1);
    let l = within(&t.lineitem, "l_shipdate", start(), start() + interval(1, 0));
    join(&l, &t.part, &["l_partkey"], &["p_partkey"])
        .with_column("volume", revenue())
        .with_column(
            "promo",
            when(col("p_type").str(StrFunction::StartsWith("PROMO".into())))
                .then(col("volume"))
                .otherwise(lit(0)),
        )
        .groupby(&[])
        .agg_as(&[("promo", "promo", Agg::Sum), ("volume", "volume", Agg::Sum)])
        .select_exprs(vec![
            (lit(100.0) * col("promo") / col("volume")).alias("promo_revenue")
        ])
}

fn q15(t: &Tables) -> DataFrame {
    let start = || date(1996, 1, 1);
    let revenue = within(&t.lineitem, "l_shipdate", start(), start() + interval(3, 0))
        .with_column("revenue", revenue())
        .groupby(&["l_suppkey"])
        .sort(false)
        .agg_as(&[("total_revenue", "revenue", Agg::Sum)]);
    let top = revenue
        .groupby(&[])
        .agg_as(&[("top", "total_revenue", Agg::Max)]);
    let best = beside(&revenue, &top).filter(col("total_revenue").eq(col("top")));
    join(&t.supplier, &best, &["s_suppkey"], &["l_suppkey"])
        .select(&[
            "s_suppkey",
            "s_name",
            "s_address",
            "s_phone",
            "total_revenue",
        ])
        .sort_values(&["s_suppkey"], true)
}

fn q16(t: &Tables) -> DataFrame {
    let sizes: Vec<Literal> = [49, 14, 23, 45, 19, 3, 36, 9].map(Literal::from).to_vec();
    let part = t.part.filter(
        col("p_brand")
            .ne("Brand#45")
            .and_(
                col("p_type")
                    .str(StrFunction::StartsWith("MEDIUM POLISHED".into()))
                    .not(),
            )
            .and_(col("p_size").isin(&sizes)),
    );
    let complaints = t
        .supplier
        .filter(col("s_comment").like("%Customer%Complaints%"));
    let ps = t
        .partsupp
        .anti_join(&complaints, &["ps_suppkey"], &["s_suppkey"]);
    join(&ps, &part, &["ps_partkey"], &["p_partkey"])
        .groupby(&["p_brand", "p_type", "p_size"])
        .sort(false)
        .agg_as(&[("supplier_cnt", "ps_suppkey", Agg::NUnique)])
        .sort_values(
            &["supplier_cnt", "p_brand", "p_type", "p_size"],
            [false, true, true, true],
        )
}

fn q17(t: &Tables) -> DataFrame {
    let part = t.part.filter(
        col("p_brand")
            .eq("Brand#23")
            .and_(col("p_container").eq("MED BOX")),
    );
    let j = join(&t.lineitem, &part, &["l_partkey"], &["p_partkey"]);
    let avg = j
        .groupby(&["l_partkey"])
        .sort(false)
        .agg_as(&[("avg_qty", "l_quantity", Agg::Mean)]);
    join(&j, &avg, &["l_partkey"], &["l_partkey"])
        .filter(col("l_quantity").lt(lit(0.2) * col("avg_qty")))
        .groupby(&[])
        .agg_as(&[("total", "l_extendedprice", Agg::Sum)])
        .select_exprs(vec![(col("total") / lit(7.0)).alias("avg_yearly")])
}

fn q18(t: &Tables) -> DataFrame {
    let big = t
        .lineitem
        .groupby(&["l_orderkey"])
        .sort(false)
        .agg_as(&[("sum_qty", "l_quantity", Agg::Sum)])
        .filter(col("sum_qty").gt(300));
    let o = t.orders.semi_join(&big, &["o_orderkey"], &["l_orderkey"]);
    let j = join(&t.customer, &o, &["c_custkey"], &["o_custkey"]);
    join(&j, &t.lineitem, &["o_orderkey"], &["l_orderkey"])
        .groupby(&[
            "c_name",
            "c_custkey",
            "o_orderkey",
            "o_orderdate",
            "o_totalprice",
        ])
        .sort(false)
        .agg_as(&[("sum_qty", "l_quantity", Agg::Sum)])
        .sort_values(&["o_totalprice", "o_orderdate"], [false, true])
        .head(100)
}

fn q19(t: &Tables) -> DataFrame {
    let j = join(&t.lineitem, &t.part, &["l_partkey"], &["p_partkey"]);
    let modes = [Literal::from("AIR"), Literal::from("AIR REG")];
    let kind = |brand: &str, containers: [&str; 4], low: i64, size: i64| {
        let containers: Vec<Literal> = containers.map(Literal::from).to_vec();
        col("p_brand")
            .eq(brand)
            .and_(col("p_container").isin(&containers))
            .and_(col("l_quantity").between(low, low + 10))
            .and_(col("p_size").between(1, size))
    };
    j.filter(
        col("l_shipmode")
            .isin(&modes)
            .and_(col("l_shipinstruct").eq("DELIVER IN PERSON"))
            .and_(
                kind("Brand#12", ["SM CASE", "SM BOX", "SM PACK", "SM PKG"], 1, 5)
                    .or_(kind(
                        "Brand#23",
                        ["MED BAG", "MED BOX", "MED PKG", "MED PACK"],
                        10,
                        10,
                    ))
                    .or_(kind(
                        "Brand#34",
                        ["LG CASE", "LG BOX", "LG PACK", "LG PKG"],
                        20,
                        15,
                    )),
            ),
    )
    .with_column("revenue", revenue())
    .groupby(&[])
    .agg_as(&[("revenue", "revenue", Agg::Sum)])
}

fn q20(t: &Tables) -> DataFrame {
    let start = || date(1994, 1, 1);
    let shipped = within(
        &t.lineitem,
        "l_shipdate",
        start(),
        start() + interval(12, 0),
    )
    .groupby(&["l_partkey", "l_suppkey"])
    .sort(false)
    .agg_as(&[("sum_qty", "l_quantity", Agg::Sum)]);
    let forest = t
        .part
        .filter(col("p_name").str(StrFunction::StartsWith("forest".into())));
    let ps = t
        .partsupp
        .semi_join(&forest, &["ps_partkey"], &["p_partkey"]);
    let ps = join(
        &ps,
        &shipped,
        &["ps_partkey", "ps_suppkey"],
        &["l_partkey", "l_suppkey"],
    )
    .filter(col("ps_availqty").gt(lit(0.5) * col("sum_qty")));
    let nation = t.nation.filter(col("n_name").eq("CANADA"));
    let s = t.supplier.semi_join(&ps, &["s_suppkey"], &["ps_suppkey"]);
    join(&s, &nation, &["s_nationkey"], &["n_nationkey"])
        .select(&["s_name", "s_address"])
        .sort_values(&["s_name"], true)
}

fn q21(t: &Tables) -> DataFrame {
    // EXISTS another supplier's line of the order: the order has two or more suppliers;
    // NOT EXISTS another late supplier: exactly one supplier of the order was late.
    let suppliers = t.lineitem.groupby(&["l_orderkey"]).sort(false).agg_as(&[(
        "n_supp",
        "l_suppkey",
        Agg::NUnique,
    )]);
    let late = t
        .lineitem
        .filter(col("l_receiptdate").gt(col("l_commitdate")));
    let late_suppliers =
        late.groupby(&["l_orderkey"])
            .sort(false)
            .agg_as(&[("n_late", "l_suppkey", Agg::NUnique)]);
    let nation = t.nation.filter(col("n_name").eq("SAUDI ARABIA"));
    let s = join(&t.supplier, &nation, &["s_nationkey"], &["n_nationkey"]);
    let o = t.orders.filter(col("o_orderstatus").eq("F"));
    let j = join(&late, &s, &["l_suppkey"], &["s_suppkey"]);
    let j = join(&j, &o, &["l_orderkey"], &["o_orderkey"]);
    let j = join(&j, &suppliers, &["l_orderkey"], &["l_orderkey"]);
    join(&j, &late_suppliers, &["l_orderkey"], &["l_orderkey"])
        .filter(col("n_supp").gt(1).and_(col("n_late").eq(1)))
        .groupby(&["s_name"])
        .sort(false)
        .agg_as(&[("numwait", "l_orderkey", Agg::Size)])
        .sort_values(&["numwait", "s_name"], [false, true])
        .head(100)
}

fn q22(t: &Tables) -> DataFrame {
    let codes: Vec<Literal> = ["13", "31", "23", "29", "30", "18", "17"]
        .map(Literal::from)
        .to_vec();
    let c = t
        .customer
        .with_column(
            "cntrycode",
            col("c_phone").str(StrFunction::Slice {
                start: 0,
                stop: Some(2),
            }),
        )
        .filter(col("cntrycode").isin(&codes));
    let avg = c.filter(col("c_acctbal").gt(0.0)).groupby(&[]).agg_as(&[(
        "avg_bal",
        "c_acctbal",
        Agg::Mean,
    )]);
    beside(&c, &avg)
        .filter(col("c_acctbal").gt(col("avg_bal")))
        .anti_join(&t.orders, &["c_custkey"], &["o_custkey"])
        .groupby(&["cntrycode"])
        .agg_as(&[
            ("numcust", "c_acctbal", Agg::Size),
            ("totacctbal", "c_acctbal", Agg::Sum),
        ])
}

#[cfg(test)]
mod tests {
    use super::days_from_civil;

    #[test]
    fn days_from_civil_counts_from_the_epoch_across_leap_years() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(1998, 12, 1), 10_561);
        assert_eq!(
            days_from_civil(1996, 2, 29) + 1,
            days_from_civil(1996, 3, 1)
        );
    }
}
