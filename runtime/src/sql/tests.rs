//! SQL translation tests: small in-memory tables, answers computed by hand or by plain
//! loops over the same rows.

use super::{SqlContext, SqlError};
use crate::dataframe::testing::session;
use crate::dataframe::{from_arrow, DataFrame};
use crate::{Error, Session};
use arrow::array::{Array, AsArray, Date32Array, Int64Array, RecordBatch, StringArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float64Type};
use std::sync::Arc;

/// `orders`: 12 rows, `o_id` 0..12, `cust = o_id % 4`, `amount = 10 o_id`, a `day` in
/// 1995 (`o_id` months after Jan 15), a `note` naming its parity.
fn orders_batch() -> RecordBatch {
    let ids: Vec<i64> = (0..12).collect();
    // 1995-01-15 is day 9145; months approximated as 31 days (only order matters).
    let days: Vec<i32> = ids.iter().map(|&i| 9145 + 31 * i as i32).collect();
    RecordBatch::try_from_iter([
        ("o_id", Arc::new(Int64Array::from(ids.clone())) as _),
        (
            "cust",
            Arc::new(Int64Array::from_iter_values(ids.iter().map(|i| i % 4))) as _,
        ),
        (
            "amount",
            Arc::new(Int64Array::from_iter_values(ids.iter().map(|i| 10 * i))) as _,
        ),
        ("day", Arc::new(Date32Array::from(days)) as _),
        (
            "note",
            Arc::new(StringArray::from_iter_values(ids.iter().map(|i| {
                format!("{} order {i}", if i % 2 == 0 { "even" } else { "odd" })
            }))) as _,
        ),
    ])
    .unwrap()
}

/// `cust`: `c_id` 0..5 (4 has no orders), `region = c_id % 2`, `name` `c0`…
fn cust_batch() -> RecordBatch {
    RecordBatch::try_from_iter([
        ("c_id", Arc::new(Int64Array::from_iter_values(0..5)) as _),
        (
            "region",
            Arc::new(Int64Array::from_iter_values((0..5).map(|c| c % 2))) as _,
        ),
        (
            "name",
            Arc::new(StringArray::from_iter_values(
                (0..5).map(|c| format!("c{c}")),
            )) as _,
        ),
    ])
    .unwrap()
}

/// A context with `orders` and `cust` in chunks of `rows` rows.
fn context(rows: usize) -> SqlContext {
    let mut ctx = SqlContext::new();
    ctx.register("orders", &from_arrow(orders_batch(), Some(rows)));
    ctx.register("cust", &from_arrow(cust_batch(), Some(rows)));
    ctx
}

/// Runs `query` on [`context`] with chunks of 5 rows.
fn run(query: &str) -> RecordBatch {
    run_on(&context(5), &session(), query)
}

fn run_on(ctx: &SqlContext, s: &Session, query: &str) -> RecordBatch {
    let frame = ctx.sql(query).unwrap_or_else(|e| panic!("{query}: {e}"));
    frame.execute(s).unwrap_or_else(|e| panic!("{query}: {e}"))
}

/// Column `name` as numbers (null as `None`).
fn nums(b: &RecordBatch, name: &str) -> Vec<Option<f64>> {
    let c = cast(b.column_by_name(name).unwrap(), &DataType::Float64).unwrap();
    let c = c.as_primitive::<Float64Type>();
    (0..c.len())
        .map(|i| c.is_valid(i).then(|| c.value(i)))
        .collect()
}

/// Column `name` as integers (nulls not expected).
fn ints(b: &RecordBatch, name: &str) -> Vec<i64> {
    nums(b, name)
        .into_iter()
        .map(|v| v.unwrap() as i64)
        .collect()
}

/// Column `name` as strings.
fn strs(b: &RecordBatch, name: &str) -> Vec<String> {
    let c = cast(b.column_by_name(name).unwrap(), &DataType::Utf8).unwrap();
    c.as_string::<i32>()
        .iter()
        .map(|v| v.unwrap().to_string())
        .collect()
}

fn columns(b: &RecordBatch) -> Vec<String> {
    b.schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect()
}

/// The `SqlError` of translating `query`.
fn error(query: &str) -> SqlError {
    match context(5).sql(query) {
        Err(Error::Sql(e)) => e,
        other => panic!("{query}: expected an SQL error, got {other:?}"),
    }
}

