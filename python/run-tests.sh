#!/usr/bin/env bash
# The Python package's test step (issue 15): makes a virtual environment in
# target/py-venv (reused when present), installs the pinned test packages, builds the
# extension ONCE in a debug build into the workspace's target/ (so the workspace's
# compiled dependencies are reused), and runs the pytest suite in python/tests.
#
# Needs Rust and CPython >= 3.9 (with its venv module; on Debian, python3-venv, which the
# script installs with apt-get when it runs as root and the module is missing).
# PYTHON picks the interpreter (default python3); extra arguments go to pytest.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
python="${PYTHON:-python3}"
venv="$root/target/py-venv"
start=$(date +%s)

if [ ! -x "$venv/bin/python" ]; then
    if ! "$python" -m venv "$venv" 2>/dev/null; then
        rm -rf "$venv"
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            echo "run-tests: installing python3-venv" >&2
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
        fi
        "$python" -m venv "$venv"
    fi
fi

# Install the pinned packages only when the list changed since the last install.
stamp="$venv/.requirements-test.txt"
if ! cmp -s "$here/requirements-test.txt" "$stamp"; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements-test.txt"
    cp "$here/requirements-test.txt" "$stamp"
fi

# One debug build of the extension, into the workspace's target/ (cargo reuses what
# `cargo build`/`cargo test` compiled there).
export CARGO_TARGET_DIR="$root/target"
(cd "$here" && VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" maturin develop --quiet)
"$venv/bin/python" -c "import tessera" # fails loudly if the build did not install

# The local-cluster test needs tessera-scheduler and tessera-worker: those that
# `cargo build`/`cargo test --workspace` left in target/debug (skipped when absent).
if [ -z "${TESSERA_BIN_DIR:-}" ] && [ -x "$root/target/debug/tessera-worker" ] && [ -x "$root/target/debug/tessera-scheduler" ]; then
    export TESSERA_BIN_DIR="$root/target/debug"
fi

# Ray binds to the host's address, and tests listen on loopback only: pytest runs in a
# network namespace of its own (loopback its only interface) where this user can make one
# (root, with util-linux's unshare and iproute2's ip); elsewhere test_ray.py is skipped.
netns=()
if unshare -n true 2>/dev/null && command -v ip >/dev/null; then
    netns=(unshare -n sh -c 'ip link set lo up && exec "$@"' netns)
else
    echo "run-tests: no network namespace here (needs root, unshare and ip): Ray tests skipped" >&2
fi

echo "run-tests: environment and build ready in $(( $(date +%s) - start )) s" >&2
cd "$here"
"${netns[@]}" "$venv/bin/python" -m pytest -q tests "$@"
echo "run-tests: done in $(( $(date +%s) - start )) s" >&2
