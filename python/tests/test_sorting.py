"""sort_values against pandas: a direction per key, stable ties, nulls and NaN placed by
na_position, the same rows under any chunking, and pandas' errors for bad arguments."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tessera as ts


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(3)
    n = 500
    x = rng.choice([0.5, 1.0, -0.0, 0.0, np.nan], n)
    k = rng.choice(["a", "b", "c", None], n)
    return pa.table({
        "k": pa.array(k, type=pa.string()),
        "x": pa.array(x, type=pa.float64()),
        "v": pa.array(rng.integers(0, 3, n), type=pa.int64()),
        "id": pa.array(np.arange(n), type=pa.int64()),
    })


@pytest.mark.parametrize("rows", [None, 7, 100])
@pytest.mark.parametrize("ascending", [True, False, [False, True, True], [True, False, False],
                                       [False, False, True]])
@pytest.mark.parametrize("na_position", ["last", "first"])
def test_mixed_directions_equal_pandas_stable_sort(table, rows, ascending, na_position):
    by = ["k", "x", "v"]
    got = ts.from_arrow(table, rows_per_chunk=rows).sort_values(
        by, ascending=ascending, na_position=na_position).compute()
    want = table.to_pandas().sort_values(by, ascending=ascending, kind="stable",
                                         na_position=na_position)
    assert got["id"].tolist() == want["id"].tolist()


def test_numpy_bools_and_one_key(table):
    got = ts.from_arrow(table, rows_per_chunk=50).sort_values(
        "x", ascending=np.array([False])).compute()
    want = table.to_pandas().sort_values("x", ascending=[False], kind="stable")
    assert got["id"].tolist() == want["id"].tolist()


@pytest.mark.parametrize("ascending", [[True], [True, False, True], "False", None, 2])
def test_bad_ascending_raises_value_error_as_pandas(table, ascending):
    df = ts.from_arrow(table)
    # pandas raises too (a TypeError for 2, which it tries to iterate); Tessera a ValueError.
    with pytest.raises((ValueError, TypeError)):
        table.to_pandas().sort_values(["k", "x"], ascending=ascending)
    with pytest.raises(ValueError):
        df.sort_values(["k", "x"], ascending=ascending)


def test_bad_na_position_and_kind(table):
    df = ts.from_arrow(table)
    with pytest.raises(ValueError):
        df.sort_values("k", na_position="middle")
    with pytest.raises(ValueError):
        df.sort_values("k", kind="bogosort")
