"""python/bench.py's frame workloads: each prints one result line whose digest equals the
one pandas computes on the same small G1-shaped data (the peers' digest rules)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench.py"
ROWS = 1000


def dval(x):
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 2**53 else float(f"{x:.7g}")


@pytest.fixture(scope="module")
def g1(tmp_path_factory):
    """A G1-shaped table (gen_data.py's columns) as Parquet and CSV, and Y."""
    d = tmp_path_factory.mktemp("peers")
    rng = np.random.default_rng(5)
    k = 10
    df = pd.DataFrame({
        "id1": [f"id{i:03d}" for i in rng.integers(1, k + 1, ROWS)],
        "id2": [f"id{i:03d}" for i in rng.integers(1, k + 1, ROWS)],
        "id3": [f"id{i:010d}" for i in rng.integers(1, ROWS // k + 1, ROWS)],
        "id4": rng.integers(1, k + 1, ROWS),
        "id5": rng.integers(1, k + 1, ROWS),
        "id6": rng.integers(1, ROWS // k + 1, ROWS),
        "v1": rng.integers(1, 6, ROWS),
        "v2": rng.integers(1, 16, ROWS),
        "v3": np.round(rng.uniform(0, 100, ROWS), 6),
    })
    df.to_parquet(d / "G1_1e3_1e2_0_0.parquet")
    df.to_csv(d / "G1_1e3_1e2_0_0.csv", index=False)
    y = pd.DataFrame({"id1": [f"id{i:03d}" for i in range(1, 11)], "v4": np.arange(10) * 1.5})
    y.to_parquet(d / "Y_1e2.parquet")
    return d, df, y


def run_bench(workload, data, size=ROWS, cluster=None, threads=2):
    extra = ["--cluster", cluster] if cluster else []
    out = subprocess.run(
        [sys.executable, str(BENCH), workload, "--size", str(size), "--data", str(data),
         "--repeat", "2", "--threads", str(threads), *extra],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["run"] for r in lines] == [0, 1]
    engine = "tessera-py" + (f"-{cluster.replace(':', '')}" if cluster else "")
    for r in lines:
        assert r["workload"] == workload and r["engine"] == engine
        assert r["size"] == ("1e3" if size == ROWS else size)
        assert r["seconds"] >= 0 and "load_seconds" in r
    return lines[0]["result_digest"]


@pytest.mark.parametrize("query", ["q1", "q2", "q3", "q4", "q5"])
def test_groupby_digests_equal_pandas(g1, query):
    data, df, _ = g1
    keys, aggs = {
        "q1": (["id1"], {"v1": "sum"}),
        "q2": (["id1", "id2"], {"v1": "sum"}),
        "q3": (["id6"], {"v1": "sum", "v2": "sum", "v3": "sum"}),
        "q4": (["id3"], {"v1": "mean", "v3": "mean"}),
        "q5": (["id3"], {"v1": "max", "v2": "min"}),
    }[query]
    r = df.groupby(keys).agg(aggs)
    want = [len(r)] + [dval(r[c].sum()) for c in r.columns]
    got = run_bench(f"groupby_{query}", data)
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1:], want[1:], rtol=1e-6)


def test_join_and_read_csv_digests_equal_pandas(g1):
    data, df, y = g1
    j = df.merge(y, on="id1")
    got = run_bench("join_g1_y", data)
    assert got[0] == len(j)
    np.testing.assert_allclose(got[1:], [dval(j.v1.sum()), dval(j.v4.sum())], rtol=1e-6)
    got = run_bench("read_csv", data)
    assert got[:2] == [ROWS, int(df.v1.sum())]
    np.testing.assert_allclose(got[2], df.v3.sum(), rtol=1e-6)


def test_a_local_cluster_gives_the_in_process_digests(g1):
    data, df, _ = g1
    assert run_bench("groupby_q1", data, cluster="local:2", threads=1)[0] == df.id1.nunique()
    # svd_compressed: seeded data, so the same singular values in both sessions; the
    # largest one of a uniform [0, 1) matrix is near sqrt(rows * cols) / 2.
    here = run_bench("svd_compressed", data, size="3000x40")
    there = run_bench("svd_compressed", data, size="3000x40", cluster="local:2", threads=1)
    assert len(here) == 10
    np.testing.assert_allclose(there, here, rtol=1e-3)
    assert abs(here[0] - np.sqrt(3000 * 40) / 2) < 0.05 * here[0]


def test_learn_knn_digest_equals_scikit_learn(g1):
    """learn_knn: the peers' blobs (seed 42) and queries, the digest scikit-learn's brute
    force gives on the same data."""
    neighbors = pytest.importorskip("sklearn.neighbors")
    data, _, _ = g1
    rng = np.random.default_rng(42)
    centres = rng.standard_normal((8, 8)) * 6
    x = centres[rng.integers(0, 8, 20_000)] + rng.standard_normal((20_000, 8))
    dist, _ = neighbors.NearestNeighbors(n_neighbors=10, algorithm="brute").fit(x).kneighbors(x[:10_000] + 0.01)
    assert run_bench("learn_knn", data, size="20000x8") == [float(f"{dist.sum():.4g}")]
