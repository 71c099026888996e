"""The array API's ``linalg`` extension (``tessera.array_api.linalg``) and ``x[mask] = v``
with array values, against NumPy under several chunkings."""

import numpy as np
import pytest

import tessera as ts
from conftest import CHUNKINGS

xp = ts.array_api
la = xp.linalg
rng = np.random.default_rng(7)
TALL = rng.normal(size=(40, 5))
SQUARE = rng.normal(size=(6, 6))
SPD = SQUARE @ SQUARE.T + 6 * np.eye(6)
STACK = rng.normal(size=(3, 4, 4))


def arr(a, chunks):
    x = xp.asarray(a)
    return x if chunks is None else x.rechunk(tuple(min(chunks, n) for n in x.shape))


def close(got, want):
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_chunked_functions_equal_numpy(chunks):
    x = arr(TALL, chunks)
    v = arr(TALL[:, 0], chunks)
    close(la.vector_norm(x), np.linalg.norm(TALL))
    for ord in (1, 2, 3, 0, np.inf, -np.inf):
        close(la.vector_norm(v, ord=ord), np.linalg.norm(TALL[:, 0], ord=ord))
    close(la.vector_norm(x, axis=0, keepdims=True), np.linalg.norm(TALL, axis=0, keepdims=True))
    for ord in ("fro", 1, -1, np.inf, -np.inf, 2, -2, "nuc"):
        close(la.matrix_norm(x, ord=ord), np.linalg.norm(TALL, ord=ord))
    close(la.matrix_norm(arr(STACK, chunks), keepdims=True), np.linalg.norm(STACK, axis=(-2, -1), keepdims=True))
    for offset in (-2, 0, 1, 9):
        close(la.diagonal(arr(SQUARE, chunks), offset=offset), np.diagonal(SQUARE, offset))
        close(la.trace(arr(SQUARE, chunks), offset=offset), np.trace(SQUARE, offset))
    close(la.diagonal(arr(STACK, chunks)), np.diagonal(STACK, axis1=-2, axis2=-1))
    close(la.outer(v, arr(SQUARE[0], chunks)), np.outer(TALL[:, 0], SQUARE[0]))
    a, b = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    close(la.cross(arr(a, chunks), arr(b, chunks)), np.cross(a, b))
    close(la.cross(arr(a.T, chunks), arr(b.T, chunks), axis=0), np.cross(a.T, b.T, axis=0))
    close(la.matmul(x, arr(SQUARE[:5, :3], chunks)), TALL @ SQUARE[:5, :3])
    close(la.vecdot(x, x), np.sum(TALL * TALL, axis=-1))
    close(la.tensordot(x, x, axes=2), np.tensordot(TALL, TALL, axes=2))
    close(la.matrix_transpose(x), TALL.T)
    for n in (0, 1, 2, 5, -3):
        close(la.matrix_power(arr(SQUARE, chunks), n), np.linalg.matrix_power(SQUARE, n))
    close(la.matrix_power(arr(STACK, chunks), 3), np.linalg.matrix_power(STACK, 3))


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_factorizations_reconstruct_their_matrix(chunks):
    x = arr(TALL, chunks)
    q, r = la.qr(x)
    q, r = np.asarray(q), np.asarray(r)
    close(q @ r, TALL)
    close(q.T @ q, np.eye(5))
    assert np.allclose(np.tril(r, -1), 0)
    u, s, vh = la.svd(x, full_matrices=False)
    close(s, np.linalg.svd(TALL, compute_uv=False))
    close((np.asarray(u) * np.asarray(s)) @ np.asarray(vh), TALL)
    close(la.svdvals(x), np.linalg.svd(TALL, compute_uv=False))
    # Wide, and the gathered cases: complete QR, full SVD, a stack.
    close(la.svdvals(arr(TALL.T, chunks)), np.linalg.svd(TALL, compute_uv=False))
    q, r = la.qr(x, mode="complete")
    assert np.asarray(q).shape == (40, 40)
    close(np.asarray(q) @ np.asarray(r), TALL)
    u, s, vh = la.svd(x)
    assert np.asarray(u).shape == (40, 40) and np.asarray(vh).shape == (5, 5)
    close(la.svdvals(arr(STACK, chunks)), np.linalg.svd(STACK, compute_uv=False))
    # float32 in, float32 out, as the standard says.
    x32 = arr(TALL.astype(np.float32), chunks)
    assert {a.dtype for a in (*la.qr(x32), *la.svd(x32, full_matrices=False))} == {np.dtype(np.float32)}


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_gathered_functions_equal_numpy(chunks):
    s, spd = arr(SQUARE, chunks), arr(SPD, chunks)
    close(la.cholesky(spd), np.linalg.cholesky(SPD))
    close(la.cholesky(spd, upper=True), np.linalg.cholesky(SPD, upper=True))
    close(la.det(s), np.linalg.det(SQUARE))
    close(la.det(arr(STACK, chunks)), np.linalg.det(STACK))
    sign, logabs = la.slogdet(s)
    want = np.linalg.slogdet(SQUARE)
    close(sign, want.sign)
    close(logabs, want.logabsdet)
    w, v = la.eigh(spd)
    close(w, np.linalg.eigvalsh(SPD))
    close(np.asarray(v) @ np.diag(np.asarray(w)) @ np.asarray(v).T, SPD)
    close(la.eigvalsh(spd), np.linalg.eigvalsh(SPD))
    close(la.inv(s), np.linalg.inv(SQUARE))
    close(la.pinv(arr(TALL, chunks)), np.linalg.pinv(TALL))
    assert int(la.matrix_rank(arr(TALL, chunks))) == 5
    low = TALL[:, :2] @ rng.normal(size=(2, 5))
    assert int(la.matrix_rank(arr(low, chunks))) == 2
    b = rng.normal(size=6)
    close(la.solve(s, arr(b, chunks)), np.linalg.solve(SQUARE, b))
    bm = rng.normal(size=(6, 2))
    close(la.solve(s, arr(bm, chunks)), np.linalg.solve(SQUARE, bm))
    # Integers are factored in float64.
    close(la.det(xp.asarray([[2, 0], [0, 3]])), 6.0)


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        la.det(xp.asarray([1.0, 2.0]))
    with pytest.raises(ValueError, match="Singular matrix"):
        la.inv(xp.asarray(np.zeros((3, 3))))
    with pytest.raises(ValueError, match="mode must be"):
        la.qr(xp.asarray(SQUARE), mode="r")
    with pytest.raises(ValueError, match="3 elements"):
        la.cross(xp.asarray(SQUARE), xp.asarray(SQUARE))
    with pytest.raises(ValueError, match="no norm"):
        la.matrix_norm(xp.asarray(SQUARE), ord=3)


