//! The dataframe workloads of the peers' harness (`shared/peers/{read_csv,groupby,ratings,
//! join,reductions}.py`) on Tessera, reading the peers' data files (`gen_data.py`).
//!
//! As in the peers, the input is loaded from Parquet and kept in memory (`persist`) before
//! timing, and only the query is timed — except `read_csv`, which times the load, and
//! `groupby_keyed`, Tessera's own out-of-core workload, which reads its CSV inside the
//! timed query. Results stay in memory: groupbys and reductions return one table, joins
//! and `read_csv` persist their chunks in the session's storage (on a cluster, on the
//! workers), as the peers' Dask runs `.persist()`; their digest is read after the timer
//! stops, as the peers compute theirs.
//!
//! Persisted input and results live in the session's storage, under its memory budget
//! (`DataFrame::persist`), so a budget smaller than the input spills it. `groupby_keyed`
//! persists nothing: all of its data (the parsed chunks' partial aggregates, their hash
//! shuffle) is made inside the timed query, which makes it the workload for measuring the
//! cost of spilling.

use crate::record::{round_significant, Record};
use crate::RunChecks;
use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Float64Type, Int64Type};
use clap::ValueEnum;
use serde_json::{json, Value};
use std::error::Error;
use tessera::dataframe::{self, Agg, DataFrame, How};
use tessera::Session;

/// A dataframe workload (named as the peers' result lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FrameWorkload {
    /// The G1 CSV into memory.
    #[value(name = "read_csv")]
    ReadCsv,
    /// G1 groupby id1: sum v1.
    #[value(name = "groupby_q1")]
    GroupbyQ1,
    /// G1 groupby id1, id2: sum v1.
    #[value(name = "groupby_q2")]
    GroupbyQ2,
    /// G1 groupby id6: sum v1, v2, v3.
    #[value(name = "groupby_q3")]
    GroupbyQ3,
    /// G1 groupby id3: mean v1, v3.
    #[value(name = "groupby_q4")]
    GroupbyQ4,
    /// G1 groupby id3: max v1, min v2.
    #[value(name = "groupby_q5")]
    GroupbyQ5,
    /// ratings groupby userId: rating sum, mean, max, min.
    #[value(name = "ratings_groupby")]
    RatingsGroupby,
    /// G1 inner-join Y on id1.
    #[value(name = "join_g1_y")]
    JoinG1Y,
    /// xy inner-join xy on y.
    #[value(name = "join_self")]
    JoinSelf,
    /// xy: mean of x.
    #[value(name = "reduce_mean")]
    ReduceMean,
    /// xy groupby y: mean of x.
    #[value(name = "groupby_mean")]
    GroupbyMean,
    /// The out-of-core example's keyed table (`tessera_examples::keyed_csv`: `k`,
    /// `v1`..`v3`; here N rows and N / 10 keys, written to `--data` first if missing) groupby k: v1 sum, mean, count; v2 sum, mean;
    /// v3 sum, max — read from CSV inside the timed region, in chunks of 8 MiB, so that the
    /// partial aggregates are many and merge through a hash shuffle.
    #[value(name = "groupby_keyed")]
    GroupbyKeyed,
}

/// Rows per key of `groupby_keyed`'s table.
const KEYED_ROWS_PER_GROUP: usize = 10;
/// CSV bytes per chunk of `groupby_keyed`.
const KEYED_CHUNK_BYTES: u64 = 8 << 20;

