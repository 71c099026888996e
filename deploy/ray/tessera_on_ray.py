"""Tessera on an existing Ray cluster: installs the tessera wheel on every node for this
job (Ray's runtime_env), starts Tessera's scheduler and workers as Ray actors, and runs a
groupby and an SVD on them (see README.md here).

    python tessera_on_ray.py --address auto --wheel /shared/dist/tessera-...whl
"""

import argparse

import numpy as np
import ray

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--address", default="auto", help="the Ray cluster (ray.init's address)")
p.add_argument("--wheel", help="the tessera wheel every node installs (default: already installed)")
p.add_argument("--workers", type=int, help="worker actors (default: one per node)")
p.add_argument("--memory-limit", type=int, help="bytes each worker keeps in memory before spilling")
p.add_argument("--spill-dir", help="where each worker spills (a local disk of its node)")
a = p.parse_args()

ray.init(address=a.address, runtime_env={"pip": [a.wheel]} if a.wheel else None)
import tessera as ts  # noqa: E402  (after ray.init: the driver may use the same wheel)

with ts.Session.on_ray(workers=a.workers, memory_limit=a.memory_limit, spill_dir=a.spill_dir) as s:
    info = s.cluster_info()
    print(f"{info['workers']} Tessera workers, {info['nthreads']} threads")
    rng = np.random.default_rng(0)
    keys, values = rng.integers(0, 100, 1_000_000), rng.normal(size=1_000_000)
    df = ts.from_arrow(__import__("pyarrow").table({"k": keys, "v": values}), rows_per_chunk=100_000)
    print(df.groupby("k").agg(total=("v", "sum")).compute(s).head())
    x = ts.random.default_rng(1).random((200_000, 50)).rechunk((20_000, 50))
    print("top singular values:", ts.linalg.svd_compressed(x, k=5, seed=0)[1].compute(s))