#[test]
fn select_where_order_limit_with_expressions_and_aliases() {
    let b = run(
        "select o_id, amount * 2 as dbl, -o_id + 1 as neg from orders \
                 where amount >= 50 and not o_id = 7 order by dbl desc limit 3",
    );
    assert_eq!(columns(&b), ["o_id", "dbl", "neg"]);
    assert_eq!(ints(&b, "o_id"), [11, 10, 9]);
    assert_eq!(ints(&b, "dbl"), [220, 200, 180]);
    assert_eq!(ints(&b, "neg"), [-10, -9, -8]);
    // ORDER BY a position, and an expression outside the select list.
    let b = run("select o_id from orders where o_id between 2 and 5 order by amount % 20, 1 desc");
    assert_eq!(ints(&b, "o_id"), [4, 2, 5, 3]);
}

#[test]
fn group_by_with_aggregates_having_and_aggregates_in_expressions() {
    let b = run("select cust, count(*) as n, sum(amount) as s, min(amount) as lo, \
                 max(amount) as hi, avg(amount) as mean, count(distinct o_id % 2) as parities, \
                 sum(amount) / count(*) as ratio, 100 * sum(case when o_id > 5 then amount else 0 end) as late \
                 from orders group by cust having sum(amount) > 130 order by cust");
    // cust c holds o_id c, c+4, c+8: sums 120+30c.
    let kept: Vec<i64> = (0..4).filter(|c| 120 + 30 * c > 130).collect();
    assert_eq!(ints(&b, "cust"), kept);
    assert_eq!(ints(&b, "n"), vec![3; kept.len()]);
    let sums: Vec<i64> = kept.iter().map(|c| 120 + 30 * c).collect();
    assert_eq!(ints(&b, "s"), sums);
    assert_eq!(
        ints(&b, "lo"),
        kept.iter().map(|c| 10 * c).collect::<Vec<_>>()
    );
    assert_eq!(
        ints(&b, "hi"),
        kept.iter().map(|c| 10 * c + 80).collect::<Vec<_>>()
    );
    let means: Vec<Option<f64>> = sums.iter().map(|s| Some(*s as f64 / 3.0)).collect();
    assert_eq!(nums(&b, "mean"), means);
    assert_eq!(nums(&b, "ratio"), means);
    assert_eq!(ints(&b, "parities"), vec![1; kept.len()]);
    let late: Vec<i64> = kept
        .iter()
        .map(|c| {
            100 * [c + 4, c + 8]
                .iter()
                .filter(|&&o| o > 5)
                .map(|o| 10 * o)
                .sum::<i64>()
        })
        .collect();
    assert_eq!(ints(&b, "late"), late);
    // A computed key, matched in the select list, and ordered with nulls first.
    let b = run(
        "select amount % 20 as r, count(*) as n from orders group by amount % 20 \
                 order by r desc nulls first",
    );
    assert_eq!(ints(&b, "r"), [10, 0]);
    assert_eq!(ints(&b, "n"), [6, 6]);
    // One row without GROUP BY.
    let b = run("select count(*) as n, sum(amount) as s from orders where cust = 9");
    assert_eq!(ints(&b, "n"), [0]);
}

#[test]
fn comma_joins_follow_the_equalities_in_where() {
    let b = run("select name, sum(amount) as total from orders, cust \
                 where cust = c_id and region = 1 group by name order by name");
    assert_eq!(strs(&b, "name"), ["c1", "c3"]);
    assert_eq!(ints(&b, "total"), [150, 210]);
    let b = run(
        "select distinct region from cust join orders on c_id = cust \
                 where amount > 40 order by region desc",
    );
    assert_eq!(ints(&b, "region"), [1, 0]);
    let b = run("select count(*) as n from cust cross join cust c2 where c2.c_id < 2");
    assert_eq!(ints(&b, "n"), [10]);
    // No cross product where an equality connects the tables.
    let plan = context(5)
        .sql("select o_id from orders, cust where cust = c_id")
        .unwrap()
        .explain()
        .unwrap();
    assert!(!plan.contains("\u{1f}one"), "{plan}");
}

#[test]
fn the_same_table_twice_under_aliases_resolves_to_distinct_columns() {
    let b = run("select a.o_id, b.o_id as other from orders a, orders b \
                 where a.cust = b.cust and a.o_id < b.o_id and a.cust = 1 order by a.o_id, other");
    assert_eq!(ints(&b, "o_id"), [1, 1, 5]);
    assert_eq!(ints(&b, "other"), [5, 9, 9]);
}

#[test]
fn left_join_filters_the_right_side_by_its_own_on_conditions() {
    let b = run(
        "select c_id, count(o_id) as n from cust left outer join orders \
                 on c_id = cust and amount > 60 group by c_id order by c_id",
    );
    // Orders above 60: o_id 7..11, customers 3, 0, 1, 2, 3.
    assert_eq!(ints(&b, "c_id"), [0, 1, 2, 3, 4]);
    assert_eq!(ints(&b, "n"), [1, 1, 1, 2, 0]);
}

