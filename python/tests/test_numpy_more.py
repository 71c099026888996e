"""NaN-skipping reductions, running sums, sorting, unique, take, array indexing, isin,
outer, clip and round against NumPy, under several chunkings."""

import numpy as np
import pytest

import tessera as ts
from conftest import CHUNKINGS


def chunked(x, chunks):
    return x if chunks is None else x.rechunk([chunks] * x.ndim)


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(9, 5)).round(1)
    a[2, 3] = np.nan
    a[7, 0] = np.nan
    return a


@pytest.mark.parametrize("chunks", CHUNKINGS)
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_nan_reductions_match_numpy(session, data, chunks, axis):
    x = chunked(ts.asarray(data), chunks)
    for name in ["nansum", "nanmean", "nanmin", "nanmax"]:
        for keepdims in [False, True]:
            got = getattr(ts, name)(x, axis=axis, keepdims=keepdims).compute(session)
            want = getattr(np, name)(data, axis=axis, keepdims=keepdims)
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"{name} {keepdims}")
    for name in ["nanstd", "nanvar"]:
        got = getattr(ts, name)(x, axis=axis, ddof=1).compute(session)
        np.testing.assert_allclose(got, getattr(np, name)(data, axis=axis, ddof=1), rtol=1e-12)
    if axis is None or isinstance(axis, int):
        for name in ["nanargmin", "nanargmax"]:
            got = getattr(ts, name)(x, axis=axis).compute(session)
            np.testing.assert_array_equal(got, getattr(np, name)(data, axis=axis), err_msg=name)


def test_nan_reductions_of_all_nan_and_integers(session):
    empty = np.full((3, 2), np.nan)
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        want = np.nanmean(empty, axis=0)
    np.testing.assert_array_equal(ts.nanmean(empty, axis=0).compute(session), want)
    assert ts.nansum(empty).compute(session) == 0.0
    ints = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(ts.nansum(ints, axis=1).compute(session), np.nansum(ints, axis=1))
    np.testing.assert_allclose(ts.nanmean(ints, axis=0).compute(session), np.nanmean(ints, axis=0))
    with pytest.raises(ts.TesseraError):
        ts.nanargmax(empty, axis=0).compute(session)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_running_sums_and_differences_match_numpy(session, chunks):
    a = np.arange(1, 46).reshape(9, 5) % 7 - 3
    x = chunked(ts.asarray(a), chunks)
    np.testing.assert_array_equal(ts.cumsum(x).compute(session), np.cumsum(a))
    np.testing.assert_array_equal(x.cumsum(axis=0).compute(session), np.cumsum(a, axis=0))
    np.testing.assert_array_equal(ts.cumprod(x, axis=1).compute(session), np.cumprod(a, axis=1))
    f = a / 4.0
    y = chunked(ts.asarray(f), chunks)
    np.testing.assert_allclose(ts.cumsum(y, axis=1).compute(session), np.cumsum(f, axis=1))
    for n, axis in [(1, -1), (2, 0), (1, 0)]:
        np.testing.assert_array_equal(ts.diff(x, n, axis).compute(session), np.diff(a, n, axis))
    b = a > 0
    np.testing.assert_array_equal(ts.cumsum(ts.asarray(b)).compute(session), np.cumsum(b))


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_sort_argsort_and_unique_match_numpy(session, data, chunks):
    x = chunked(ts.asarray(data), chunks)
    for axis in [-1, 0, None]:
        np.testing.assert_array_equal(ts.sort(x, axis=axis).compute(session), np.sort(data, axis=axis))
        np.testing.assert_array_equal(
            ts.argsort(x, axis=axis).compute(session), np.argsort(data, axis=axis, kind="stable")
        )
    ties = np.array([3, 1, 3, 1, 2, 3, 0, 2, 1])
    t = chunked(ts.asarray(ties), chunks)
    np.testing.assert_array_equal(t.argsort().compute(session), np.argsort(ties, kind="stable"))
    np.testing.assert_array_equal(ts.unique(x).compute(session), np.unique(data))
    np.testing.assert_array_equal(ts.unique(t).compute(session), np.unique(ties))


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_take_and_array_indexing_match_numpy(session, data, chunks):
    x = chunked(ts.asarray(data), chunks)
    np.testing.assert_array_equal(ts.take(x, [0, 44, -1, 7]).compute(session), np.take(data, [0, 44, -1, 7]))
    np.testing.assert_array_equal(x.take([4, 0, 4], axis=1).compute(session), data.take([4, 0, 4], axis=1))
    assert ts.take(x, 7).compute(session) == np.take(data, 7)
    np.testing.assert_array_equal(x.take(-1, axis=1).compute(session), data.take(-1, axis=1))
    np.testing.assert_array_equal(x.take(2, axis=0).compute(session), data.take(2, axis=0))
    np.testing.assert_array_equal(x[[2, 0, -1, 2]].compute(session), data[[2, 0, -1, 2]])
    np.testing.assert_array_equal(x[np.array([8, 1])].compute(session), data[[8, 1]])
    mask = data > 0.3
    np.testing.assert_array_equal(x[x > 0.3].compute(session), data[mask])
    np.testing.assert_array_equal(x[mask].compute(session), data[mask])
    assert x[x > 100].compute(session).shape == (0,)
    rows = data[:, 0] > 0
    np.testing.assert_array_equal(x[rows].compute(session), data[rows])
    np.testing.assert_array_equal(x[ts.asarray(rows)].compute(session), data[rows])


