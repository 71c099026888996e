#!/usr/bin/env bash
# A cluster from `pip install` alone (issue 54): builds the package's wheel (a debug build,
# reusing what python/run-tests.sh compiled into target/), installs it with pip into a new
# virtual environment, and from a clean environment (no Rust tree or cargo on PATH, no
# TESSERA_BIN_DIR, no pandas or pyarrow) runs python/install_check.py with it: the
# console scripts, a manual scheduler + worker, and Session.local_cluster with a frame
# job, leaving no process behind.
#
# Needs what python/run-tests.sh needs (it makes target/py-venv, whose maturin builds the
# wheel); the wheel's one dependency, NumPy, comes from pip (its cache, after run-tests).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
start=$(date +%s)
tools="$root/target/py-venv"
if [ ! -x "$tools/bin/maturin" ]; then
    "$here/run-tests.sh" --collect-only -q >/dev/null
fi

wheels="$root/target/install-test/wheels"
venv="$root/target/install-test/venv"
rm -rf "$root/target/install-test"
mkdir -p "$wheels"
(cd "$here" && CARGO_TARGET_DIR="$root/target" "$tools/bin/maturin" build --quiet --profile dev \
    --strip --interpreter "$tools/bin/python" --out "$wheels")
wheel=$(ls "$wheels"/tessera-*.whl)
"$tools/bin/python" -m venv "$venv"
numpy=$(grep -E '^numpy==' "$here/requirements-test.txt")
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$numpy" "$wheel"
echo "install-test: $(basename "$wheel") installed in $(( $(date +%s) - start )) s" >&2

# A clean environment: the new venv's bin first, then the system's; nothing of the Rust
# tree. Run from an empty folder so that `import tessera` is the installed package.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && env -i HOME="$HOME" PATH="$venv/bin:/usr/bin:/bin" TMPDIR="${TMPDIR:-/tmp}" \
    "$venv/bin/python" "$here/install_check.py")
echo "install-test: passed in $(( $(date +%s) - start )) s" >&2