impl FrameWorkload {
    /// The `workload` string of the result line.
    pub fn name(self) -> &'static str {
        match self {
            FrameWorkload::ReadCsv => "read_csv",
            FrameWorkload::GroupbyQ1 => "groupby_q1",
            FrameWorkload::GroupbyQ2 => "groupby_q2",
            FrameWorkload::GroupbyQ3 => "groupby_q3",
            FrameWorkload::GroupbyQ4 => "groupby_q4",
            FrameWorkload::GroupbyQ5 => "groupby_q5",
            FrameWorkload::RatingsGroupby => "ratings_groupby",
            FrameWorkload::JoinG1Y => "join_g1_y",
            FrameWorkload::JoinSelf => "join_self",
            FrameWorkload::ReduceMean => "reduce_mean",
            FrameWorkload::GroupbyMean => "groupby_mean",
            FrameWorkload::GroupbyKeyed => "groupby_keyed",
        }
    }

    /// The peers' default size (rows).
    pub fn default_size(self) -> usize {
        match self {
            FrameWorkload::RatingsGroupby => 20_000_000,
            _ => 10_000_000,
        }
    }

    /// The input, loaded and kept in memory before timing (none for `read_csv`; a lazy CSV
    /// frame for `groupby_keyed`, its file written first if missing).
    fn prepare(
        self,
        session: &Session,
        data: &str,
        n: &str,
        rows: usize,
    ) -> Result<Vec<DataFrame>, Box<dyn Error>> {
        if self == FrameWorkload::GroupbyKeyed {
            let dir = std::path::Path::new(data);
            std::fs::create_dir_all(dir)?;
            let groups = (rows / KEYED_ROWS_PER_GROUP).max(1);
            let (path, written) = tessera_examples::keyed_csv(dir, rows, groups)?;
            if written {
                eprintln!("tessera-bench: wrote {}", path.display());
            }
            let csv = dataframe::read_csv_with(
                path,
                dataframe::ReadCsv {
                    chunk_bytes: Some(KEYED_CHUNK_BYTES),
                    ..Default::default()
                },
            );
            return Ok(vec![csv]);
        }
        let g1 = || dataframe::read_parquet(format!("{data}/G1_{n}_1e2_0_0.parquet"));
        let xy = || dataframe::read_parquet(format!("{data}/xy_{n}.parquet"));
        let frames = match self {
            FrameWorkload::ReadCsv => Vec::new(),
            FrameWorkload::GroupbyQ1
            | FrameWorkload::GroupbyQ2
            | FrameWorkload::GroupbyQ3
            | FrameWorkload::GroupbyQ4
            | FrameWorkload::GroupbyQ5 => vec![g1()],
            FrameWorkload::RatingsGroupby => {
                vec![dataframe::read_parquet(format!(
                    "{data}/ratings_{n}.parquet"
                ))]
            }
            FrameWorkload::JoinG1Y => {
                vec![
                    g1(),
                    dataframe::read_parquet(format!("{data}/Y_1e2.parquet")),
                ]
            }
            FrameWorkload::JoinSelf | FrameWorkload::ReduceMean | FrameWorkload::GroupbyMean => {
                vec![xy()]
            }
            FrameWorkload::GroupbyKeyed => Vec::new(),
        };
        Ok(frames
            .iter()
            .map(|f| f.persist(session))
            .collect::<tessera::Result<_>>()?)
    }

    /// Runs the timed query; its result.
    fn query(
        self,
        session: &Session,
        data: &str,
        n: &str,
        input: &[DataFrame],
    ) -> tessera::Result<Answer> {
        let first = || {
            input
                .first()
                .cloned()
                .unwrap_or_else(|| dataframe::from_batches(vec![]))
        };
        let group = |keys: &[&str], aggs: &[(&str, &[Agg])]| {
            first().groupby(keys).sort(false).agg(aggs).execute(session)
        };
        let one = |b: tessera::Result<RecordBatch>| b.map(|b| Answer::Batches(vec![b]));
        let kept = |f: DataFrame| f.persist(session).map(Answer::Kept);
        match self {
            FrameWorkload::ReadCsv => {
                kept(dataframe::read_csv(format!("{data}/G1_{n}_1e2_0_0.csv")))
            }
            FrameWorkload::GroupbyQ1 => one(group(&["id1"], &[("v1", &[Agg::Sum])])),
            FrameWorkload::GroupbyQ2 => one(group(&["id1", "id2"], &[("v1", &[Agg::Sum])])),
            FrameWorkload::GroupbyQ3 => one(group(
                &["id6"],
                &[
                    ("v1", &[Agg::Sum]),
                    ("v2", &[Agg::Sum]),
                    ("v3", &[Agg::Sum]),
                ],
            )),
            FrameWorkload::GroupbyQ4 => one(group(
                &["id3"],
                &[("v1", &[Agg::Mean]), ("v3", &[Agg::Mean])],
            )),
            FrameWorkload::GroupbyQ5 => {
                one(group(&["id3"], &[("v1", &[Agg::Max]), ("v2", &[Agg::Min])]))
            }
            FrameWorkload::RatingsGroupby => one(group(
                &["userId"],
                &[("rating", &[Agg::Sum, Agg::Mean, Agg::Max, Agg::Min])],
            )),
            FrameWorkload::JoinG1Y | FrameWorkload::JoinSelf => {
                let key = if self == FrameWorkload::JoinG1Y {
                    "id1"
                } else {
                    "y"
                };
                let right = input.get(1).cloned().unwrap_or_else(first);
                kept(first().merge(&right, &[key], How::Inner))
            }
            FrameWorkload::ReduceMean => one(first().select(&["x"]).mean().execute(session)),
            FrameWorkload::GroupbyMean => {
                one(first().groupby(&["y"]).sort(false).mean().execute(session))
            }
            FrameWorkload::GroupbyKeyed => one(group(
                &["k"],
                &[
                    ("v1", &[Agg::Sum, Agg::Mean, Agg::Count]),
                    ("v2", &[Agg::Sum, Agg::Mean]),
                    ("v3", &[Agg::Sum, Agg::Max]),
                ],
            )),
        }
    }

    /// The peers' digest of a result.
    fn digest(self, chunks: &[RecordBatch]) -> Result<Value, String> {
        let rows: usize = chunks.iter().map(RecordBatch::num_rows).sum();
        let sums = |pred: &dyn Fn(&str) -> bool| -> Result<Vec<Value>, String> {
            let Some(first) = chunks.first() else {
                return Ok(Vec::new());
            };
            first
                .schema()
                .fields()
                .iter()
                .filter(|f| pred(f.name()))
                .map(|f| column_sum(chunks, f.name()).map(dval))
                .collect()
        };
        let mut out = vec![json!(rows)];
        match self {
            FrameWorkload::ReadCsv => {
                out.push(json!(column_sum(chunks, "v1")? as i64));
                out.push(json!(round_significant(column_sum(chunks, "v3")?, 7)));
            }
            FrameWorkload::ReduceMean => {
                return Ok(json!(round_significant(column_sum(chunks, "x")?, 10)))
            }
            FrameWorkload::JoinG1Y => out.extend(sums(&|c| c == "v1" || c == "v4")?),
            FrameWorkload::JoinSelf => out.extend(sums(&|c| c.starts_with('x'))?),
            FrameWorkload::RatingsGroupby => out.extend(sums(&|c| c.starts_with("rating"))?),
            FrameWorkload::GroupbyMean => out.extend(sums(&|c| c == "x")?),
            _ => out.extend(sums(&|c| c.starts_with('v'))?),
        }
        Ok(Value::Array(out))
    }

    /// Loads the input, then runs and prints `repeat` timed runs, with `checks` around
    /// each.
    pub fn run(
        self,
        session: &Session,
        engine: &str,
        size: usize,
        repeat: usize,
        data: &str,
        checks: &RunChecks,
    ) -> Result<(), Box<dyn Error>> {
        let n = crate::workloads::fmt_size(size);
        let input = self.prepare(session, data, &n, size)?;
        for run in 0..repeat {
            let injected = checks.before();
            let before = crate::record::rss_mb();
            let started = std::time::Instant::now();
            let result = self.query(session, data, &n, &input)?;
            let seconds = started.elapsed().as_secs_f64();
            checks.after(session, run, injected)?;
            let result = result.batches(session)?;
            let record = Record::measured(
                self.name(),
                engine.to_string(),
                n.clone(),
                run,
                seconds,
                before,
                self.digest(&result)?,
            );
            drop(result);
            println!("{}", record.to_line()?);
        }
        Ok(())
    }
}