def test_array_indexing_errors(session, data):
    x = ts.asarray(data)
    with pytest.raises(IndexError):
        x[[0, 9]]
    with pytest.raises(IndexError):
        x[ts.asarray(data[:3] > 0)]
    with pytest.raises(IndexError):
        x[[1, 2], 1:3]  # slices beside index arrays are not taken
    with pytest.raises(IndexError):
        ts.take(x, [45]).compute(session)
    # What NumPy indexes with arrays alone (a 2-D index array, an integer beside a list)
    # is taken as it does.
    for key in [np.zeros((2, 2), dtype=np.int64), ([1, 2], 0)]:
        np.testing.assert_array_equal(np.asarray(x[key].compute(session)), data[key])


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_isin_outer_clip_round_match_numpy(session, data, chunks):
    x = chunked(ts.asarray(data), chunks)
    ints = np.arange(20).reshape(4, 5) % 6
    i = chunked(ts.asarray(ints), chunks)
    test = np.array([1, 4, 9])
    np.testing.assert_array_equal(ts.isin(i, test).compute(session), np.isin(ints, test))
    np.testing.assert_array_equal(
        ts.isin(i, test, invert=True).compute(session), np.isin(ints, test, invert=True)
    )
    v = np.array([1.5, -2.0, 3.0])
    np.testing.assert_array_equal(ts.outer(v, i).compute(session), np.outer(v, ints))
    np.testing.assert_array_equal(ts.clip(x, -0.5, 0.5).compute(session), np.clip(data, -0.5, 0.5))
    np.testing.assert_array_equal(x.clip(min=0).compute(session), np.clip(data, 0, None))
    np.testing.assert_array_equal(x.clip(max=0).compute(session), np.clip(data, None, 0))
    np.testing.assert_array_equal(ts.clip(i, 1, 4).compute(session), np.clip(ints, 1, 4))
    halves = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 1.25, 2.675, np.nan])
    np.testing.assert_array_equal(ts.round(halves).compute(session), np.round(halves))
    np.testing.assert_allclose(ts.round(halves, 1).compute(session), np.round(halves, 1), equal_nan=True)
    np.testing.assert_array_equal(ts.around(data, 0).compute(session), np.around(data, 0))
    with pytest.raises(ValueError):
        x.clip()


def test_fft_namespace_takes_numpys_arguments():
    rng = np.random.default_rng(9)
    a = rng.standard_normal((5, 8))
    x = ts.asarray(a).rechunk((2, 3))
    np.testing.assert_allclose(np.asarray(ts.fft.fft(x, 6, 0)), np.fft.fft(a, 6, 0))
    np.testing.assert_allclose(np.asarray(ts.fft.rfft(a, None, -1, "ortho")), np.fft.rfft(a, None, -1, "ortho"))
    np.testing.assert_allclose(np.asarray(ts.fft.irfft(ts.fft.rfft(x))), np.fft.irfft(np.fft.rfft(a)))
    np.testing.assert_allclose(np.asarray(ts.fft.fft2(x)), np.fft.fft2(a))
    np.testing.assert_allclose(np.asarray(ts.fft.ifft2(x, (4, 4))), np.fft.ifft2(a, (4, 4)))
    np.testing.assert_allclose(np.asarray(ts.fft.fftshift(ts.fft.fftfreq(8, 0.1))), np.fft.fftshift(np.fft.fftfreq(8, 0.1)))
