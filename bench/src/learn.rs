//! The peers' learn workloads (`shared/peers/learn.py --query kmeans|pca|logistic|knn`) on
//! `tessera::learn`: the same blobs (8 centres of `6 · normal` in `cols` dimensions, unit
//! normal noise, labels for logistic regression from `X · w > 0` with `w` of seed 43),
//! generated and persisted before timing as the peers do. Tessera's generator draws other
//! numbers than NumPy's PCG64, so digests agree with the peers' statistically (to their
//! 4 significant digits or nearly), not bit for bit. Timed: the fit, and for knn the query.

use crate::record::{round_significant, Record};
use crate::workloads::{Size, SEED};
use crate::RunChecks;
use clap::ValueEnum;
use serde_json::Value;
use std::error::Error;
use tessera::learn::{kneighbors, KMeans, KMeansInit, LogisticRegression, Pca, PcaSolver};
use tessera::tensor::{self, random::default_rng};
use tessera::{DType, Session, Slice, Tensor};

/// Centres of the blobs (`learn.py`'s `blobs`).
const CENTRES: usize = 8;
/// Rows per chunk unless `--chunk` says otherwise (as `python/bench.py`).
const CHUNK_ROWS: usize = 62_500;
/// knn: the queries are the first rows, shifted by 0.01.
const QUERIES: usize = 10_000;

/// A learn workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LearnWorkload {
    /// `KMeans(8 clusters, k-means|| of 2 rounds, 10 Lloyd iterations)`; digest the
    /// inertia per row.
    #[value(name = "learn_kmeans")]
    Kmeans,
    /// `PCA(8 components, exact SVD by TSQR)`; digest the explained variances.
    #[value(name = "learn_pca")]
    Pca,
    /// `LogisticRegression(C = 1)` by Newton's method (scikit-learn's `tol`); digest the
    /// accuracy on the training rows.
    #[value(name = "learn_logistic")]
    Logistic,
    /// Brute-force nearest neighbours, k = 10, of 10,000 queries; digest the sum of the
    /// distances.
    #[value(name = "learn_knn")]
    Knn,
}

/// The persisted inputs of a workload.
struct Inputs {
    x: Tensor,
    /// Labels (logistic) or queries (knn).
    other: Option<Tensor>,
}