/// What a timed query leaves: a table in hand, or chunks kept in the session's storage.
enum Answer {
    /// The result's chunks, in this process.
    Batches(Vec<RecordBatch>),
    /// A frame over the persisted result.
    Kept(DataFrame),
}

impl Answer {
    /// The result's chunks; a kept result is read from storage (on a cluster, fetched from
    /// the workers).
    fn batches(self, session: &Session) -> tessera::Result<Vec<RecordBatch>> {
        match self {
            Answer::Batches(b) => Ok(b),
            Answer::Kept(f) => f.execute_chunks(session),
        }
    }
}

/// The sum of a numeric column over all chunks, as f64 (integers summed exactly first).
fn column_sum(chunks: &[RecordBatch], name: &str) -> Result<f64, String> {
    let mut int_sum: i128 = 0;
    let mut float_sum = 0.0;
    for b in chunks {
        let a = b
            .column_by_name(name)
            .ok_or_else(|| format!("the result has no column {name:?}"))?;
        match a.data_type() {
            DataType::Int64 => {
                int_sum += a
                    .as_primitive::<Int64Type>()
                    .iter()
                    .flatten()
                    .map(i128::from)
                    .sum::<i128>()
            }
            DataType::Float64 => {
                float_sum += a
                    .as_primitive::<Float64Type>()
                    .iter()
                    .flatten()
                    .sum::<f64>()
            }
            other => {
                let cast = arrow::compute::cast(a, &DataType::Float64)
                    .map_err(|e| format!("{name}: {other}: {e}"))?;
                float_sum += cast
                    .as_primitive::<Float64Type>()
                    .iter()
                    .flatten()
                    .sum::<f64>()
            }
        }
    }
    Ok(int_sum as f64 + float_sum)
}

