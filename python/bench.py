"""Python benchmarks of Tessera in the ../shared/peers result-line format (engine
``tessera-py``), so Python-to-Python comparisons sit beside NumPy, pandas and Dask.

    python python/bench.py pi --size 1e8 --repeat 3
    python python/bench.py sincos --size 10000 --repeat 3
    python python/bench.py groupby_q1 --size 1e7 --repeat 3 --data /tmp/peers-data
    python python/bench.py tpch --sf 1 --repeat 3 --data /tmp/peers-data
    python python/bench.py groupby_q1 --cluster local:2      # on Session.local_cluster(2)
    python python/bench.py svd_compressed --cluster raysim:2 # on Ray, 2 simulated nodes

Each timed run prints one JSON line: workload, engine, size, seconds (the compute only),
peak_rss_mb, result_digest, run, rss_before_mb, load1 (and load_seconds for the frame
workloads). The frame workloads are the peers' and ``tessera-bench``'s: the Parquet input
is loaded and kept in the session first (``persist``, timed as load_seconds), then the
query is timed up to a ``pyarrow.Table`` of the result (Tessera's buffers, no copy);
``read_csv`` times the whole load of the G1 CSV. ``tpch`` (or ``tpch_q1``..``tpch_q22``) runs
the queries of ``tpch_queries.py`` on ``gen_data.py --tpch SF``'s tables (opened before the
timer) up to a pandas frame, with ``shared/peers/tpch.py``'s digest. Their data is ``gen_data.py``'s, under
``--data`` (default ``$PEERS_DATA`` or /tmp/peers-data). Build the extension optimised for
numbers worth comparing (``maturin develop --release``); a debug build is for smoke tests.

``learn_kmeans``, ``learn_pca``, ``learn_logistic`` and ``learn_knn`` are the peers'
(``learn.py --query kmeans|pca|logistic|knn``: the same blobs of seed 42, sizes
``ROWSxCOLS``, default 1e7x16, 1e7x64, 1e7x32 and 1e6x32), generated and persisted before
timing; the fit is timed (``tessera.learn.KMeans``: 8 clusters, k-means|| with 2 rounds,
10 Lloyd iterations; ``PCA``: 8 components, TSQR; ``LogisticRegression``: C=1, Newton to a
gradient of 1e-8; ``NearestNeighbors``: brute force, the 10 neighbours of the first 10,000
rows plus 0.01, fit and query timed), with the peers' digests.

``svd_compressed`` is the peers' (``svd.py --query compressed``: uniform [0, 1) data of
seed 42, chunks of 10,000 rows, k=10; default size 100000x5000), generated and persisted
before timing (load_seconds); Tessera's timed job computes the singular values only (U
and V are further jobs in the Python API), so it is for comparing Tessera's sessions, not
the peers. ``--cluster local:N`` runs on ``Session.local_cluster(N)``, ``ray:N`` on
``Session.on_ray(workers=N)`` (Ray as ``ray.init()`` finds it), ``raysim:N`` on N Ray nodes
simulated on this machine (``ray.cluster_utils.Cluster``, the cores shared out); the
engine is then ``tessera-py-local2`` etc., and peak_rss_mb is the client process's.
"""

import argparse
import gc
import json
import os
import resource
import time

import tessera as ts

SEED = 42  # the peers' seed for data generated inside a workload


def _num(s: str) -> int:
    return int(float(s))


def _fmt_size(n: int) -> str:
    m, e = f"{n:.0e}".split("e")
    return f"{m}e{int(e)}" if float(f"{m}e{e}") == n else str(n)


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def pi(n: int):
    """Monte Carlo pi: n points uniform in [-1, 1]^2 (generation is timed)."""
    p = ts.random.default_rng(SEED).uniform(-1, 1, size=(n, 2))
    return float((ts.sqrt((p ** 2).sum(axis=1)) < 1).sum().astype("float64") * 4 / n)


def sincos(n: int):
    """(sin(x)**2 + cos(x)**2 == 1).all() on an n x n uniform [0, 1) array."""
    x = ts.random.default_rng(SEED).random((n, n))
    return bool((ts.sin(x) ** 2 + ts.cos(x) ** 2 == 1).all())


WORKLOADS = {
    "pi": (pi, "1e8", _fmt_size, lambda r: round(r, 4)),
    "sincos": (sincos, "10000", lambda n: f"{n}x{n}", bool),
}


def _dval(x) -> object:
    """The peers' digest value: an exact int when integral, else 7 significant digits."""
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 2**53 else float(f"{x:.7g}")


def _sums(table, keep) -> list:
    """[rows] + the sum of each column whose name ``keep`` accepts, as digest values."""
    import pyarrow.compute as pc

    return [table.num_rows] + [_dval(pc.sum(table[c]).as_py() or 0) for c in table.column_names if keep(c)]


