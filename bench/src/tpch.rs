//! `tessera-bench tpch`: the 22 TPC-H queries (`tessera_examples::tpch::queries`) on the
//! Parquet tables of `gen_data.py --tpch SF` (`<data>/tpch-sf<SF>/`), one result line per
//! query and run, as `shared/peers/tpch.py` prints DuckDB's, DataFusion's and Polars'
//! (workloads `tpch_q1`..`tpch_q22`, size `sf<SF>`, digest `[rows, sum of the numeric
//! columns]`). The tables are opened (their Parquet footers read) before the timed region;
//! each timed run builds the query and executes it to a table. With `--sql`, a run builds
//! it from the specification's SQL text (`Session::sql`, parsing inside the timed region,
//! as the peers' SQL engines parse theirs) instead of the hand-written frames.

use crate::record::{rss_mb, Record};
use crate::RunChecks;
use serde_json::json;
use std::error::Error;
use std::path::Path;
use std::time::Instant;
use tessera::Session;
use tessera_examples::tpch::{self, digest, queries, Tables};

/// The workload names, `tpch_q1` to `tpch_q22`.
const NAMES: [&str; 22] = [
    "tpch_q1", "tpch_q2", "tpch_q3", "tpch_q4", "tpch_q5", "tpch_q6", "tpch_q7", "tpch_q8",
    "tpch_q9", "tpch_q10", "tpch_q11", "tpch_q12", "tpch_q13", "tpch_q14", "tpch_q15", "tpch_q16",
    "tpch_q17", "tpch_q18", "tpch_q19", "tpch_q20", "tpch_q21", "tpch_q22",
];

/// What to run.
pub struct Options<'a> {
    /// The scale factor, as written in the folder's name.
    pub sf: &'a str,
    /// The queries (all when empty).
    pub queries: &'a [usize],
    /// Timed runs of each.
    pub repeat: usize,
    /// The folder holding `tpch-sf<SF>/`.
    pub data: &'a str,
    /// Build each query from its SQL text.
    pub sql: bool,
}

/// Runs the queries of `options` and prints a result line per run.
pub fn run(
    session: &Session,
    engine: &str,
    options: &Options,
    checks: &RunChecks,
) -> Result<(), Box<dyn Error>> {
    let Options {
        sf,
        queries: wanted,
        repeat,
        data,
        sql,
    } = *options;
    let folder = Path::new(data).join(format!("tpch-sf{sf}"));
    if !folder.join("lineitem.parquet").exists() {
        return Err(format!(
            "{} has no lineitem.parquet: write the tables first (gen_data.py --tpch {sf}, or \
             the tpch example's `gen --sf {sf} --out {}`)",
            folder.display(),
            folder.display()
        )
        .into());
    }
    let tables = Tables::read(&folder);
    let all: Vec<usize> = (1..=22).collect();
    for &n in if wanted.is_empty() { &all } else { wanted } {
        let name = NAMES
            .get(n.wrapping_sub(1))
            .ok_or_else(|| format!("no query {n}: TPC-H has queries 1 to 22"))?;
        for run in 0..repeat {
            let injected = checks.before();
            let before = rss_mb();
            let started = Instant::now();
            let frame = match sql {
                true => session.sql(
                    tpch::sql(n).ok_or_else(|| format!("no query {n}"))?,
                    &tables.named(),
                )?,
                false => queries::query(n, &tables).ok_or_else(|| format!("no query {n}"))?,
            };
            let answer = frame.execute(session)?;
            let seconds = started.elapsed().as_secs_f64();
            checks.after(session, run, injected)?;
            let (rows, sum) = digest(std::slice::from_ref(&answer))?;
            let record = Record::measured(
                name,
                engine.to_string(),
                format!("sf{sf}"),
                run,
                seconds,
                before,
                json!([rows, sum]),
            );
            println!("{}", record.to_line()?);
        }
    }
    Ok(())
}
