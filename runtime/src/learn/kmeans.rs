//! K-means: k-means|| initialisation (Bahmani et al., as Mars and dask-ml) and Lloyd
//! iterations, each one job over the chunked data ([`cluster_stats`]: every row's nearest
//! centre, and per centre the sum and count of its rows, in one pass). The data stays in
//! the session's storage; only the centres (`k` rows) travel to this process.

use super::host::{fetch, host_matrix, kept_f64, matrix_shape, HostRng};
use super::passes::cluster_stats;
use crate::error::{Error, Result};
use crate::session::Session;
use crate::tensor::random::default_rng;
use crate::tensor::Tensor;
use tessera_kernels::{DType, HostTensor};

/// How [`KMeans`] chooses the centres it starts from.
#[derive(Clone, Debug, PartialEq)]
pub enum KMeansInit {
    /// k-means|| (scalable k-means++): candidates oversampled by their share of the cost
    /// in a few passes, then reduced to `k` by weighted k-means++ in this process.
    Parallel,
    /// `k` distinct rows drawn uniformly.
    Random,
    /// These centres (`k × columns`, `float64`).
    Centres(HostTensor),
}

/// K-means clustering with scikit-learn's parameters (`KMeans(n_clusters, init, n_init,
/// max_iter, tol, random_state)`, and dask-ml's `oversampling_factor` and `init_max_iter`).
///
/// Each Lloyd iteration is one job; iterations stop once the centres move (in summed
/// squared distance) no more than `tol` times the data's mean variance, or after
/// `max_iter`. An empty cluster keeps its centre. Deterministic for a `seed` under any
/// chunking: the draws are Tessera's counter-based generator, each row's distances are
/// summed term by term, and the sums differ across chunkings only in the last bits.
#[derive(Clone, Debug, PartialEq)]
pub struct KMeans {
    /// Clusters to find (`k`).
    pub n_clusters: usize,
    /// How the centres start.
    pub init: KMeansInit,
    /// Runs from different starting centres; the one of least inertia is kept.
    pub n_init: usize,
    /// Lloyd iterations at most per run.
    pub max_iter: usize,
    /// The convergence threshold, relative to the data's mean variance.
    pub tol: f64,
    /// The seed of every random choice.
    pub seed: u64,
    /// k-means||: candidates drawn per round, in multiples of `k`.
    pub oversampling_factor: f64,
    /// k-means||: rounds of candidates [default: `ln` of the first cost, between 1 and 8].
    pub init_rounds: Option<usize>,
}

impl KMeans {
    /// `k` clusters with scikit-learn's defaults (k-means||, one run, at most 300
    /// iterations, `tol` 1e-4, seed 0).
    pub fn new(n_clusters: usize) -> Self {
        KMeans {
            n_clusters,
            init: KMeansInit::Parallel,
            n_init: 1,
            max_iter: 300,
            tol: 1e-4,
            seed: 0,
            oversampling_factor: 2.0,
            init_rounds: None,
        }
    }
}

/// A fitted [`KMeans`].
#[derive(Clone, Debug, PartialEq)]
pub struct KMeansFit {
    /// The centres (`k × columns`, `float64`).
    pub centres: HostTensor,
    /// The sum over the rows of the squared distance to their nearest centre.
    pub inertia: f64,
    /// Lloyd iterations of the kept run.
    pub n_iter: usize,
}

/// Centres as `k` rows of `cols` values, C order.
struct Centres {
    values: Vec<f64>,
    cols: usize,
}

impl Centres {
    fn count(&self) -> usize {
        self.values.len() / self.cols
    }

    fn tensor(&self) -> Tensor {
        crate::tensor::from_vec(self.values.clone(), &[self.count(), self.cols])
    }

    fn row(&self, i: usize) -> &[f64] {
        &self.values[i * self.cols..(i + 1) * self.cols]
    }
}

/// The squared Euclidean distance of every row of `x` to every row of `centres` (`rows ×
/// k`, lazy, clipped at zero): `|x|² − 2 x·c + |c|²` through a matrix product, for
/// predicting and sampling (the fit's assignments sum each distance term by term).
pub fn squared_distances(x: &Tensor, centres: &Tensor) -> Tensor {
    distances_with_norms(x, &x.mul(x).sum_axis(1), centres)
}

