"""Shared fixtures: one small session for the whole run (sessions start actor threads)."""

import os

import pytest

# scikit-learn's array API mode needs SciPy's, which is read when SciPy is first imported.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import tessera as ts


@pytest.fixture(scope="session")
def session():
    s = ts.Session(threads=2, chunk_bytes=1 << 16)
    yield s
    s.close()


#: Chunk shapes the array tests run under (None: automatic).
CHUNKINGS = [None, 1, 3, 7]
