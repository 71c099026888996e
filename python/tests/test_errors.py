"""Every documented error path raises its documented exception (Tessera's and the standard
base), and the session stays usable after it."""

import numpy as np
import pandas as pd
import pytest

import tessera as ts


def test_shape_mismatch_is_a_value_error(session):
    with pytest.raises(ts.TesseraValueError) as e:
        ts.ones((2, 3)) + ts.ones((4,))
    assert isinstance(e.value, ValueError) and isinstance(e.value, ts.TesseraError)
    with pytest.raises(ValueError):
        ts.ones(6).reshape(4, 2)
    with pytest.raises(ValueError):
        ts.ones((2, 3)) @ ts.ones((2, 3))
    with pytest.raises(ValueError):
        ts.zeros(-1)
    # The session is still usable.
    assert float(ts.ones(3).sum().compute(session)) == 3.0


def test_axis_out_of_range_is_value_and_index_error():
    with pytest.raises(ts.TesseraAxisError) as e:
        ts.ones((2, 3)).sum(axis=2)
    assert isinstance(e.value, ValueError) and isinstance(e.value, IndexError)


def test_bad_indices_are_index_errors():
    x = ts.ones((3, 4))
    with pytest.raises(IndexError):
        x[3]
    with pytest.raises(IndexError):
        x[0, 0, 0]
    with pytest.raises(ts.TesseraValueError):
        x[::0]
    with pytest.raises(IndexError):
        x[ts.ones(4) > 0]
    with pytest.raises(IndexError):
        x[np.ones((3, 5), dtype=bool)]


def test_dtype_errors_are_type_errors():
    with pytest.raises(ts.TesseraTypeError) as e:
        ts.ones(3).astype("float16")
    assert isinstance(e.value, TypeError)
    with pytest.raises(TypeError):
        ts.ones(3, dtype="float32") & ts.ones(3, dtype="float32")
    with pytest.raises(TypeError):
        ts.asarray(np.array(["a", "b"]))
    with pytest.raises(TypeError):
        ts.ones(3) + "x"


def test_empty_reduction_is_a_value_error(session):
    with pytest.raises(ValueError, match="identity"):
        ts.zeros(0).max().compute(session)
    assert ts.zeros(0).sum().compute(session) == 0


def test_missing_column_is_a_key_error():
    df = ts.from_pandas(pd.DataFrame({"a": [1, 2]}))
    with pytest.raises(ts.ColumnNotFoundError) as e:
        df["nope"]
    assert isinstance(e.value, KeyError) and "nope" in str(e.value)
    with pytest.raises(KeyError):
        df[["a", "nope"]]
    with pytest.raises(KeyError):
        df.groupby("nope").sum()
    with pytest.raises(AttributeError):
        df.nope


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(ts.TesseraFileNotFoundError) as e:
        ts.read_csv(tmp_path / "missing.csv")
    assert isinstance(e.value, FileNotFoundError)
    with pytest.raises(FileNotFoundError):
        ts.read_parquet(tmp_path / "missing.parquet")


def test_malformed_csv_is_a_value_error(tmp_path, session):
    p = tmp_path / "bad.csv"
    # Past the first MiB, which schema inference reads: b is inferred int64.
    p.write_text("a,b\n" + "1,2\n" * 400_000 + "3,x\n" + "4,5\n" * 10)
    df = ts.read_csv(p)
    with pytest.raises(ts.TesseraValueError, match="line 400002"):
        df.assign(c=df.a + df.b).compute(session)


def test_budget_that_cannot_be_met_is_a_memory_error(tmp_path):
    # One 4 MiB chunk: neither 1 MiB of memory nor 1 MiB of disk can take it. (Many small
    # chunks of random numbers are no test: storage may drop them instead of spilling them,
    # as computing them again is cheaper, so whether the budgets are met at all depends on
    # the spill rate storage measured: 3 runs in 30 succeeded.)
    with ts.Session(threads=1, memory_budget=1 << 20, disk_budget=1 << 20, spill_dir=str(tmp_path),
                    chunk_bytes=4 << 20) as s:
        with pytest.raises(ts.TesseraMemoryError, match="disk budget of 1048576 bytes") as e:
            ts.random.default_rng(0).uniform(size=(1 << 19,)).compute(s)
        assert isinstance(e.value, MemoryError)


def test_bad_arguments():
    df = ts.from_pandas(pd.DataFrame({"a": [1, 2]}))
    with pytest.raises(ValueError):
        df.merge(df, how="sideways", on="a")
    with pytest.raises(ValueError):
        df.groupby("a").agg({"a": "median"})
    with pytest.raises(TypeError):
        df.groupby("a").agg(x=("a",))
    with pytest.raises(ValueError):
        ts.from_pandas(pd.DataFrame({"a": [1]}), rows_per_chunk=0)


def test_closed_session_raises_compute_error():
    s = ts.Session(threads=1)
    s.close()
    assert s.closed
    with pytest.raises(ts.ComputeError):
        ts.ones(2).compute(s)
    s.close()  # twice is fine