fn distances_with_norms(x: &Tensor, sq_norms: &Tensor, centres: &Tensor) -> Tensor {
    let x = x.astype(DType::F64);
    let c = centres.astype(DType::F64);
    let cross = x.matmul(&c.transpose());
    let c_norms = c.mul(&c).sum_axis(1).reshape(&[1, -1]);
    sq_norms
        .reshape(&[-1, 1])
        .sub(cross.mul(2.0))
        .add(c_norms)
        .maximum(0.0)
}

impl KMeans {
    /// Computes the clusters of the rows of the matrix `x` on `session`.
    ///
    /// InvalidArgument for `n_clusters` outside `1..=rows`, `n_init` or `max_iter` of 0,
    /// initial centres of another shape, or data holding NaN; Shape for a non-matrix.
    pub fn fit(&self, session: &Session, x: &Tensor) -> Result<KMeansFit> {
        let (n, d) = matrix_shape(x, "k-means: the data")?;
        let k = self.n_clusters;
        if k == 0 || k > n {
            return Err(Error::InvalidArgument(format!(
                "k-means: n_clusters = {k} must be between 1 and the {n} samples"
            )));
        }
        if self.n_init == 0 || self.max_iter == 0 {
            return Err(Error::InvalidArgument(
                "k-means: n_init and max_iter must be at least 1".into(),
            ));
        }
        let x = kept_f64(x, session)?;
        let variance = fetch(&x.var_axis(0, 0).mean(), session)?[0];
        let mut best: Option<(Centres, f64, usize)> = None;
        for run in 0..self.n_init as u64 {
            let seed = self.seed.wrapping_add(7919u64.wrapping_mul(run));
            let start = self.initial(session, &x, n, d, seed)?;
            let (centres, inertia, n_iter) = self.lloyd(session, &x, start, self.tol * variance)?;
            if best.as_ref().is_none_or(|b| inertia < b.1) {
                best = Some((centres, inertia, n_iter));
            }
        }
        let (centres, inertia, n_iter) =
            best.ok_or_else(|| Error::Runtime("k-means: no run".into()))?;
        Ok(KMeansFit {
            centres: host_matrix(centres.values, k, d)?,
            inertia,
            n_iter,
        })
    }

    /// The starting centres of one run.
    fn initial(
        &self,
        session: &Session,
        x: &Tensor,
        n: usize,
        d: usize,
        seed: u64,
    ) -> Result<Centres> {
        let k = self.n_clusters;
        let mut rng = HostRng::new(seed);
        match &self.init {
            KMeansInit::Centres(c) => {
                if c.shape() != [k, d] {
                    return Err(Error::InvalidArgument(format!(
                        "k-means: initial centres of shape {:?}, expected [{k}, {d}]",
                        c.shape()
                    )));
                }
                Ok(Centres {
                    values: c.to_f64_vec(),
                    cols: d,
                })
            }
            KMeansInit::Random => rows_of(session, x, &rng.distinct(n, k), d),
            KMeansInit::Parallel => self.parallel(session, x, n, d, seed, &mut rng),
        }
    }

    /// k-means||: oversample `oversampling_factor × k` rows per round by their share of
    /// the cost, weight the candidates by the rows nearest each, and reduce them to `k`
    /// by weighted k-means++ here.
    fn parallel(
        &self,
        session: &Session,
        x: &Tensor,
        n: usize,
        d: usize,
        seed: u64,
        rng: &mut HostRng,
    ) -> Result<Centres> {
        let k = self.n_clusters;
        let mut centres = rows_of(session, x, &[rng.below(n)], d)?;
        let draws = default_rng(seed);
        let sq_norms = x.mul(x).sum_axis(1).persist(session)?;
        let mut cost = stats(session, x, &centres)?.cost;
        let rounds = self
            .init_rounds
            .unwrap_or_else(|| (cost.max(2.0).ln().ceil() as usize).clamp(1, 8));
        let ell = self.oversampling_factor * k as f64;
        for _ in 0..rounds {
            if cost <= 0.0 {
                break;
            }
            let nearest = distances_with_norms(x, &sq_norms, &centres.tensor()).min_axis(1);
            let picked = draws.random(&[n]).lt(nearest.mul(ell / cost));
            let rows: Vec<usize> = picked
                .execute(session)?
                .as_slice::<bool>()
                .ok_or_else(|| Error::Runtime("k-means||: the draws are not bool".into()))?
                .iter()
                .enumerate()
                .filter_map(|(i, &p)| p.then_some(i))
                .collect();
            if !rows.is_empty() {
                let more = rows_of(session, x, &rows, d)?;
                centres.values.extend(more.values);
            }
            cost = stats(session, x, &centres)?.cost;
        }
        if centres.count() <= k {
            let extra = rng.distinct(n, k - centres.count());
            if !extra.is_empty() {
                centres
                    .values
                    .extend(rows_of(session, x, &extra, d)?.values);
            }
            return Ok(centres);
        }
        let weights = stats(session, x, &centres)?.counts;
        Ok(weighted_kmeans_pp(&centres, &weights, k, rng))
    }

