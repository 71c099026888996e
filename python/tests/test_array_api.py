"""The array API namespace (``tessera.array_api``) against NumPy 2, which implements the
same standard, under several chunkings."""

import math

import numpy as np
import pytest

import tessera as ts
from conftest import CHUNKINGS

xp = ts.array_api


def arr(a, chunks):
    x = xp.asarray(a)
    return x if chunks is None or x.ndim == 0 else x.rechunk(chunks)


def same(got, want, exact=True):
    got = np.asarray(got)
    assert got.shape == np.shape(want)
    assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_the_namespace_is_found_from_an_array():
    x = ts.asarray([1.0, 2.0])
    assert x.__array_namespace__() is xp
    assert xp.__array_api_version__ == "2024.12"
    assert x.__array_namespace__(api_version="2023.12") is xp
    assert x.device == "cpu" and x.to_device("cpu") is x
    info = xp.__array_namespace_info__()
    assert info.capabilities()["boolean indexing"]
    assert info.capabilities()["max dimensions"] == 64
    ints = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
    assert set(info.dtypes()) == ints | {"bool", "float32", "float64", "complex64", "complex128"}
    assert set(info.dtypes(kind="integral")) == ints
    assert set(info.dtypes(kind="complex floating")) == {"complex64", "complex128"}
    assert info.default_dtypes()["real floating"] == xp.float64
    assert info.default_dtypes()["complex floating"] == xp.complex128
    with pytest.raises(ValueError):
        x.__array_namespace__(api_version="2099.12")
    with pytest.raises(ValueError):
        xp.zeros(3, device="gpu:7")


def test_scalars_become_zero_dimensional_arrays():
    # np.asarray(False).shape == (); (before, tessera.asarray gave shape (1,))
    for v, dtype in [(False, np.bool_), (3, np.int64), (2.5, np.float64)]:
        x = xp.asarray(v)
        assert x.shape == () and x.dtype == dtype
        assert x.reshape(1).compute().tolist() == [v]
    assert ts.asarray(np.float32(1.5)).shape == ()