impl LearnWorkload {
    /// The `workload` string of the result line.
    pub fn name(self) -> &'static str {
        match self {
            LearnWorkload::Kmeans => "learn_kmeans",
            LearnWorkload::Pca => "learn_pca",
            LearnWorkload::Logistic => "learn_logistic",
            LearnWorkload::Knn => "learn_knn",
        }
    }

    /// `learn.py`'s default rows and columns.
    pub fn default_size(self) -> Size {
        let (rows, cols) = match self {
            LearnWorkload::Kmeans => (10_000_000, 16),
            LearnWorkload::Pca => (10_000_000, 64),
            LearnWorkload::Logistic => (10_000_000, 32),
            LearnWorkload::Knn => (1_000_000, 32),
        };
        Size {
            rows,
            cols: Some(cols),
        }
    }

    /// Generates and persists the inputs, then times `repeat` fits, printing one result
    /// line each.
    pub fn run(
        self,
        session: &Session,
        engine: &str,
        size: Option<Size>,
        chunk: Option<usize>,
        repeat: usize,
        checks: &RunChecks,
    ) -> Result<(), Box<dyn Error>> {
        let size = size.unwrap_or_else(|| self.default_size());
        let (n, d) = (
            size.rows,
            size.cols.unwrap_or(self.default_size().cols.unwrap_or(1)),
        );
        self.check_rows(n)?;
        let inputs = self.prepare(session, n, d, chunk.unwrap_or(CHUNK_ROWS))?;
        let label = format!("{}x{d}", crate::workloads::fmt_size(n));
        for run in 0..repeat {
            let injected = checks.before();
            let before = crate::record::rss_mb();
            let started = std::time::Instant::now();
            let fitted = self.fit(session, &inputs)?;
            let seconds = started.elapsed().as_secs_f64();
            checks.after(session, run, injected)?;
            let digest = self.digest(session, &inputs, n, fitted)?;
            let record = Record::measured(
                self.name(),
                engine.to_string(),
                label.clone(),
                run,
                seconds,
                before,
                digest,
            );
            println!("{}", record.to_line()?);
        }
        Ok(())
    }

    /// knn's queries are its first 10,000 rows: fewer rows are an error.
    fn check_rows(self, n: usize) -> Result<(), String> {
        match self == LearnWorkload::Knn && n < QUERIES {
            true => Err(format!("learn_knn needs at least {QUERIES} rows, got {n}")),
            false => Ok(()),
        }
    }

    fn prepare(
        self,
        session: &Session,
        n: usize,
        d: usize,
        chunk: usize,
    ) -> tessera::Result<Inputs> {
        let rng = default_rng(SEED);
        let centres = rng.normal(0.0, 6.0, &[CENTRES, d]);
        let labels = rng.randint(0, CENTRES as i64, &[n]).rechunk(&[chunk]);
        // noise + centres[labels], elementwise (one fused task per chunk: no intermediate
        // to keep or spill beside the result).
        let centres = centres.execute(session)?.to_f64_vec();
        let labels = labels.reshape(&[-1, 1]);
        let mut x = rng.normal(0.0, 1.0, &[n, d]).rechunk(&[chunk, d]);
        for (c, centre) in centres.chunks(d).enumerate() {
            let row = tensor::from_vec(centre.to_vec(), &[1, d]);
            x = x.add(tensor::where_(&labels.eq(c as i64), &row, 0.0));
        }
        let x = x.persist(session)?;
        let other = match self {
            LearnWorkload::Logistic => {
                let w = default_rng(SEED + 1).normal(0.0, 1.0, &[d]);
                Some(x.matmul(&w).gt(0.0).astype(DType::F64).persist(session)?)
            }
            LearnWorkload::Knn => Some(
                x.slice(&[Slice::new(None, Some(QUERIES as isize), 1), Slice::all()])
                    .add(0.01)
                    .persist(session)?,
            ),
            _ => None,
        };
        Ok(Inputs { x, other })
    }

    fn fit(self, session: &Session, inputs: &Inputs) -> tessera::Result<Fitted> {
        let other = || {
            inputs.other.as_ref().ok_or_else(|| {
                tessera::Error::Runtime(format!("{}: its second input is missing", self.name()))
            })
        };
        Ok(match self {
            LearnWorkload::Kmeans => {
                let model = KMeans {
                    init: KMeansInit::Parallel,
                    max_iter: 10,
                    init_rounds: Some(2),
                    ..KMeans::new(CENTRES)
                };
                Fitted::Values(vec![model.fit(session, &inputs.x)?.inertia])
            }
            LearnWorkload::Pca => {
                let model = Pca {
                    n_components: Some(8),
                    solver: PcaSolver::Full,
                };
                Fitted::Values(model.fit(session, &inputs.x)?.svd.explained_variance)
            }
            LearnWorkload::Logistic => {
                let fit = LogisticRegression::default().fit(session, &inputs.x, other()?)?;
                let mut w = fit.coef;
                w.push(fit.intercept);
                Fitted::Weights(w)
            }
            LearnWorkload::Knn => {
                let found = kneighbors(session, &inputs.x, other()?, 10)?;
                Fitted::Values(vec![found.distances.to_f64_vec().iter().sum()])
            }
        })
    }

    /// `learn.py`'s digest, 4 significant digits: the inertia per row, the explained
    /// variances, the training accuracy (one job, outside the timed region), the summed
    /// distances.
    fn digest(
        self,
        session: &Session,
        inputs: &Inputs,
        n: usize,
        fitted: Fitted,
    ) -> Result<Value, Box<dyn Error>> {
        let values = match (self, fitted) {
            (LearnWorkload::Kmeans, Fitted::Values(v)) => vec![v[0] / n as f64],
            (LearnWorkload::Logistic, Fitted::Weights(mut w)) => {
                let intercept = w.pop().unwrap_or(0.0);
                let d = w.len();
                let predicted = inputs
                    .x
                    .matmul(&tensor::from_vec(w, &[d]))
                    .add(intercept)
                    .gt(0.0)
                    .astype(DType::F64);
                let labels = inputs.other.as_ref().ok_or("learn_logistic: no labels")?;
                let right = predicted.eq(labels).astype(DType::F64).mean();
                vec![right.execute(session)?.to_f64_vec()[0]]
            }
            (_, Fitted::Values(v)) => v,
            (w, Fitted::Weights(_)) => return Err(format!("{}: no digest", w.name()).into()),
        };
        Ok(Value::from(
            values
                .iter()
                .map(|&v| round_significant(v, 4))
                .collect::<Vec<_>>(),
        ))
    }
}

/// What a timed fit leaves for its digest.
enum Fitted {
    /// The digest's values before rounding.
    Values(Vec<f64>),
    /// Logistic regression's coefficients, then its intercept.
    Weights(Vec<f64>),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(w: LearnWorkload, session: &Session, n: usize, d: usize) -> Vec<f64> {
        let inputs = w.prepare(session, n, d, 7_000).expect("inputs");
        let fitted = w.fit(session, &inputs).expect("fit");
        let Value::Array(v) = w.digest(session, &inputs, n, fitted).expect("digest") else {
            panic!("digest is not a list")
        };
        v.iter().map(|x| x.as_f64().expect("number")).collect()
    }

    #[test]
    fn learn_workloads_fit_the_blobs() {
        let session = Session::builder()
            .threads(2)
            .progress(tessera::Progress::Never)
            .build()
            .expect("session");
        let (n, d) = (20_000, 8);
        // Unit noise around 8 well-separated centres: the inertia per row is about d.
        let kmeans = digest(LearnWorkload::Kmeans, &session, n, d);
        assert!((kmeans[0] / d as f64 - 1.0).abs() < 0.1, "{kmeans:?}");
        // Eight variances, descending; the centres' spread (6²) dwarfs the noise's.
        let pca = digest(LearnWorkload::Pca, &session, n, d);
        assert_eq!(pca.len(), 8);
        assert!(
            pca.windows(2).all(|p| p[0] >= p[1]) && pca[0] > 10.0,
            "{pca:?}"
        );
        // Labels from a hyperplane through the origin: nearly all rows classified right.
        let logistic = digest(LearnWorkload::Logistic, &session, n, d);
        assert!(logistic[0] > 0.97 && logistic[0] <= 1.0, "{logistic:?}");
        // Each query's nearest row is its own, 0.01 · √d away; the others are further.
        let knn = digest(LearnWorkload::Knn, &session, n, d);
        assert!(
            knn[0] > QUERIES as f64 * 10.0 * 0.01 * (d as f64).sqrt(),
            "{knn:?}"
        );
        assert!(LearnWorkload::Knn.check_rows(50).is_err());
        assert!(LearnWorkload::Kmeans.check_rows(50).is_ok());
    }
}
