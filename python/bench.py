"""Python benchmarks of Tessera in the ../shared/peers result-line format (engine
``tessera-py``), so Python-to-Python comparisons sit beside NumPy, pandas and Dask.

    python python/bench.py pi --size 1e8 --repeat 3
    python python/bench.py sincos --size 10000 --repeat 3

Each timed run prints one JSON line: workload, engine, size, seconds (the compute only),
peak_rss_mb, result_digest, run, rss_before_mb, load1. Build the extension optimised for
numbers worth comparing (``maturin develop --release``); a debug build is for smoke tests.
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("workload", choices=sorted(WORKLOADS))
    p.add_argument("--size", help="problem size (pi: points, sincos: side)")
    p.add_argument("--repeat", type=int, default=1, help="timed runs (one JSON line each)")
    p.add_argument("--threads", type=int, help="worker threads (default: every core)")
    a = p.parse_args()
    run, default, size_label, digest = WORKLOADS[a.workload]
    n = _num(a.size or default)
    with ts.Session(threads=a.threads, progress=False):
        for i in range(a.repeat):
            gc.collect()
            before = _rss_mb()
            t0 = time.perf_counter()
            out = run(n)
            dt = time.perf_counter() - t0
            rec = {
                "workload": a.workload, "engine": "tessera-py", "size": size_label(n),
                "seconds": round(dt, 4),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "result_digest": digest(out), "run": i, "rss_before_mb": round(before, 1),
                "load1": round(os.getloadavg()[0], 2),
            }
            print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
