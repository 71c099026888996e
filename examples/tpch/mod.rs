//! TPC-H on Tessera: the data generator ([`gen`]), the 22 queries in the Rust dataframe
//! API ([`queries`]) and in SQL ([`sql`]), and what the `tpch` example and `tessera-bench
//! tpch` share: reading a folder of tables, running a query, and the peers' digest of an
//! answer.

pub mod gen;
pub mod queries;

/// The SQL text of query `n` (1 to 22): the specification's, with its validation
/// parameters (`examples/tpch/sql/q<N>.sql`, which the Python tests read too).
pub fn sql(n: usize) -> Option<&'static str> {
    const TEXTS: [&str; 22] = [
        include_str!("sql/q1.sql"),
        include_str!("sql/q2.sql"),
        include_str!("sql/q3.sql"),
        include_str!("sql/q4.sql"),
        include_str!("sql/q5.sql"),
        include_str!("sql/q6.sql"),
        include_str!("sql/q7.sql"),
        include_str!("sql/q8.sql"),
        include_str!("sql/q9.sql"),
        include_str!("sql/q10.sql"),
        include_str!("sql/q11.sql"),
        include_str!("sql/q12.sql"),
        include_str!("sql/q13.sql"),
        include_str!("sql/q14.sql"),
        include_str!("sql/q15.sql"),
        include_str!("sql/q16.sql"),
        include_str!("sql/q17.sql"),
        include_str!("sql/q18.sql"),
        include_str!("sql/q19.sql"),
        include_str!("sql/q20.sql"),
        include_str!("sql/q21.sql"),
        include_str!("sql/q22.sql"),
    ];
    n.checked_sub(1).and_then(|i| TEXTS.get(i)).copied()
}

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float64Type};
use std::path::Path;
use tessera::dataframe::{read_parquet, DataFrame};

/// The eight tables of a folder of `<table>.parquet` files, read lazily.
#[derive(Clone, Debug)]
pub struct Tables {
    /// `lineitem`.
    pub lineitem: DataFrame,
    /// `orders`.
    pub orders: DataFrame,
    /// `customer`.
    pub customer: DataFrame,
    /// `part`.
    pub part: DataFrame,
    /// `partsupp`.
    pub partsupp: DataFrame,
    /// `supplier`.
    pub supplier: DataFrame,
    /// `nation`.
    pub nation: DataFrame,
    /// `region`.
    pub region: DataFrame,
}

impl Tables {
    /// Each table under its TPC-H name (what SQL queries read).
    pub fn named(&self) -> [(&'static str, &DataFrame); 8] {
        [
            ("lineitem", &self.lineitem),
            ("orders", &self.orders),
            ("customer", &self.customer),
            ("part", &self.part),
            ("partsupp", &self.partsupp),
            ("supplier", &self.supplier),
            ("nation", &self.nation),
            ("region", &self.region),
        ]
    }

    /// The tables of `dir` (an unreadable file is the error each frame carries).
    pub fn read(dir: &Path) -> Tables {
        let t = |name: &str| read_parquet(dir.join(format!("{name}.parquet")));
        Tables {
            lineitem: t("lineitem"),
            orders: t("orders"),
            customer: t("customer"),
            part: t("part"),
            partsupp: t("partsupp"),
            supplier: t("supplier"),
            nation: t("nation"),
            region: t("region"),
        }
    }
}

/// The peers' digest of an answer (`shared/peers/tpch.py`): its rows and the sum of every
/// numeric column (decimals as numbers), the sum rounded to 7 significant digits.
pub fn digest(chunks: &[RecordBatch]) -> Result<(usize, f64), String> {
    let mut rows = 0;
    let mut sum = 0.0;
    for batch in chunks {
        rows += batch.num_rows();
        for column in batch.columns() {
            let numeric =
                column.data_type().is_numeric() && !matches!(column.data_type(), DataType::Float16);
            if !numeric {
                continue;
            }
            let f = cast(column, &DataType::Float64).map_err(|e| e.to_string())?;
            let f = f.as_primitive::<Float64Type>();
            sum += (0..f.len())
                .filter(|&i| f.is_valid(i))
                .map(|i| f.value(i))
                .sum::<f64>();
        }
    }
    Ok((rows, round7(sum)))
}

/// `x` rounded to 7 significant digits, as the peers' digests are.
fn round7(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let digits = 6 - x.abs().log10().floor() as i32;
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

#[cfg(test)]
mod tests {
    use super::{digest, gen, queries, sql, Tables};
    use tessera::{Progress, Session};

    /// Each SQL text, translated by `Session::sql`, answers with the hand-written query's
    /// columns, rows and digest (python/tests/test_tpch.py checks both against DuckDB).
    #[test]
    fn sql_texts_answer_as_the_hand_written_queries() {
        let dir = std::env::temp_dir().join(format!("tessera-tpch-sql-{}", std::process::id()));
        gen::write_tables(&dir, 0.01).unwrap();
        let tables = Tables::read(&dir);
        let session = Session::builder()
            .threads(2)
            .progress(Progress::Never)
            .build()
            .unwrap();
        let names = |b: &arrow::array::RecordBatch| -> Vec<String> {
            b.schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect()
        };
        for n in 1..=22 {
            let text = sql(n).unwrap();
            let by_sql = session.sql(text, &tables.named()).unwrap();
            let by_sql = by_sql.execute(&session).unwrap();
            let by_hand = queries::query(n, &tables).unwrap();
            let by_hand = by_hand.execute(&session).unwrap();
            assert_eq!(names(&by_sql), names(&by_hand), "Q{n}");
            assert_eq!(digest(&[by_sql]), digest(&[by_hand]), "Q{n}");
        }
        assert_eq!(sql(0), None);
        assert_eq!(sql(23), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