def test_asarray_copies_and_refuses_copy_false_for_outside_data():
    a = np.arange(4.0)
    with pytest.raises(ValueError):
        xp.asarray(a, copy=False)
    x = xp.asarray(a)
    y = xp.asarray(x)  # a new array object: assigning to it leaves x alone
    y[0] = 9.0
    assert np.asarray(x)[0] == 0.0 and np.asarray(y)[0] == 9.0
    assert xp.asarray(x, copy=False) is x


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_creation_matches_numpy(chunks):
    same(xp.eye(4, 6, k=1, dtype=xp.int32), np.eye(4, 6, k=1, dtype=np.int32))
    same(xp.eye(3, k=-2), np.eye(3, k=-2))
    same(xp.eye(2, 3, k=2**63), np.zeros((2, 3)))  # a diagonal past int64 is off the matrix
    m = np.arange(30.0).reshape(5, 6) - 7
    same(xp.tril(arr(m, chunks), k=1), np.tril(m, k=1))
    same(xp.triu(arr(m, chunks), k=-1), np.triu(m, k=-1))
    same(xp.tril(arr(m, chunks), k=-(2**63)), np.zeros_like(m))
    same(xp.triu(arr(m, chunks), k=-(2**63)), m)
    same(xp.linspace(0, 1, 5, endpoint=False), np.linspace(0, 1, 5, endpoint=False), exact=False)
    same(xp.linspace(2, 3, 4, dtype=xp.float32), np.linspace(2, 3, 4, dtype=np.float32))
    same(xp.full_like(arr(m, chunks), 7), np.full_like(m, 7))
    same(xp.zeros_like(arr(m, chunks), dtype=xp.int32), np.zeros_like(m, dtype=np.int32))
    same(xp.arange(1, 2, 0.25, dtype=xp.float32), np.arange(1, 2, 0.25, dtype=np.float32))
    a, b, c = np.arange(3), np.arange(4) * 10, np.arange(2) * 100
    for indexing in ("xy", "ij"):
        got = xp.meshgrid(arr(a, chunks), arr(b, chunks), arr(c, chunks), indexing=indexing)
        for g, w in zip(got, np.meshgrid(a, b, c, indexing=indexing)):
            same(g, w)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_elementwise_functions_the_standard_adds(chunks):
    v = np.array([-np.inf, -3.5, -1.0, -0.0, 0.0, 0.5, 1.0, 2.0, np.inf, np.nan])
    x = arr(v, chunks)
    with np.errstate(all="ignore"):
        same(xp.asinh(x), np.asinh(v), exact=False)
        same(xp.acosh(x), np.acosh(v), exact=False)
        same(xp.atanh(x), np.atanh(v), exact=False)
        same(xp.logaddexp(x, xp.flip(x)), np.logaddexp(v, v[::-1]), exact=False)
    same(xp.signbit(x), np.signbit(v))
    same(xp.signbit(xp.asarray([-np.nan, np.nan])), np.array([True, False]))
    same(xp.copysign(xp.flip(x), x), np.copysign(v[::-1], v))
    same(xp.square(x), np.square(v))
    same(xp.logical_xor(x > 0, x < 1), np.logical_xor(v > 0, v < 1))
    same(xp.round(xp.asarray([0.5, 1.5, -2.5])), np.round([0.5, 1.5, -2.5]))
    same(xp.clip(x, min=-1.0), np.clip(v, -1.0, None))
    same(ts.arcsinh(x), np.arcsinh(v), exact=False)
    same(xp.asinh(xp.asarray([1, 2], dtype=xp.int32)), np.asinh(np.array([1, 2], np.int32)).astype(np.float64), exact=False)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_manipulation_matches_numpy(chunks):
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    x = arr(a, chunks)
    same(xp.flip(x), np.flip(a))
    same(xp.flip(x, axis=(0, 2)), np.flip(a, axis=(0, 2)))
    same(xp.roll(x, 5), np.roll(a, 5))
    same(xp.roll(x, (-1, 2), axis=(1, 2)), np.roll(a, (-1, 2), axis=(1, 2)))
    same(xp.repeat(x, 2, axis=1), np.repeat(a, 2, axis=1))
    same(xp.repeat(x, np.array([1, 0, 3]), axis=1), np.repeat(a, [1, 0, 3], axis=1))
    same(xp.repeat(x, 3), np.repeat(a, 3))
    same(xp.tile(x, (2, 1, 1, 2)), np.tile(a, (2, 1, 1, 2)))
    same(xp.stack([x, x + 1], axis=-1), np.stack([a, a + 1], axis=-1))
    for g, w in zip(xp.unstack(x, axis=1), [a[:, i] for i in range(3)]):
        same(g, w)
    same(xp.expand_dims(x, axis=-1), np.expand_dims(a, -1))
    same(xp.squeeze(xp.expand_dims(x, axis=1), 1), a)
    same(xp.moveaxis(x, 0, -1), np.moveaxis(a, 0, -1))
    same(xp.permute_dims(x, (2, 0, 1)), np.permute_dims(a, (2, 0, 1)))
    same(xp.concat([x, xp.astype(x, xp.float32)], axis=None), np.concat([a, a.astype(np.float32)], axis=None))
    same(xp.broadcast_to(x[:, :1, :], (2, 3, 4)), np.broadcast_to(a[:, :1, :], (2, 3, 4)))
    with pytest.raises(ValueError):
        xp.squeeze(x, 0)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_assignment_matches_numpy_and_leaves_earlier_arrays_alone(chunks):
    a = np.arange(60.0).reshape(3, 4, 5)
    x = arr(a, chunks)
    before = x * 1
    x[1, ::2, 1:4] = xp.asarray(np.array([[7.0, 8.0, 9.0], [10.0, 11.0, 12.0]]))
    a[1, ::2, 1:4] = [[7, 8, 9], [10, 11, 12]]
    same(x, a)
    x[..., -1] = 5
    a[..., -1] = 5
    same(x, a)
    x[::-2, 0] = xp.asarray(np.arange(5.0))  # broadcast along the selected rows
    a[::-2, 0] = np.arange(5.0)
    same(x, a)
    x[x > 40] = -1
    a[a > 40] = -1
    same(x, a)
    x[2:2] = 3  # selects nothing
    same(x, a)
    same(before, np.arange(60.0).reshape(3, 4, 5))
    with pytest.raises(IndexError):
        x[3, 0, 0] = 1.0


