#!/usr/bin/env bash
# The distributed-mode benchmark of issue 14 in one run: each workload on in-process
# Tessera, on Tessera with 2 worker processes, and on Dask distributed with 2 worker
# processes, 3 timed runs each, workloads interleaved. One peers JSON line per run.
#
#   scripts/cluster-bench.sh RESULTS.jsonl
#
# Needs a release build (`cargo build --release`, which builds tessera-bench and the
# cluster programs beside it) and the peers' venv and data (../shared/peers: setup.sh,
# then `gen_data.py --only g1,y --g1 1e7`). For measuring, never for CI.
set -uo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$(realpath -m "${1:?usage: cluster-bench.sh RESULTS.jsonl}")"
BENCH="${CARGO_TARGET_DIR:-$HERE/target}/release/tessera-bench"
PEERS="${PEERS_DIR:-$HERE/../shared/peers}"
PY="${PEERS_VENV:-/tmp/peers-venv}/bin/python"
REPEAT="${REPEAT:-3}"
run() {  # one process, REPEAT timed runs; a failure becomes an "_error" line
  timeout 600 "$@" --repeat "$REPEAT" >> "$OUT" || \
    printf '{"workload": "_error", "cmd": "%s"}\n' "$*" >> "$OUT"
}
while IFS='|' read -r tessera peer; do
  run "$BENCH" $tessera
  run "$BENCH" $tessera --workers 2 --engine tessera-2w
  (cd "$PEERS" && PEERS_DASK_WORKERS=2 run "$PY" $peer)
done <<'WORKLOADS'
pi --size 1e8|pi.py --engine dask --size 1e8
sincos --size 10000|sincos.py --engine dask --size 10000
groupby_q1 --size 1e7|groupby.py --engine dask-np2 --size 1e7 --query q1
join_g1_y --size 1e7|join.py --engine dask --size 1e7 --query g1y
svd_compressed|svd.py --engine dask --query compressed
WORKLOADS