def test_a_gathered_input_past_the_limit_is_refused(monkeypatch):
    monkeypatch.setattr(la, "GATHER_LIMIT", 100)
    with pytest.raises(ValueError, match="GATHER_LIMIT"):
        la.inv(xp.asarray(SQUARE))


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_mask_assignment_takes_one_value_per_selected_element(chunks):
    a = rng.normal(size=(7, 4))
    x = arr(a, chunks)
    mask = a > 0
    want = a.copy()
    want[mask] = np.arange(mask.sum())
    x[arr(mask, chunks)] = xp.asarray(np.arange(mask.sum(), dtype=np.float64))
    close(x, want)
    # A mask of the leading axis selects rows; the value broadcasts over them.
    rows = a[:, 0] > 0
    want2 = a.copy()
    want2[rows] = a[rows] * 2
    y = arr(a, chunks)
    y[xp.asarray(rows)] = y[xp.asarray(rows)] * 2
    close(y, want2)
    want2[~rows] = 5.0
    y[xp.asarray(~rows)] = 5.0
    close(y, want2)
    with pytest.raises(ValueError, match="x\\[mask\\] = v"):
        y[xp.asarray(rows)] = xp.asarray([1.0, 2.0, 3.0])
    with pytest.raises(IndexError, match="leading axes"):
        y[xp.asarray(np.ones(4, dtype=bool))] = 1.0