def test_boolean_masks_over_leading_axes_match_numpy():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = xp.asarray(a)
    empty = [np.zeros(0, bool), np.zeros((2, 0), bool), np.zeros((0, 0, 4), bool)]
    for m in [a[:, :, 0] > 5, a[:, 0, 0] > 5, a > 5, np.bool_(True), np.bool_(False)] + empty:
        same(x[m], a[m])
    with pytest.raises(IndexError):
        x[np.ones((3, 2), bool)]


INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@pytest.mark.parametrize("chunks", CHUNKINGS)
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_every_integer_dtype_computes_as_numpy(dtype, chunks):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(11)
    a = rng.integers(info.min, info.max, size=(4, 6), dtype=dtype, endpoint=True)
    a[0, :3] = [info.min, info.max, 0]
    b = rng.integers(info.min, info.max, size=(4, 6), dtype=dtype, endpoint=True)
    b[1, :2] = [0, 1]  # division by zero gives 0, as NumPy's does (with a warning)
    x, y = arr(a, chunks), arr(b, chunks)
    with np.errstate(all="ignore"):
        same(x + y, a + b)  # wraps
        same(x * y, a * b)
        same(x // y, a // b)
        same(x % y, a % b)
        same(x ^ y, a ^ b)
        same(x >> 3, a >> 3)
        same(-x, -a)
    same(x < y, a < b)
    same(xp.sum(x, axis=0), np.sum(a, axis=0))  # int64 or uint64
    same(xp.prod(x, axis=1), np.prod(a, axis=1))
    same(xp.max(x), np.max(a))
    same(xp.cumulative_sum(x, axis=1), np.cumulative_sum(a, axis=1))
    same(xp.astype(x, xp.float64), a.astype(np.float64))
    same(xp.astype(x, xp.int8), a.astype(np.int8))
    same(x + xp.asarray(a.astype(np.uint8)), a + a.astype(np.uint8))  # NumPy's promotion


def complex_values(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


@pytest.mark.parametrize("chunks", CHUNKINGS)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_dtypes_compute_as_numpy(dtype, chunks):
    a, b = complex_values(dtype, (4, 6), 3), complex_values(dtype, (4, 6), 4)
    a[0, 0], b[0, 1] = 0, 0  # sign of zero; division by zero
    x, y = arr(a, chunks), arr(b, chunks)
    tol = 1e-12 if dtype == "complex128" else 1e-5

    def close(got, want):
        got = np.asarray(got)
        assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)

    with np.errstate(all="ignore"):
        same(x + y, a + b)
        close(x * y, a * b)  # NumPy's SIMD loops may fuse the multiply-adds
        close(x / y, a / b)
        same(-x, -a)
        close(x**2, a**2)
        close(x**y, a**b)
        for name in ["exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh",
                     "asin", "acos", "atan", "asinh", "acosh", "atanh", "log1p", "expm1",
                     "log2", "log10"]:
            close(getattr(xp, name)(x), getattr(np, {"asin": "arcsin", "acos": "arccos",
                  "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh",
                  "atanh": "arctanh"}.get(name, name))(a))
        close(xp.sign(x), np.sign(a))
    close(xp.abs(x), np.abs(a))  # float32 / float64
    same(xp.real(x), np.real(a))
    same(xp.imag(x), np.imag(a))
    same(xp.conj(x), np.conj(a))
    same(x == y, a == b)
    same(xp.isnan(x), np.isnan(a))
    close(xp.sum(x, axis=0), np.sum(a, axis=0))
    close(xp.prod(x, axis=1), np.prod(a, axis=1))
    close(xp.mean(x), np.mean(a))
    close(xp.vecdot(x, y), np.vecdot(a, b))  # conjugates x1
    close(xp.matmul(x, xp.matrix_transpose(y)), a @ b.T)
    close(xp.linalg.vector_norm(x), np.linalg.vector_norm(a))
    close(xp.linalg.matrix_norm(x), np.linalg.matrix_norm(a))
    same(xp.astype(x, xp.complex128), a.astype(np.complex128))
    same(xp.astype(xp.real(x), xp.float64), a.real.astype(np.float64))


def test_complex_promotion_scalars_and_limits_follow_numpy():
    f32 = xp.asarray(np.array([1.0, 2.0], np.float32))
    i32 = xp.asarray(np.array([1, 2], np.int32))
    c64 = xp.asarray(np.array([1 + 2j], np.complex64))
    assert (f32 * 1j).dtype == xp.complex64  # a Python complex is a weak scalar
    assert (i32 * 1j).dtype == xp.complex128
    assert (c64 + f32).dtype == xp.complex64
    assert (c64 + i32).dtype == xp.complex128
    assert xp.result_type(xp.complex64, xp.float64) == xp.complex128
    assert xp.isdtype(xp.complex64, "complex floating") and xp.isdtype(xp.complex128, "numeric")
    assert not xp.isdtype(xp.complex64, "real floating")
    assert xp.finfo(xp.complex64).bits == 32 and xp.finfo(xp.complex128).eps == np.finfo(np.float64).eps
    assert complex(xp.asarray(1.5 - 2j)) == 1.5 - 2j
    z = xp.asarray([1 + 1j, 3 - 1j, 3 + 0j])
    assert xp.argmax(z).item() == 2  # NumPy's order: real part, then imaginary
    same(xp.linalg.inv(xp.reshape(xp.asarray([2 + 1j, 1j, 0j, 1 - 1j]), (2, 2))),
         np.linalg.inv(np.array([[2 + 1j, 1j], [0j, 1 - 1j]])), exact=False)
    with pytest.raises(TypeError):
        xp.floor(z)
    with pytest.raises(TypeError):
        z // z


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_matmul_keeps_the_dtype_batches_and_wraps_as_numpy(chunks):
    rng = np.random.default_rng(3)
    a = rng.integers(-2**31, 2**31 - 1, size=(4, 5), dtype=np.int64).astype(np.int32)
    b = rng.integers(-2**31, 2**31 - 1, size=(5, 3), dtype=np.int64).astype(np.int32)
    same(arr(a, chunks) @ arr(b, chunks), a @ b)  # int32 wraps
    u = rng.integers(0, 255, size=(3, 4), dtype=np.uint8)
    same(xp.matmul(arr(u, chunks), arr(u.T, chunks)), u @ u.T)
    f = rng.standard_normal((2, 3, 4))
    g = rng.standard_normal((4, 2))
    same(arr(f, chunks) @ arr(g, chunks), f @ g, exact=False)
    same(xp.matmul(arr(g[:, 0], chunks), arr(f, chunks)[0].T), g[:, 0] @ f[0].T, exact=False)
    h = f.astype(np.float32)
    out = xp.matmul(arr(h[0], chunks), arr(h[1].T, chunks))
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), h[0] @ h[1].T, rtol=1e-5)
    same(xp.tensordot(arr(f, chunks), arr(g, chunks), axes=1), np.tensordot(f, g, axes=1), exact=False)
    same(xp.tensordot(arr(f, chunks), arr(f, chunks), axes=((1, 2), (1, 2))), np.tensordot(f, f, axes=((1, 2), (1, 2))), exact=False)
    same(xp.vecdot(arr(f, chunks), arr(f, chunks)), np.vecdot(f, f), exact=False)
    same(xp.matrix_transpose(arr(f, chunks)), np.matrix_transpose(f))
    with pytest.raises(ValueError):
        xp.matmul(arr(f, chunks), arr(f, chunks))
    with pytest.raises(ValueError):
        xp.vecdot(arr(f, chunks), arr(g, chunks))


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_sets_searching_and_sorting_match_numpy(chunks):
    v = np.array([3.0, np.nan, 1.0, 3.0, -2.0, np.nan, 1.0, 3.0, 0.0])
    x = arr(v, chunks)
    got, want = xp.unique_all(x), np.unique_all(v)
    for field in ("values", "indices", "inverse_indices", "counts"):
        same(getattr(got, field), getattr(want, field))
    same(xp.unique_counts(x).counts, np.unique_counts(v).counts)
    same(xp.unique_inverse(x).inverse_indices, np.unique_inverse(v).inverse_indices)
    same(xp.unique_values(x), np.unique_values(v))
    m = np.array([[0, 2, 0], [1, 0, 3]])
    for g, w in zip(xp.nonzero(arr(m, chunks)), np.nonzero(m)):
        same(g, w)
    s = np.array([-1.0, 0.0, 0.0, 2.5, 7.0])
    needles = np.array([[0.0, 3.0], [-5.0, 7.0]])
    for side in ("left", "right"):
        same(xp.searchsorted(arr(s, chunks), arr(needles, chunks), side=side), np.searchsorted(s, needles, side=side))
    ties = np.array([2, 1, 2, 0, 1, 2], dtype=np.int64)
    want = np.array(sorted(range(len(ties)), key=lambda i: -ties[i]))  # stable descending
    same(xp.argsort(arr(ties, chunks), descending=True), want)
    same(xp.sort(arr(ties, chunks), descending=True), np.sort(ties)[::-1])


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_statistics_match_numpy(chunks):
    a = np.arange(20.0).reshape(4, 5) ** 1.5
    x = arr(a, chunks)
    for correction in (0, 1, 1.5):
        same(xp.var(x, axis=0, correction=correction), np.var(a, axis=0, ddof=correction), exact=False)
        same(xp.std(x, correction=correction, keepdims=True), np.std(a, ddof=correction, keepdims=True), exact=False)
    same(xp.cumulative_sum(x, axis=1, include_initial=True), np.cumulative_sum(a, axis=1, include_initial=True), exact=False)
    same(xp.sum(x, axis=(0, 1), dtype=xp.float32), np.sum(a, axis=(0, 1), dtype=np.float32), exact=False)
    i = np.arange(6, dtype=np.int32)
    same(xp.sum(arr(i, chunks)), np.sum(i))  # int64, the default integer
    with pytest.raises(ValueError):
        xp.var(x, correction=-1)


