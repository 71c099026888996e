//! TPC-H's eight tables written as Parquet with the `tpchgen` generators, the same rows,
//! types and file names that `tpchgen-cli parquet` writes (money `Decimal128(15,2)`, dates
//! `Date32`), so the queries, the peers and the tests read one data set.

use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use std::fs::File;
use std::path::Path;
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};
use tpchgen_arrow::arrow::array::RecordBatchReader;
use tpchgen_arrow::{
    CustomerArrow, LineItemArrow, NationArrow, OrderArrow, PartArrow, PartSuppArrow, RegionArrow,
    SupplierArrow,
};

/// The tables, in the order they are written.
pub const TABLES: [&str; 8] = [
    "nation", "region", "part", "supplier", "partsupp", "customer", "orders", "lineitem",
];

/// Rows per record batch; a row group holds two.
const BATCH_ROWS: usize = 64 * 1024;

/// Writes `<dir>/<table>.parquet` for the eight tables at scale factor `sf`, creating
/// `dir`; returns the rows written per table.
pub fn write_tables(dir: &Path, sf: f64) -> Result<Vec<(&'static str, usize)>, String> {
    if !(sf.is_finite() && sf > 0.0) {
        return Err(format!("scale factor {sf} must be a positive number"));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut written = Vec::new();
    for table in TABLES {
        let path = dir.join(format!("{table}.parquet"));
        let rows = match table {
            "nation" => write(
                &path,
                NationArrow::new(NationGenerator::new(sf, 1, 1)).with_batch_size(BATCH_ROWS),
            ),
            "region" => write(
                &path,
                RegionArrow::new(RegionGenerator::new(sf, 1, 1)).with_batch_size(BATCH_ROWS),
            ),
            "part" => write(
                &path,
                PartArrow::new(PartGenerator::new(sf, 1, 1)).with_batch_size(BATCH_ROWS),
            ),
            "supplier" => write(
                &path,
                SupplierArrow::new(SupplierGenerator::new(sf, 1, 1)).with_batch_size(BATCH_ROWS),
            ),
            "partsupp" => write(
                &path,
                PartSuppArrow::new(PartSuppGenerator::new(sf, 1, 1)).with_batch_size(BATCH_ROWS),
            ),
            "customer" => write(
                &path,
                CustomerArrow::new(CustomerGenerator::new(sf, 1, 1)).with_batch_size(BATCH_ROWS),
            ),
            "orders" => write(
                &path,
                OrderArrow::new(OrderGenerator::new(sf, 1, 1)).with_batch_size(BATCH_ROWS),
            ),
            _ => write(
                &path,
                LineItemArrow::new(LineItemGenerator::new(sf, 1, 1)).with_batch_size(BATCH_ROWS),
            ),
        }
        .map_err(|e| format!("{}: {e}", path.display()))?;
        written.push((table, rows));
    }
    Ok(written)
}

/// Writes the batches of `reader` to `path` (zstd), returning the rows.
fn write<R>(path: &Path, reader: R) -> Result<usize, Box<dyn std::error::Error>>
where
    R: RecordBatchReader,
{
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1)?))
        .set_max_row_group_row_count(Some(BATCH_ROWS * 2))
        .build();
    let mut writer = ArrowWriter::try_new(File::create(path)?, reader.schema(), Some(props))?;
    let mut rows = 0;
    for batch in reader {
        let batch = batch?;
        rows += batch.num_rows();
        writer.write(&batch)?;
    }
    writer.close()?;
    Ok(rows)
}
