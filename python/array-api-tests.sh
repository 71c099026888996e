#!/usr/bin/env bash
# Runs the array API standard's public conformance suite (data-apis/array-api-tests) on
# tessera.array_api: a measurement, not part of CI (it clones from GitHub). Uses the venv
# and the build of python/run-tests.sh (run that first). Extra arguments go to pytest,
# e.g. `python/array-api-tests.sh --max-examples 20`.
#
# Every dtype of the standard runs, and both extensions (linalg, fft). The cases that
# cannot pass are listed in array-api-xfails.txt, each with its reason; pytest's summary
# counts them as xfailed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
python="$root/target/py-venv/bin/python"
suite="$root/target/array-api-tests"
# The suite, pinned (its master on 2026-11-27), with the standard's stubs it pins.
suite_commit=55fcc60179efa2680ddd6cd926ddf17b83530e2b
# Where to clone them from (override both on a machine without GitHub, e.g. with mirrors).
suite_repo="${ARRAY_API_TESTS_REPO:-https://github.com/data-apis/array-api-tests}"
spec_repo="${ARRAY_API_SPEC_REPO:-https://github.com/data-apis/array-api}"

[ -x "$python" ] || { echo "run python/run-tests.sh first (it makes $python)" >&2; exit 1; }
if [ ! -d "$suite/.git" ]; then
    git clone -q "$suite_repo" "$suite"
fi
git -C "$suite" fetch -q origin 2>/dev/null || true
git -C "$suite" checkout -q --force "$suite_commit"
git -C "$suite" submodule init -q
git -C "$suite" config submodule.array_api_tests/array-api.url "$spec_repo"
git -C "$suite" -c protocol.file.allow=always submodule update -q  # (a local mirror too)
"$python" -m pip install --quiet --disable-pip-version-check "ndindex>=1.8" pytest-json-report

export ARRAY_API_TESTS_MODULE=tessera.array_api
export ARRAY_API_TESTS_VERSION=2024.12
cd "$suite"
# No deadline: reading an element back runs a job, and the suite reads many one by one.
"$python" -m pytest -q -p no:cacheprovider array_api_tests/ \
    --hypothesis-disable-deadline \
    --xfails-file "$here/array-api-xfails.txt" "$@"