#: groupby queries: keys and {column: function}, as ../shared/peers/groupby.py.
GROUPBY = {
    "q1": (["id1"], {"v1": "sum"}),
    "q2": (["id1", "id2"], {"v1": "sum"}),
    "q3": (["id6"], {"v1": "sum", "v2": "sum", "v3": "sum"}),
    "q4": (["id3"], {"v1": "mean", "v3": "mean"}),
    "q5": (["id3"], {"v1": "max", "v2": "min"}),
}


def _g1(data: str, n: int, ext: str = "parquet") -> str:
    return f"{data}/G1_{_fmt_size(n)}_1e2_0_0.{ext}"


def _groupby(query: str):
    keys, aggs = GROUPBY[query]
    prepare = lambda data, n: [ts.read_parquet(_g1(data, n)).persist()]
    run = lambda frames: frames[0].groupby(keys, sort=False).agg(aggs).to_arrow()
    return prepare, run, lambda t: _sums(t, lambda c: c.startswith("v"))


def _read_csv_digest(table) -> list:
    import pyarrow.compute as pc

    v3 = pc.sum(table["v3"]).as_py()
    return [table.num_rows, int(pc.sum(table["v1"]).as_py()), float(f"{v3:.7g}")]


#: Frame workloads: (load the input, the timed query, the digest of its result). As the
#: peers' Dask does, a join and ``read_csv`` persist their result in the timed query; their
#: digest reads it after the timer stops.
FRAMES = {f"groupby_{q}": _groupby(q) for q in GROUPBY}
FRAMES["join_g1_y"] = (
    lambda data, n: [ts.read_parquet(_g1(data, n)).persist(), ts.read_parquet(f"{data}/Y_1e2.parquet").persist()],
    lambda frames: frames[0].merge(frames[1], on="id1").persist(),
    lambda kept: _sums(kept.to_arrow(), lambda c: c in ("v1", "v4")),
)
def _svd_input(_data, size):
    m, c = (int(float(v)) for v in size.split("x"))
    x = ts.random.default_rng(SEED).random((m, c)).rechunk((min(m, 10_000), c))
    return [x.persist()]


FRAMES["svd_compressed"] = (
    _svd_input,
    lambda inputs: ts.linalg.svd_compressed(inputs[0], k=10, seed=SEED)[1].compute(),
    lambda s: [float(f"{v:.4g}") for v in s[:10]],
)
def _blobs(_data, size):
    """The peers' learn data (``learn.py``): 8 centres in ``cols`` dimensions, unit noise,
    seed 42 (NumPy PCG64), chunks of 62,500 rows; persisted before timing."""
    import numpy as np

    n, d = (int(float(v)) for v in size.split("x"))
    rng = np.random.default_rng(SEED)
    centres = rng.standard_normal((8, d)) * 6
    x = centres[rng.integers(0, 8, n)] + rng.standard_normal((n, d))
    return [ts.asarray(x).rechunk((min(n, 62_500), d)).persist()]


def _labelled_blobs(data, size):
    """``_blobs`` with the peers' logistic labels: ``X @ w > 0``, ``w`` of seed 43."""
    import numpy as np

    [x] = _blobs(data, size)
    w = np.random.default_rng(SEED + 1).standard_normal(x.shape[1])
    y = ts.array_api.astype(x @ ts.asarray(w) > 0, ts.array_api.int64).persist()
    return [x, y]


FRAMES["learn_kmeans"] = (
    _blobs,
    lambda inputs: ts.learn.KMeans(n_clusters=8, max_iter=10, random_state=0, init_max_iter=2).fit(inputs[0]),
    lambda m: [float(f"{m.inertia_ / m.labels_.shape[0]:.4g}")],
)
FRAMES["learn_pca"] = (
    _blobs,
    lambda inputs: ts.learn.PCA(n_components=8, svd_solver="full").fit(inputs[0]),
    lambda m: [float(f"{v:.4g}") for v in m.explained_variance_],
)
FRAMES["learn_logistic"] = (
    _labelled_blobs,
    lambda inputs: (ts.learn.LogisticRegression(C=1.0).fit(inputs[0], inputs[1]), inputs),
    lambda fit: [float(f"{fit[0].score(fit[1][0], fit[1][1]):.4g}")],
)
FRAMES["learn_knn"] = (
    lambda data, size: (lambda x: [x, (x[:10_000] + 0.01).persist()])(_blobs(data, size)[0]),
    lambda inputs: ts.learn.NearestNeighbors(n_neighbors=10, algorithm="brute").fit(inputs[0]).kneighbors(inputs[1]),
    lambda found: [float(f"{found[0].sum():.4g}")],
)
FRAMES["read_csv"] = (
    lambda data, n: [_g1(data, n, "csv")],
    lambda paths: ts.read_csv(paths[0]).persist(),
    lambda kept: _read_csv_digest(kept.to_arrow()),
)


TPCH = ["tpch"] + [f"tpch_q{i}" for i in range(1, 23)]


