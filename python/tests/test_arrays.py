"""Arrays against NumPy: creation, operators, indexing, reductions, under several chunkings."""

import numpy as np
import pytest

import tessera as ts
from conftest import CHUNKINGS


def chunked(x, chunks):
    return x if chunks is None else x.rechunk(chunks)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(9, 5))
    a[2, 3] = np.nan
    return a


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_elementwise_operators_match_numpy(session, data, chunks):
    b = np.arange(5.0) - 2
    x, y = chunked(ts.asarray(data), chunks), ts.asarray(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        want_div, want_rdiv = data / b, 1 / data
    cases = {
        "add": (x + y, data + b),
        "rsub": (3 - x, 3 - data),
        "mul": (x * 2.5, data * 2.5),
        "div": (x / y, want_div),
        "rdiv": (1 / x, want_rdiv),
        "pow": (x ** 2, data ** 2),
        "neg_abs": (abs(-x), np.abs(-data)),
        "numpy_left": (b + x, b + data),
    }
    for name, (got, want) in cases.items():
        np.testing.assert_allclose(got.compute(session), want, equal_nan=True, err_msg=name)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_ufuncs_match_numpy(session, chunks):
    a = np.linspace(0.1, 3, 24).reshape(4, 6)
    x = chunked(ts.asarray(a), chunks)
    for name in ["sqrt", "exp", "log", "sin", "cos", "abs", "floor", "tanh", "log1p"]:
        got = getattr(ts, name)(x).compute(session)
        np.testing.assert_allclose(got, getattr(np, name)(a), rtol=1e-12, err_msg=name)
    np.testing.assert_array_equal(ts.maximum(x, 1.5).compute(session), np.maximum(a, 1.5))
    np.testing.assert_array_equal(ts.minimum(x, x.T.T).compute(session), a)
    np.testing.assert_array_equal(ts.where(x > 1, x, 0.0).compute(session), np.where(a > 1, a, 0.0))


def test_comparisons_and_logic(session):
    a = np.arange(12).reshape(3, 4)
    x = ts.asarray(a)
    np.testing.assert_array_equal(((x > 3) & (x < 9)).compute(session), (a > 3) & (a < 9))
    np.testing.assert_array_equal(((x == 2) | (x != 2)).compute(session), np.ones((3, 4), bool))
    np.testing.assert_array_equal((~(x >= 6)).compute(session), ~(a >= 6))
    np.testing.assert_array_equal((x <= 5).compute(session), a <= 5)
    np.testing.assert_array_equal((~x).compute(session), ~a)
    np.testing.assert_array_equal((x & 6).compute(session), a & 6)
    np.testing.assert_array_equal((x // 5).compute(session), a // 5)
    np.testing.assert_array_equal((x % 5).compute(session), a % 5)


def test_weak_scalars_keep_the_array_dtype(session):
    x = ts.ones(4, dtype="float32")
    assert (x * 2).dtype == np.float32
    assert (2 * x).dtype == np.float32
    assert (2 - ts.ones(3, dtype="uint8")).dtype == np.uint8
    assert (ts.arange(3) * 1.5).dtype == np.float64
    np.testing.assert_array_equal((10 - ts.arange(3)).compute(session), [10, 9, 8])


def test_matmul(session):
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(20, 4)), rng.normal(size=(4, 3))
    np.testing.assert_allclose((ts.asarray(a) @ ts.asarray(b)).compute(session), a @ b)
    np.testing.assert_allclose(ts.matmul(a, ts.asarray(b)).compute(session), a @ b)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_indexing_matches_numpy(session, chunks):
    a = np.arange(60).reshape(6, 10)
    x = chunked(ts.asarray(a), chunks)
    keys = [
        (slice(None, None, 2), slice(1, None)),
        (slice(None, None, -1),),
        (slice(5, 1, -2), slice(-3, None)),
        (2,),
        (-1, slice(None, None, 3)),
        (Ellipsis, 4),
        (None, slice(1, 3)),
        (slice(None), None, -2),
        (slice(4, 4),),
        (1, 2),
    ]
    for key in keys:
        np.testing.assert_array_equal(np.asarray(x[key].compute(session)), a[key], err_msg=str(key))


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_integer_array_indexing_matches_numpy(session, chunks):
    # Integers and integer arrays, one per leading axis (2024.12's integer array indexing):
    # the indices broadcast together, the remaining axes follow.
    a = np.arange(60).reshape(6, 10)
    x = chunked(ts.asarray(a), chunks)
    rows, cols = np.array([[5, 0], [2, -1]]), np.array([9, -10])
    keys = [
        (np.array([2, 0, 2]),),
        (np.array([[1, 5], [0, 0]]),),
        (rows, cols),
        (rows[:, :1], np.array([[3, 4, 5]])),
        (-2, np.array([7, 1, 1])),
        (np.array([0, 3]), 4),
        (np.array(4), np.array(9)),
        ([1, 1, 0], [2, 3, 4]),
        (np.array([], dtype=np.int64), 3),
    ]
    for key in keys:
        np.testing.assert_array_equal(np.asarray(x[key].compute(session)), a[key], err_msg=str(key))
    # Index arrays that are Tessera arrays themselves, and a third axis left whole.
    b = np.arange(120).reshape(4, 5, 6)
    y = chunked(ts.asarray(b), chunks)
    i, j = np.array([[3], [0]]), np.array([4, 0, 2])
    np.testing.assert_array_equal(np.asarray(y[ts.asarray(i), ts.asarray(j)].compute(session)), b[i, j])
    for bad in [
        (np.array([6]),),  # out of range
        (np.array([0, 1]), np.array([0, 1, 2])),  # shapes that do not broadcast
        (np.array([0.5]),),  # not integers
        (np.array([0, 1]), slice(None)),  # slices beside arrays are not taken
        (0, 1, np.array([0])),  # more indices than axes
    ]:
        with pytest.raises(IndexError):
            x[bad]


@pytest.mark.parametrize("chunks", CHUNKINGS)
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_match_numpy(session, chunks, axis, keepdims):
    a = np.random.default_rng(2).normal(size=(7, 6))
    x = chunked(ts.asarray(a), chunks)
    for name in ["sum", "mean", "min", "max", "std", "var", "prod"]:
        got = getattr(x, name)(axis=axis, keepdims=keepdims).compute(session)
        want = getattr(a, name)(axis=axis, keepdims=keepdims)
        np.testing.assert_allclose(got, want, rtol=1e-10, err_msg=name)
    np.testing.assert_allclose(x.std(axis=axis, ddof=1).compute(session), a.std(axis=axis, ddof=1))
    b = a > 0
    y = chunked(ts.asarray(b), chunks)
    np.testing.assert_array_equal(y.any(axis=axis, keepdims=keepdims).compute(session), b.any(axis=axis, keepdims=keepdims))
    np.testing.assert_array_equal(y.all(axis=axis, keepdims=keepdims).compute(session), b.all(axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_argmin_argmax_and_nan(session, chunks):
    a = np.random.default_rng(3).normal(size=(5, 8))
    x = chunked(ts.asarray(a), chunks)
    for axis in [None, 0, 1]:
        np.testing.assert_array_equal(x.argmin(axis=axis).compute(session), a.argmin(axis=axis))
        np.testing.assert_array_equal(x.argmax(axis=axis).compute(session), a.argmax(axis=axis))
    a[1, 2] = np.nan
    x = chunked(ts.asarray(a), chunks)
    assert np.isnan(x.sum().compute(session))
    assert np.isnan(x.max().compute(session))
    np.testing.assert_array_equal(ts.isnan(x).compute(session), np.isnan(a))


def test_creation_matches_numpy(session):
    np.testing.assert_array_equal(ts.zeros((2, 3)).compute(session), np.zeros((2, 3)))
    np.testing.assert_array_equal(ts.ones(4, dtype="int32").compute(session), np.ones(4, np.int32))
    np.testing.assert_array_equal(ts.full((2, 2), 7).compute(session), np.full((2, 2), 7))
    np.testing.assert_array_equal(ts.arange(10).compute(session), np.arange(10))
    np.testing.assert_array_equal(ts.arange(2, 11, 3).compute(session), np.arange(2, 11, 3))
    np.testing.assert_allclose(ts.arange(0.0, 1.0, 0.25).compute(session), np.arange(0.0, 1.0, 0.25))
    np.testing.assert_allclose(ts.linspace(0, 1, 11).compute(session), np.linspace(0, 1, 11))
    assert ts.zeros((3, 0)).compute(session).shape == (3, 0)
    for dtype in ts.SUPPORTED_DTYPES:
        a = (np.arange(6) % 3).astype(dtype).reshape(2, 3)
        np.testing.assert_array_equal(ts.asarray(a).compute(session), a)


def test_shape_methods(session):
    a = np.arange(24.0).reshape(2, 3, 4)
    x = ts.asarray(a)
    np.testing.assert_array_equal(x.reshape(4, -1).compute(session), a.reshape(4, -1))
    np.testing.assert_array_equal(x.T.compute(session), a.T)
    np.testing.assert_array_equal(x.transpose(1, 0, 2).compute(session), a.transpose(1, 0, 2))
    np.testing.assert_array_equal(x.astype("int32").compute(session), a.astype(np.int32))
    assert x.astype(np.float32).dtype == np.float32
    np.testing.assert_array_equal(
        ts.concatenate([x, x[:1]], axis=0).compute(session), np.concatenate([a, a[:1]])
    )
    assert (x.shape, x.ndim, x.size, len(x)) == ((2, 3, 4), 3, 24, 2)


def test_random_is_chunking_independent(session):
    rng = ts.random.default_rng(42)
    u = rng.uniform(-1, 1, size=(1000, 3))
    a = u.compute(session)
    b = u.rechunk((7, 3)).compute(session)
    np.testing.assert_array_equal(a, b)
    assert a.min() >= -1 and a.max() < 1 and abs(a.mean()) < 0.1
    n = rng.normal(2.0, 3.0, size=20000).compute(session)
    assert abs(n.mean() - 2.0) < 0.1 and abs(n.std() - 3.0) < 0.1
    i = rng.integers(3, 9, size=5000).compute(session)
    assert i.dtype == np.int64 and i.min() == 3 and i.max() == 8
    r = rng.random(size=100).compute(session)
    assert ((r >= 0) & (r < 1)).all()


def test_monte_carlo_pi(session):
    n = 200_000
    x = ts.random.default_rng(7).uniform(-1, 1, size=(n, 2))
    inside = ((x * x).sum(axis=1) < 1).sum()
    pi = float(inside.astype("float64") * 4 / n)
    assert abs(pi - np.pi) < 0.02


def test_linalg_matches_numpy(session):
    a = np.random.default_rng(4).normal(size=(200, 6))
    x = ts.asarray(a).rechunk((50, 6))
    q, r = ts.linalg.qr(x)
    qn, rn = q.compute(session), r.compute(session)
    np.testing.assert_allclose(qn @ rn, a, atol=1e-10)
    np.testing.assert_allclose(qn.T @ qn, np.eye(6), atol=1e-10)
    u, s, vt = ts.linalg.svd(x)
    np.testing.assert_allclose(s.compute(session), np.linalg.svd(a, compute_uv=False), rtol=1e-10)
    np.testing.assert_allclose(
        (u.compute(session) * s.compute(session)) @ vt.compute(session), a, atol=1e-10
    )
    np.testing.assert_allclose(float(ts.linalg.norm(x)), np.linalg.norm(a), rtol=1e-12)
    _, sk, _ = ts.linalg.svd_compressed(x, 3, n_power_iter=2)
    np.testing.assert_allclose(sk.compute(session), np.linalg.svd(a, compute_uv=False)[:3], rtol=0.2)


def test_persist_and_repr(session):
    x = ts.arange(10).rechunk(3) * 2
    p = x.persist(session)
    np.testing.assert_array_equal(p.compute(session), np.arange(10) * 2)
    assert repr(x) == "tessera.Array<mul, shape=(10,), dtype=int64, chunks=(3,)>"
    assert "getitem" in repr(x[1:])


def test_compute_hands_over_the_rust_buffer_without_copy(session):
    x = ts.random.default_rng(1).uniform(size=(1000, 8))
    out = x.compute(session)
    assert out.flags.c_contiguous and not out.flags.owndata
    base = out
    while isinstance(base.base, np.ndarray):
        base = base.base
    # The memory belongs to a Rust-owned container, not to any NumPy array.
    assert base.base is not None and not isinstance(base.base, np.ndarray)
    # np.asarray goes through __array__ and keeps the same buffer.
    arr = np.asarray(x)
    assert arr.shape == (1000, 8) and not arr.flags.owndata


def test_scalar_conversions(session):
    x = ts.asarray(np.array([1.5, 2.5]))
    assert float(x.sum()) == 4.0
    assert int(ts.arange(5).sum()) == 10
    assert bool(ts.asarray([True, False]).any())
    assert [0, 1, 2, 3][ts.arange(4)[2]] == 2
    assert isinstance(x.sum().compute(session), np.floating)


def test_a_single_value_is_computed_once_and_again_after_an_assignment(monkeypatch):
    jobs = []
    read = ts.Array.__array__
    monkeypatch.setattr(ts.Array, "__array__", lambda self, *a, **k: jobs.append(1) or read(self, *a, **k))
    rank = ts.asarray(np.array([0.5, 2.0, 3.0])).__gt__(1.0).astype("int64").sum()
    assert [0, 1, 2, 3][:rank] == [0, 1] and float(rank) == 2.0 and bool(rank)
    assert len(jobs) == 1, "one job for three reads of the same value"
    x = ts.asarray(np.array([1.0]))
    assert float(x) == 1.0
    x[0] = 7.0
    assert float(x) == 7.0 and len(jobs) == 3