#[test]
fn exists_in_and_their_negations_are_semi_and_anti_joins() {
    let b = run("select c_id from cust where exists \
                 (select * from orders where cust = c_id and amount > 80) order by c_id");
    assert_eq!(ints(&b, "c_id"), [1, 2, 3]);
    let b = run("select c_id from cust where not exists \
                 (select * from orders where cust = c_id and amount > 80) order by c_id");
    assert_eq!(ints(&b, "c_id"), [0, 4]);
    let b = run("select c_id from cust where c_id in \
                 (select cust from orders group by cust having sum(amount) > 170) order by c_id");
    assert_eq!(ints(&b, "c_id"), [2, 3]);
    let b =
        run("select c_id from cust where c_id + 1 not in (select cust from orders) order by c_id");
    assert_eq!(ints(&b, "c_id"), [3, 4]);
}

#[test]
fn exists_with_a_non_equality_correlation_matches_a_nested_loop() {
    let b = run(
        "select o_id from orders o1 where exists (select * from orders o2 \
                 where o2.cust = o1.cust and o2.o_id <> o1.o_id and o2.amount > o1.amount + 30) \
                 order by o_id",
    );
    let b2 = run(
        "select o_id from orders o1 where not exists (select * from orders o2 \
                  where o2.cust = o1.cust and o2.o_id <> o1.o_id and o2.amount > o1.amount + 30) \
                  order by o_id",
    );
    let rows: Vec<(i64, i64)> = (0..12).map(|i| (i % 4, 10 * i)).collect();
    let exists =
        |i: usize| (0..12).any(|j| j != i && rows[j].0 == rows[i].0 && rows[j].1 > rows[i].1 + 30);
    let want: Vec<i64> = (0..12).filter(|&i| exists(i)).map(|i| i as i64).collect();
    let not: Vec<i64> = (0..12).filter(|&i| !exists(i)).map(|i| i as i64).collect();
    assert_eq!(ints(&b, "o_id"), want);
    assert_eq!(ints(&b2, "o_id"), not);
}

#[test]
fn not_in_keeps_sql_null_semantics() {
    let column = |name: &str, v: Vec<Option<i64>>| {
        let batch =
            RecordBatch::try_from_iter([(name, Arc::new(Int64Array::from(v)) as _)]).unwrap();
        from_arrow(batch, Some(2))
    };
    let mut ctx = SqlContext::new();
    ctx.register("a", &column("x", vec![Some(1), Some(2), None, Some(3)]));
    ctx.register("b", &column("y", vec![Some(2), Some(5)]));
    ctx.register("bn", &column("y", vec![Some(2), None]));
    ctx.register("e", &column("y", vec![]));
    let s = session();
    let q = |t: &str| format!("select x from a where x not in (select y from {t}) order by x");
    assert_eq!(
        nums(&run_on(&ctx, &s, &q("b")), "x"),
        [Some(1.0), Some(3.0)]
    );
    assert_eq!(run_on(&ctx, &s, &q("bn")).num_rows(), 0);
    let all = nums(&run_on(&ctx, &s, &q("e")), "x");
    assert_eq!(all, [Some(1.0), Some(2.0), Some(3.0), None]);
    // IN ignores nulls on both sides.
    let b = run_on(&ctx, &s, "select x from a where x in (select y from bn)");
    assert_eq!(nums(&b, "x"), [Some(2.0)]);
}

#[test]
fn a_null_join_key_matches_nothing() {
    let table = |k: &str, v: &str, keys: Vec<Option<i64>>, values: Vec<i64>| {
        let batch = RecordBatch::try_from_iter([
            (k, Arc::new(Int64Array::from(keys)) as _),
            (v, Arc::new(Int64Array::from(values)) as _),
        ])
        .unwrap();
        from_arrow(batch, Some(2))
    };
    let mut ctx = SqlContext::new();
    ctx.register(
        "a",
        &table("k", "v", vec![Some(1), None, Some(2)], vec![10, 20, 30]),
    );
    ctx.register("b", &table("k2", "w", vec![Some(1), None], vec![100, 200]));
    let s = session();
    let b = run_on(&ctx, &s, "select v, w from a, b where k = k2");
    assert_eq!((ints(&b, "v"), ints(&b, "w")), (vec![10], vec![100]));
    let b = run_on(
        &ctx,
        &s,
        "select v, w from a left join b on k = k2 order by v",
    );
    assert_eq!(ints(&b, "v"), [10, 20, 30]);
    assert_eq!(nums(&b, "w"), [Some(100.0), None, None]);
}