    /// Lloyd iterations from `centres`: (centres, inertia, iterations).
    fn lloyd(
        &self,
        session: &Session,
        x: &Tensor,
        mut centres: Centres,
        tol: f64,
    ) -> Result<(Centres, f64, usize)> {
        let d = centres.cols;
        let mut iterations = 0;
        for it in 1..=self.max_iter {
            iterations = it;
            let s = stats(session, x, &centres)?;
            let sums = s.sums.to_f64_vec();
            let mut shift = 0.0;
            for (c, &count) in s.counts.iter().enumerate() {
                if count > 0.0 {
                    for j in 0..d {
                        let moved = sums[c * d + j] / count;
                        shift += (moved - centres.values[c * d + j]).powi(2);
                        centres.values[c * d + j] = moved;
                    }
                }
            }
            if shift <= tol {
                break;
            }
        }
        let inertia = stats(session, x, &centres)?.cost;
        Ok((centres, inertia, iterations))
    }
}

/// One [`cluster_stats`] pass; a typed error where the data holds NaN.
fn stats(session: &Session, x: &Tensor, centres: &Centres) -> Result<super::ClusterStats> {
    let s = cluster_stats(session, x, &centres.tensor())?;
    if s.cost.is_nan() {
        return Err(Error::InvalidArgument("k-means: the data holds NaN".into()));
    }
    Ok(s)
}

/// The rows `rows` of `x` (`d` columns), computed.
fn rows_of(session: &Session, x: &Tensor, rows: &[usize], d: usize) -> Result<Centres> {
    let rows: Vec<i64> = rows.iter().map(|&r| r as i64).collect();
    Ok(Centres {
        values: fetch(&x.take_axis(&rows, 0), session)?,
        cols: d,
    })
}

/// Greedy k-means++ over a few weighted `points` (the k-means|| candidates), in this
/// process: each new centre is the best of `2 + ln k` draws (the one leaving the least
/// weighted cost), as scikit-learn's k-means++ chooses, so that two centres rarely land
/// in one cluster.
fn weighted_kmeans_pp(points: &Centres, weights: &[f64], k: usize, rng: &mut HostRng) -> Centres {
    let m = points.count();
    let sq = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>();
    let total: f64 = weights.iter().sum();
    let first = if total > 0.0 {
        rng.weighted(weights, total)
    } else {
        0
    };
    let mut chosen = vec![first];
    let mut nearest: Vec<f64> = (0..m)
        .map(|i| sq(points.row(i), points.row(first)))
        .collect();
    let trials = 2 + (k as f64).ln() as usize;
    while chosen.len() < k {
        let mass: Vec<f64> = weights.iter().zip(&nearest).map(|(w, d)| w * d).collect();
        let total: f64 = mass.iter().sum();
        if total <= 0.0 {
            // Every candidate coincides with a chosen one: the first not yet chosen.
            chosen.push((0..m).find(|i| !chosen.contains(i)).unwrap_or(0));
            continue;
        }
        // The cost left with each drawn candidate added, and the candidate's distances.
        let (next, closer) = (0..trials)
            .map(|_| {
                let c = rng.weighted(&mass, total);
                let closer: Vec<f64> = (0..m)
                    .map(|i| nearest[i].min(sq(points.row(i), points.row(c))))
                    .collect();
                let cost: f64 = weights.iter().zip(&closer).map(|(w, d)| w * d).sum();
                (cost, c, closer)
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, c, closer)| (c, closer))
            .unwrap_or((0, nearest.clone()));
        chosen.push(next);
        nearest = closer;
    }
    Centres {
        values: chosen
            .iter()
            .flat_map(|&i| points.row(i).to_vec())
            .collect(),
        cols: points.cols,
    }
}
