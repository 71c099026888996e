//! TPC-H on Tessera: the data generator ([`gen`]), the 22 queries in the Rust dataframe
//! API ([`queries`]), and what the `tpch` example and `tessera-bench tpch` share: reading a
//! folder of tables, running a query, and the peers' digest of an answer.

pub mod gen;
pub mod queries;

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