/// The peers' `dval`: an exact integer when integral, else 7 significant digits.
fn dval(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 2f64.powi(53) {
        json!(x as i64)
    } else {
        json!(round_significant(x, 7))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float64Array, Int64Array, StringArray};
    use std::sync::Arc;

    fn table(columns: Vec<(&str, arrow::array::ArrayRef)>) -> RecordBatch {
        RecordBatch::try_from_iter(columns).expect("a table")
    }

    #[test]
    fn a_join_is_persisted_and_digested_after_the_timer() {
        let session = Session::builder()
            .threads(2)
            .progress(tessera::Progress::Never)
            .build()
            .expect("session");
        // G1-like rows in two chunks; Y holds keys a and c only.
        let g1 = |ids: &[&str], v1: &[i64]| {
            table(vec![
                ("id1", Arc::new(StringArray::from(ids.to_vec())) as _),
                ("v1", Arc::new(Int64Array::from(v1.to_vec())) as _),
            ])
        };
        let left = dataframe::from_batches(vec![
            g1(&["a", "b", "c"], &[1, 2, 3]),
            g1(&["c", "a", "d"], &[4, 5, 6]),
        ]);
        let right = dataframe::from_batches(vec![table(vec![
            ("id1", Arc::new(StringArray::from(vec!["a", "c"])) as _),
            ("v4", Arc::new(Float64Array::from(vec![0.5, 2.0])) as _),
        ])]);
        let input = [left, right];
        let answer = FrameWorkload::JoinG1Y
            .query(&session, "", "", &input)
            .expect("the join runs");
        assert!(matches!(answer, Answer::Kept(_)), "a join's result is kept");
        let chunks = answer
            .batches(&session)
            .expect("the kept result reads back");
        // Matches: a (1, 5) with 0.5, c (3, 4) with 2.0.
        let digest = FrameWorkload::JoinG1Y.digest(&chunks).expect("a digest");
        assert_eq!(
            digest,
            json!([4, 13, 5]),
            "rows, sum v1, sum v4 (whole sums print as integers)"
        );
        let grouped = FrameWorkload::GroupbyQ1
            .query(&session, "", "", &input[..1])
            .expect("the groupby runs");
        assert!(
            matches!(grouped, Answer::Batches(_)),
            "a groupby returns its table"
        );
    }
}
