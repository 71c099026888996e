"""Property-based checks (hypothesis): random shapes, chunkings, slices and reductions
against NumPy."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tessera as ts

shapes = st.lists(st.integers(1, 7), min_size=1, max_size=3).map(tuple)


@st.composite
def arrays_and_chunks(draw):
    shape = draw(shapes)
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) * 1.5 - 7
    chunks = tuple(draw(st.integers(1, n)) for n in shape)
    return a, chunks


@st.composite
def slices(draw, shape):
    def one(n):
        start = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
        stop = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
        step = draw(st.one_of(st.none(), st.integers(-3, 3).filter(bool)))
        return slice(start, stop, step)

    return tuple(one(n) for n in shape)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_slices_match_numpy(session, data):
    a, chunks = data.draw(arrays_and_chunks())
    key = data.draw(slices(a.shape))
    got = ts.asarray(a).rechunk(chunks)[key].compute(session)
    np.testing.assert_array_equal(got, a[key])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_reductions_match_numpy(session, data):
    a, chunks = data.draw(arrays_and_chunks())
    axis = data.draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1)))
    op = data.draw(st.sampled_from(["sum", "mean", "min", "max", "std", "argmax"]))
    keepdims = data.draw(st.booleans()) and op != "argmax"
    x = ts.asarray(a).rechunk(chunks)
    kwargs = {"axis": axis} if op == "argmax" else {"axis": axis, "keepdims": keepdims}
    got = getattr(x, op)(**kwargs).compute(session)
    np.testing.assert_allclose(got, getattr(a, op)(**kwargs), rtol=1e-12, atol=1e-12)
