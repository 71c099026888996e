"""CuPy beside Tessera on the GPU: the peers' pi and sincos workloads written as a CuPy user
writes them (NumPy code with `cupy` for `numpy`), timed like shared/peers (one JSON line per
run, the compute only, the device synchronised before the clock stops).

    python3 scripts/gpu_peers.py pi 1e10 5
    python3 scripts/gpu_peers.py sincos 10000 5
    python3 scripts/gpu_peers.py matmul 8192 5      # float64 A @ B, generated on the device
    python3 scripts/gpu_peers.py groupby_q1 1e8 5   # sum(v1) by id1 with bincount, data on the device

pi draws its points in batches of 5e8 (a (1e10, 2) float64 sample is 160 GB); the first run
includes CuPy's kernel compilation, so read the later ones.
"""
import json
import resource
import sys
import time

import cupy as cp

SEED = 42
BATCH = 500_000_000


def pi(n):
    rng = cp.random.default_rng(SEED)
    inside = 0
    left = n
    while left:
        b = min(BATCH, left)
        x = rng.random((b, 2)) * 2.0 - 1.0
        inside += int(((x * x).sum(axis=1) ** 0.5 < 1.0).sum())
        left -= b
    return float(f"{4.0 * inside / n:.7g}")


def sincos(n):
    x = cp.random.default_rng(SEED).random((n, n))
    return bool((cp.sin(x) ** 2 + cp.cos(x) ** 2 == 1).all())


def matmul(n):
    rng = cp.random.default_rng(SEED)
    c = rng.random((n, n)) @ rng.random((n, n))
    return float(f"{float(c[0, 0]):.7g}")


_Q1 = {}


def q1_data(n):
    """id1 as integer codes 0..99 and v1 in 1..5, on the device (made once, untimed)."""
    if n not in _Q1:
        rng = cp.random.default_rng(SEED)
        _Q1[n] = (rng.integers(0, 100, n), rng.integers(1, 6, n))
    return _Q1[n]


def groupby_q1(n):
    # CuPy has no groupby: with id1 already dictionary codes, bincount with weights is
    # the sum by group (an easier problem than Tessera's, which hashes the strings).
    codes, v1 = q1_data(n)
    sums = cp.bincount(codes, weights=v1, minlength=100)
    return [int((sums > 0).sum()), int(sums.sum())]


def main():
    workload, size, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    n = int(float(size))
    run = {"pi": pi, "sincos": sincos, "matmul": matmul, "groupby_q1": groupby_q1}[workload]
    label = size if workload in ("pi", "groupby_q1") else f"{n}x{n}"
    if workload == "groupby_q1":
        q1_data(n)
    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    for i in range(runs):
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        digest = run(n)
        cp.cuda.Device().synchronize()
        seconds = time.perf_counter() - t
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps({"workload": workload, "engine": f"cupy-{cp.__version__}", "size": label,
                          "seconds": round(seconds, 6), "peak_rss_mb": round(rss, 1),
                          "result_digest": digest, "run": i, "device": device}), flush=True)


if __name__ == "__main__":
    main()
