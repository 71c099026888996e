#!/usr/bin/env bash
# Issue 13's array targets in one run: the peers' pi (1e9), sincos and svd_compressed with
# Dask's threaded scheduler and reduce_mean with Polars, each followed by Tessera, and by
# Tessera with its own kernels capped at AVX2 (TESSERA_SIMD=avx2, engine "tessera-avx2");
# two interleaved rounds. One peers JSON line per run.
#
#   scripts/array-targets.sh RESULTS.jsonl
#
# Needs a release build (`cargo build --release`) and the peers' venv and data
# (../shared/peers: setup.sh, then `gen_data.py --only xy`). For measuring, never for CI.
set -uo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$(realpath -m "${1:?usage: array-targets.sh RESULTS.jsonl}")"
BENCH="${CARGO_TARGET_DIR:-$HERE/target}/release/tessera-bench"
PEERS="${PEERS_DIR:-$HERE/../shared/peers}"
PY="${PEERS_VENV:-/tmp/peers-venv}/bin/python"
tessera() {  # tessera REPEAT WORKLOAD ARGS...: at full width, then capped at AVX2
  local repeat=$1; shift
  "$BENCH" "$@" --repeat "$repeat" >> "$OUT"
  TESSERA_SIMD=avx2 "$BENCH" "$@" --repeat "$repeat" | sed 's/"tessera"/"tessera-avx2"/' >> "$OUT"
}
for round in 1 2; do
  (cd "$PEERS" && "$PY" pi.py --engine dask --size 1e9 --repeat 3) >> "$OUT"
  tessera 3 pi --size 1e9
  tessera 3 pi_rng --size 1e9
  (cd "$PEERS" && "$PY" sincos.py --engine dask --size 10000 --repeat 3) >> "$OUT"
  tessera 3 sincos --size 10000
  (cd "$PEERS" && "$PY" svd.py --engine dask --query compressed --repeat 3) >> "$OUT"
  tessera 3 svd_compressed
  (cd "$PEERS" && "$PY" reductions.py --engine polars --size 1e7 --query mean --repeat 5) >> "$OUT"
  tessera 5 reduce_mean --size 1e7
done