#[test]
fn scalar_subqueries_correlated_or_not_are_joins() {
    let b = run(
        "select o_id from orders where amount > (select avg(amount) from orders) order by o_id",
    );
    assert_eq!(ints(&b, "o_id"), [6, 7, 8, 9, 10, 11]);
    let b = run("select o_id from orders o1 where amount = \
                 (select max(amount) from orders o2 where o2.cust = o1.cust) order by o_id");
    assert_eq!(ints(&b, "o_id"), [8, 9, 10, 11]);
    let b = run("select c_id from cust where c_id * 100 < \
                 (select 2 * sum(amount) from orders where cust = c_id) order by c_id");
    // Twice the sums, 240+60c, against 100c; customer 4 has no group (null: not kept).
    assert_eq!(ints(&b, "c_id"), [0, 1, 2, 3]);
}

#[test]
fn with_tables_and_subqueries_in_from() {
    let b = run(
        "with t as (select cust, sum(amount) as s from orders group by cust) \
                 select cust, s from t where s = (select max(s) from t)",
    );
    assert_eq!(ints(&b, "cust"), [3]);
    assert_eq!(ints(&b, "s"), [210]);
    let b = run(
        "select k, n from (select cust as k, count(*) as n from orders \
                 where o_id < 10 group by cust) as x where n > 2 order by k",
    );
    assert_eq!(ints(&b, "k"), [0, 1]);
    assert_eq!(ints(&b, "n"), [3, 3]);
}

#[test]
fn dates_intervals_strings_lists_and_case() {
    let b = run(
        "select o_id, extract(year from day) as y, substring(note from 1 for 3) as p, \
                 case when note like 'even%' then 'E' else 'O' end as parity \
                 from orders where day >= date '1995-03-01' \
                 and day < date '1995-03-01' + interval '3' month \
                 and note not like '%order 3' and o_id in (2, 3, 4, 5, 40) order by o_id",
    );
    // Days 9145 + 31 i: 1995-03-01 is 9190, 1995-06-01 is 9282: o_id 2..4.
    assert_eq!(ints(&b, "o_id"), [2, 4]);
    assert_eq!(ints(&b, "y"), [1995, 1995]);
    assert_eq!(strs(&b, "p"), ["eve", "eve"]);
    assert_eq!(strs(&b, "parity"), ["E", "E"]);
    let b = run(
        "select count(*) as n from orders where day > date '1995-12-31' - interval '1' year \
                 and amount between 0.5 * 20 and 30.00 and o_id not in (1)",
    );
    assert_eq!(ints(&b, "n"), [2]);
}

#[test]
fn answers_do_not_depend_on_chunking() {
    let query = "select name, count(*) as n, sum(amount) as s from orders o, cust \
                 where cust = c_id and exists (select * from orders o2 \
                 where o2.cust = o.cust and o2.o_id > o.o_id) group by name order by name";
    let s = session();
    let one = run_on(&context(1), &s, query);
    let many = run_on(&context(7), &s, query);
    assert_eq!(one, many);
    assert_eq!(strs(&one, "name"), ["c0", "c1", "c2", "c3"]);
    assert_eq!(ints(&one, "n"), [2, 2, 2, 2]);
}

#[test]
fn session_sql_is_the_shortcut_and_stays_lazy() {
    let s = session();
    let orders: DataFrame = from_arrow(orders_batch(), Some(4));
    let frame = s
        .sql(
            "select count(*) as n from orders where cust = 2",
            &[("ORDERS", &orders)],
        )
        .unwrap();
    assert_eq!(ints(&frame.execute(&s).unwrap(), "n"), [3]);
}

#[test]
fn bad_queries_are_typed_errors() {
    assert!(matches!(error("select from where"), SqlError::Parse(_)));
    assert_eq!(
        error("select * from nowhere"),
        SqlError::UnknownTable("nowhere".into())
    );
    assert_eq!(
        error("select nope from orders"),
        SqlError::UnknownColumn("nope".into())
    );
    assert!(matches!(
        error("select o_id from orders a, orders b"),
        SqlError::AmbiguousColumn { .. }
    ));
    let SqlError::Unsupported(why) = error("select sum(amount) over () from orders") else {
        panic!("a window function must be unsupported");
    };
    assert!(why.contains("window functions"), "{why}");
    assert!(matches!(
        error("select o_id, count(*) from orders group by cust"),
        SqlError::Invalid(_)
    ));
    assert!(matches!(
        error("select o_id from orders where sum(amount) > 1"),
        SqlError::Invalid(_)
    ));
    assert!(matches!(
        error("select o_id from orders union select c_id from cust"),
        SqlError::Unsupported(_)
    ));
    assert!(matches!(
        error("delete from orders"),
        SqlError::Unsupported(_)
    ));
}
