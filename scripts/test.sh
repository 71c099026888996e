#!/usr/bin/env bash
# Every test of the project, as the README's test command: the Rust crates (unit,
# integration and doc tests), the Python package's pytest suite (python/run-tests.sh:
# a venv with pinned packages, one debug build of the extension), the wheel installed
# with pip in a new venv running a cluster from its own commands (python/install-test.sh)
# and the performance
# report in headless Chromium (scripts/browser-test.sh: installs Debian's chromium if
# missing). Works on a fresh machine with Rust and CPython 3.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace
python/run-tests.sh
python/install-test.sh
scripts/browser-test.sh