def test_data_type_functions():
    assert xp.isdtype(xp.int32, "signed integer") and xp.isdtype(xp.uint8, "integral")
    assert xp.isdtype(xp.float32, ("bool", "real floating"))
    assert not xp.isdtype(xp.float64, "integral")
    assert xp.result_type(xp.uint8, xp.int32) == xp.int32
    assert xp.can_cast(xp.int32, xp.int64) and not xp.can_cast(xp.float64, xp.int64)
    f = xp.finfo(xp.float32)
    assert isinstance(f.eps, float) and f.eps == float(np.finfo(np.float32).eps)
    assert xp.iinfo(xp.int32).max == 2**31 - 1
    assert xp.result_type(xp.uint8, xp.int8) == xp.int16
    assert xp.result_type(xp.uint32, xp.int16) == xp.int64
    with pytest.raises(TypeError):
        xp.asarray([1, 2], dtype="float16")
    assert math.isclose(xp.pi, math.pi) and xp.newaxis is None


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_fft_extension_computes_as_numpy(chunks):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((6, 10))
    z = a + 1j * rng.standard_normal((6, 10))
    x, y = arr(a, chunks), arr(z, chunks)

    def close(got, want):
        got = np.asarray(got)
        assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)

    for norm in ["backward", "ortho", "forward"]:
        close(xp.fft.fft(y, norm=norm), np.fft.fft(z, norm=norm))
        close(xp.fft.ifft(y, n=7, axis=0, norm=norm), np.fft.ifft(z, n=7, axis=0, norm=norm))
        close(xp.fft.rfft(x, n=9, norm=norm), np.fft.rfft(a, n=9, norm=norm))
        close(xp.fft.hfft(y, norm=norm), np.fft.hfft(z, norm=norm))
        close(xp.fft.ihfft(x, norm=norm), np.fft.ihfft(a, norm=norm))
    close(xp.fft.irfft(y), np.fft.irfft(z))
    close(xp.fft.irfft(y, n=11, axis=0), np.fft.irfft(z, n=11, axis=0))
    close(xp.fft.fftn(y), np.fft.fftn(z))
    close(xp.fft.ifftn(y, s=(4, 12)), np.fft.ifftn(z, s=(4, 12), axes=(0, 1)))
    close(xp.fft.rfftn(x), np.fft.rfftn(a))
    close(xp.fft.irfftn(y), np.fft.irfftn(z))
    close(xp.fft.fftshift(y), np.fft.fftshift(z))
    close(xp.fft.ifftshift(y, axes=1), np.fft.ifftshift(z, axes=1))
    close(xp.fft.fftfreq(9, d=0.5), np.fft.fftfreq(9, d=0.5))
    close(xp.fft.rfftfreq(10), np.fft.rfftfreq(10))
    assert xp.fft.fft(xp.asarray(a.astype(np.float32))).dtype == xp.complex64
    with pytest.raises(ValueError):
        xp.fft.fft(y, n=0)
    with pytest.raises(ValueError):
        xp.fft.fft(y, norm="unitary")
    with pytest.raises(TypeError):
        xp.fft.rfft(y)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_functions_of_the_2024_standard_compute_as_numpy(chunks):
    rng = np.random.default_rng(13)
    a = rng.integers(-5, 6, size=(4, 6)).astype(np.float64)
    x = arr(a, chunks)
    same(xp.cumulative_prod(x, axis=1), np.cumulative_prod(a, axis=1))
    same(xp.cumulative_prod(x, axis=0, include_initial=True), np.cumulative_prod(a, axis=0, include_initial=True))
    same(xp.count_nonzero(x, axis=0), np.count_nonzero(a, axis=0))
    same(xp.diff(x, axis=1, n=2), np.diff(a, axis=1, n=2))
    same(xp.diff(x, axis=0, prepend=x[:1], append=x[-1:]), np.diff(a, axis=0, prepend=a[:1], append=a[-1:]))
    same(xp.reciprocal(x + 10), 1.0 / (a + 10), exact=False)
    # nextafter's edges: both zeros, equal values, infinities, NaN; float32 stays float32.
    v = np.array([1.0, 1.0, 0.0, -0.0, 0.0, 2.0, np.inf, np.finfo(np.float64).max, np.nan, 1.0])
    w = np.array([2.0, 0.0, -1.0, 1.0, -0.0, 2.0, 0.0, np.inf, 1.0, np.nan])
    with np.errstate(over="ignore"):  # NumPy warns stepping from the largest float to inf
        want = np.nextafter(v, w)
    same(xp.nextafter(arr(v, chunks), arr(w, chunks)), want)
    same(ts.nextafter(arr(v, chunks), arr(w, chunks)), want)
    f32 = np.array([1.0, -1.0, 0.0], np.float32)
    same(xp.nextafter(xp.asarray(f32), 0.5), np.nextafter(f32, np.float32(0.5)))
    # take_along_axis: argsort's order along either axis, negative indices, a broadcast axis.
    order = np.argsort(a, axis=1, kind="stable")
    same(xp.take_along_axis(x, xp.asarray(order), axis=1), np.take_along_axis(a, order, axis=1))
    same(xp.take_along_axis(x, xp.asarray(-1 - order), axis=1), np.take_along_axis(a, -1 - order, axis=1))
    rows = np.array([[3, 0, 0, 1, 2, 3]])
    same(xp.take_along_axis(x, xp.asarray(rows), axis=0), np.take_along_axis(a, rows, axis=0))
    same(xp.take_along_axis(x[:1], xp.asarray(order), axis=1), np.take_along_axis(a[:1], order, axis=1))
    col = np.array([[5], [0], [2], [1]])
    same(xp.take_along_axis(x, xp.asarray(col), axis=-1), np.take_along_axis(a, col, axis=-1))
    with pytest.raises(IndexError):
        xp.take_along_axis(x, xp.asarray(order + 6), axis=1)
    with pytest.raises(IndexError):
        xp.take_along_axis(x, xp.asarray(order[0]), axis=1)
    with pytest.raises(ValueError):
        xp.take_along_axis(x, xp.asarray(np.zeros((3, 2), np.int64)), axis=1)
    # Python scalars on either side take the array's dtype.
    i8 = xp.asarray(np.array([1, -2, 3], np.int8))
    same(xp.subtract(10, i8), np.subtract(10, np.array([1, -2, 3], np.int8)))
    same(xp.multiply(i8, 2), np.array([2, -4, 6], np.int8))
    assert xp.result_type(xp.int8, 1) == xp.int8
    assert xp.result_type(xp.float32, 1j) == xp.complex64
    assert xp.result_type(i8, 1.5) == xp.float64
    f32 = xp.asarray(np.array([0.5, -1.0], np.float32))
    assert xp.logaddexp(f32, 0).dtype == xp.float32
    same(xp.logaddexp(0, f32), np.logaddexp(np.float32(0), np.array([0.5, -1.0], np.float32)), exact=False)