def _tpch_digest(df) -> list:
    """``shared/peers/tpch.py``'s digest: rows, and the sum of the numeric columns
    (decimals as numbers) to 7 significant digits."""
    import decimal

    import pandas as pd

    total = 0.0
    for c in df.columns:
        col = df[c]
        if pd.api.types.is_bool_dtype(col):
            continue
        if pd.api.types.is_numeric_dtype(col):
            total += float(col.sum())
        else:  # decimals come to pandas as decimal.Decimal objects
            total += float(sum(v for v in col if isinstance(v, decimal.Decimal)))
    return [len(df), float(f"{total:.7g}") if total else 0]


def _tpch(a) -> None:
    """The TPC-H workloads: each query's runs, one result line each."""
    import tpch_queries

    queries = range(1, 23) if a.workload == "tpch" else [int(a.workload[len("tpch_q"):])]
    with _session(a):
        t0 = time.perf_counter()
        tables = tpch_queries.Tables(os.path.join(a.data, f"tpch-sf{a.sf}"))
        load = round(time.perf_counter() - t0, 4)
        for n in queries:
            for i in range(a.repeat):
                gc.collect()
                before = _rss_mb()
                t0 = time.perf_counter()
                out = tpch_queries.run(n, tables)
                dt = time.perf_counter() - t0
                print(json.dumps({
                    "workload": f"tpch_q{n}", "engine": _engine(a), "size": f"sf{a.sf}",
                    "seconds": round(dt, 4),
                    "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                    "result_digest": _tpch_digest(out), "run": i, "rss_before_mb": round(before, 1),
                    "load1": round(os.getloadavg()[0], 2), "load_seconds": load,
                }), flush=True)


def _session(a) -> ts.Session:
    """The session ``--cluster`` asks for (default: one in this process)."""
    if not a.cluster:
        return ts.Session(threads=a.threads, progress=False)
    kind, _, n = a.cluster.partition(":")
    n = int(n or 2)
    if kind == "local":
        return ts.Session.local_cluster(n, threads_per_worker=a.threads)
    if kind == "raysim":
        import ray
        from ray.cluster_utils import Cluster

        cores = max(1, (os.cpu_count() or 1) // n)
        sim = Cluster(initialize_head=True, head_node_args={"num_cpus": cores})
        for _ in range(n - 1):
            sim.add_node(num_cpus=cores)
        ray.init(address=sim.address, logging_level="WARNING", log_to_driver=False)
    if kind in ("ray", "raysim"):
        return ts.Session.on_ray(workers=n, cpus_per_worker=a.threads, progress=False)
    raise SystemExit(f"--cluster {a.cluster!r}: local:N, ray:N or raysim:N")


def _engine(a) -> str:
    return "tessera-py" + (f"-{a.cluster.replace(':', '')}" if a.cluster else "")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("workload", choices=sorted(WORKLOADS) + sorted(FRAMES) + TPCH)
    p.add_argument("--size", help="problem size (pi: points, sincos: side, frames: G1 rows)")
    p.add_argument("--data", default=os.environ.get("PEERS_DATA", "/tmp/peers-data"),
                   help="gen_data.py's folder (frame workloads)")
    p.add_argument("--repeat", type=int, default=1, help="timed runs (one JSON line each)")
    p.add_argument("--threads", type=int, help="worker threads (default: every core)")
    p.add_argument("--sf", default="1", help="TPC-H scale factor, as in DATA/tpch-sfSF (tpch)")
    p.add_argument("--cluster", help="local:N, ray:N or raysim:N (see above)")
    a = p.parse_args()
    if a.workload in TPCH:
        return _tpch(a)
    extra = {}
    if a.workload in FRAMES:
        prepare, query, digest = FRAMES[a.workload]
        if a.workload in ("svd_compressed", "learn_kmeans", "learn_pca", "learn_logistic", "learn_knn"):
            default = {"svd_compressed": "100000x5000", "learn_kmeans": "1e7x16", "learn_pca": "1e7x64",
                       "learn_logistic": "1e7x32", "learn_knn": "1e6x32"}
            n, size_label = a.size or default[a.workload], str
        else:
            n, size_label = _num(a.size or "1e7"), _fmt_size
    else:
        run, default, size_label, digest = WORKLOADS[a.workload]
        n = _num(a.size or default)
    with _session(a):
        if a.workload in FRAMES:
            t0 = time.perf_counter()
            inputs = prepare(a.data, n)
            extra["load_seconds"] = round(time.perf_counter() - t0, 4)
            run = lambda _: query(inputs)
        for i in range(a.repeat):
            gc.collect()
            before = _rss_mb()
            t0 = time.perf_counter()
            out = run(n)
            dt = time.perf_counter() - t0
            rec = {
                "workload": a.workload, "engine": _engine(a), "size": size_label(n),
                "seconds": round(dt, 4),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "result_digest": digest(out), "run": i, "rss_before_mb": round(before, 1),
                "load1": round(os.getloadavg()[0], 2), **extra,
            }
            del out
            print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
