"""Lazy, chunked arrays with NumPy's API (``tessera.Array``)."""

from __future__ import annotations

import operator
from typing import Any, Iterable, Optional, Sequence, Tuple, Union

import numpy as np

from . import _ops, _tessera
from ._session import Session, get_session
from .errors import TesseraIndexError, TesseraTypeError, TesseraValueError

Axis = Union[None, int, Sequence[int]]

#: The dtypes Tessera computes in.
SUPPORTED_DTYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
    "complex64",
    "complex128",
)


def _dtype_name(dtype: Any) -> str:
    try:
        name = np.dtype(dtype).name
    except TypeError as e:
        raise TesseraTypeError(f"{dtype!r} is not a dtype") from e
    if name not in SUPPORTED_DTYPES:
        raise TesseraTypeError(f"dtype {name} is not supported; Tessera has {SUPPORTED_DTYPES}")
    return name


def _shape(shape: Union[int, Iterable[int]]) -> list:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    out = [operator.index(n) for n in shape]
    if any(n < 0 for n in out):
        raise TesseraValueError(f"negative dimensions are not allowed: {tuple(out)}")
    return out


def _axes(axis: Axis) -> Optional[list]:
    if axis is None:
        return None
    if isinstance(axis, (int, np.integer)):
        return [int(axis)]
    return [operator.index(a) for a in axis]


class Array:
    """A lazy n-dimensional array cut into chunks; operations build an expression that
    :meth:`compute` runs in parallel on a :class:`~tessera.Session`.

    Shapes and dtypes are checked when an operation is built, so a mistake raises at
    once; values are computed only by :meth:`compute`, :meth:`persist`,
    ``numpy.asarray(x)``, ``float(x)`` and the like.
    """

    __slots__ = ("_a", "_op", "_chunks", "_value")
    # NumPy defers to our reflected operators (ndarray + Array gives an Array).
    __array_priority__ = 100

    def __init__(self, native: Any, op: str, chunks: Optional[Tuple[int, ...]] = None):
        self._a = native
        self._op = op
        self._chunks = chunks
        # The single element once read (``item``): reading it again, as scikit-learn does
        # with a rank it slices by, runs no second job.
        self._value: Any = None

    # --- description -----------------------------------------------------------------
    @property
    def shape(self) -> Tuple[int, ...]:
        """The shape."""
        return tuple(self._a.shape)

    @property
    def dtype(self) -> np.dtype:
        """The element type, as a NumPy dtype."""
        return np.dtype(self._a.dtype)

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._a.shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        """Bytes the computed array takes."""
        return self.size * self.dtype.itemsize

    @property
    def chunks(self) -> Optional[Tuple[int, ...]]:
        """The chunk shape set by :meth:`rechunk`, or ``None`` for automatic chunks
        (about the session's ``chunk_bytes`` each, trailing axes whole)."""
        return self._chunks

    @property
    def real(self) -> "Array":
        """The real part (a real array itself)."""
        return self._unary("real")

    @property
    def imag(self) -> "Array":
        """The imaginary part (zeros for a real array)."""
        return self._unary("imag")

    def conj(self) -> "Array":
        """The complex conjugate (a real array itself)."""
        return self._unary("conj")

    conjugate = conj

    @property
    def T(self) -> "Array":
        """The transpose (axes reversed)."""
        return Array(self._a.unary("transpose"), "transpose")

    @property
    def mT(self) -> "Array":
        """The last two axes swapped (the array API's matrix transpose)."""
        from . import array_api

        return array_api.matrix_transpose(self)

    @property
    def device(self) -> str:
        """Where the array lives for the array API: ``"cpu"`` (the session places chunks
        on its devices itself)."""
        return "cpu"

    def to_device(self, device: Any, /, *, stream: Any = None) -> "Array":
        """The array on ``device`` (only ``"cpu"``: see :meth:`to_backend` for GPUs)."""
        if device != "cpu":
            raise TesseraValueError(f"unknown device {device!r}; the array API device is 'cpu'")
        return self

    def __array_namespace__(self, /, *, api_version: Optional[str] = None) -> Any:
        """The array API standard's namespace for this array: :mod:`tessera.array_api`."""
        if api_version not in (None, "2021.12", "2022.12", "2023.12", "2024.12"):
            raise TesseraValueError(f"array API version {api_version} is not supported")
        from . import array_api

        return array_api

    def __dlpack__(
        self,
        /,
        *,
        stream: Any = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any:
        """Computes the array and exports it through DLPack (NumPy's buffer)."""
        return np.asarray(self).__dlpack__(
            stream=stream, max_version=max_version, dl_device=dl_device, copy=copy
        )

    def __dlpack_device__(self) -> Tuple[int, int]:
        """DLPack's CPU device."""
        return (1, 0)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __repr__(self) -> str:
        chunks = "auto" if self._chunks is None else self._chunks
        return (
            f"tessera.Array<{self._op}, shape={self.shape}, dtype={self.dtype.name}, "
            f"chunks={chunks}>"
        )

    # --- computing ---------------------------------------------------------------------
    def compute(self, session: Optional[Session] = None) -> Any:
        """Runs the job and returns a :class:`numpy.ndarray` (a NumPy scalar for a 0-d
        array). The array's memory is the Rust result buffer itself: no copy is made."""
        out = self._a.compute(get_session(session)._native)
        return out[()] if out.ndim == 0 else out

    def persist(self, session: Optional[Session] = None) -> "Array":
        """Computes the array and keeps its chunks in the session (Dask's ``persist``);
        returns an array that reads them."""
        return Array(self._a.persist(get_session(session)._native), "persist", self._chunks)

    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> np.ndarray:
        out = np.asarray(self._a.compute(get_session()._native))
        return out if dtype is None else out.astype(dtype, copy=False)

    def item(self) -> Any:
        """The single element, computed (once: it is kept for later reads), as a Python
        scalar."""
        if self.size != 1:
            raise TesseraValueError("can only convert an array of size 1 to a Python scalar")
        if self._value is None:
            self._value = np.asarray(self).reshape(()).item()
        return self._value

    def __bool__(self) -> bool:
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __pos__(self) -> "Array":
        return self

    def __index__(self) -> int:
        if self.dtype.kind not in "iub":
            raise TesseraTypeError("only integer arrays can be used as an index")
        return int(self.item())

    # --- shape -------------------------------------------------------------------------
    def reshape(self, *shape: Any) -> "Array":
        """The same elements in another shape (one ``-1`` is inferred)."""
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        return Array(self._a.reshape([operator.index(n) for n in shape]), "reshape")

    def transpose(self, *axes: Any) -> "Array":
        """The axes permuted (reversed when none are given)."""
        if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
            axes = tuple(axes[0])
        if not axes:
            return self.T
        return Array(self._a.permute([operator.index(a) for a in axes]), "transpose")

    def astype(self, dtype: Any) -> "Array":
        """Converted to ``dtype`` (one of :data:`SUPPORTED_DTYPES`)."""
        return Array(self._a.astype(_dtype_name(dtype)), "astype", self._chunks)

    def rechunk(self, chunks: Union[int, Sequence[int]]) -> "Array":
        """The same array cut into chunks of shape ``chunks`` (an int applies to every
        axis; the last chunk of an axis may be smaller)."""
        if isinstance(chunks, (int, np.integer)):
            chunks = [min(int(chunks), max(n, 1)) for n in self.shape]
        chunks = [operator.index(c) for c in chunks]
        return Array(self._a.rechunk(chunks), "rechunk", tuple(chunks))

    def to_backend(self, backend: str) -> "Array":
        """The same array computed on the devices of ``backend``, as Dask's
        ``Array.to_backend`` and Mars's ``to_gpu()``/``to_cpu()``: ``"cpu"`` runs this
        array's own work on the CPU pool even in a GPU session; ``"cuda"`` on a GPU (a job
        that needs it in a session without one raises :class:`~tessera.ComputeError`);
        ``"auto"`` leaves it to the session. Later operations run where the session puts
        them."""
        return Array(self._a.to_backend(backend), "to_backend", self._chunks)

    def __getitem__(self, key: Any) -> "Array":
        return _getitem(self, key)

    def __matmul__(self, other: Any) -> "Array":
        """``self @ other``: the array API's :func:`tessera.array_api.matmul` (batched,
        in the promoted dtype)."""
        from .array_api import matmul

        return matmul(self, asarray(other))

    def __rmatmul__(self, other: Any) -> "Array":
        """``other @ self``."""
        from .array_api import matmul

        return matmul(asarray(other), self)

    def __setitem__(self, key: Any, value: Any) -> None:
        """``x[key] = value`` (basic indexing, or a bool mask of ``x``'s shape with a scalar
        value or one value per selected element). The array is an expression, so this makes
        ``x`` a new one (``where`` over the selected positions); arrays built from ``x``
        before keep the old values. A mask with an array of values computes the mask and the
        values at once (how many elements the mask selects is data)."""
        self._a = _assigned(self, key, value)._a
        self._value = None
        self._op = "setitem"

    # --- reductions --------------------------------------------------------------------
    def _reduce(self, op: str, axis: Axis, keepdims: bool, ddof: int = 0) -> "Array":
        return Array(self._a.reduce(op, _axes(axis), keepdims, ddof), op)

    def sum(self, axis: Axis = None, keepdims: bool = False) -> "Array":
        """Sum over ``axis`` (all axes when ``None``)."""
        return self._reduce("sum", axis, keepdims)

    def prod(self, axis: Axis = None, keepdims: bool = False) -> "Array":
        """Product over ``axis``."""
        return self._reduce("prod", axis, keepdims)

    def mean(self, axis: Axis = None, keepdims: bool = False) -> "Array":
        """Mean over ``axis``."""
        return self._reduce("mean", axis, keepdims)

    def min(self, axis: Axis = None, keepdims: bool = False) -> "Array":
        """Minimum over ``axis`` (NaN if any element is NaN, as NumPy)."""
        return self._reduce("min", axis, keepdims)

    def max(self, axis: Axis = None, keepdims: bool = False) -> "Array":
        """Maximum over ``axis``."""
        return self._reduce("max", axis, keepdims)

    def var(self, axis: Axis = None, keepdims: bool = False, ddof: int = 0) -> "Array":
        """Variance over ``axis`` with ``ddof`` delta degrees of freedom."""
        return self._reduce("var", axis, keepdims, ddof)

    def std(self, axis: Axis = None, keepdims: bool = False, ddof: int = 0) -> "Array":
        """Standard deviation over ``axis`` with ``ddof`` delta degrees of freedom."""
        return self._reduce("std", axis, keepdims, ddof)

    def argmin(self, axis: Optional[int] = None, keepdims: bool = False) -> "Array":
        """Index of the first minimum (a flat index when ``axis`` is ``None``)."""
        return self._reduce("argmin", axis, keepdims)

    def argmax(self, axis: Optional[int] = None, keepdims: bool = False) -> "Array":
        """Index of the first maximum (a flat index when ``axis`` is ``None``)."""
        return self._reduce("argmax", axis, keepdims)

    def any(self, axis: Axis = None, keepdims: bool = False) -> "Array":
        """Whether any element over ``axis`` is non-zero."""
        return self._reduce("any", axis, keepdims)

    def all(self, axis: Axis = None, keepdims: bool = False) -> "Array":
        """Whether every element over ``axis`` is non-zero."""
        return self._reduce("all", axis, keepdims)

    # --- NaN-skipping reductions, running and sorting ----------------------------------
    def _nan(self, op: str, axis: Axis, keepdims: bool, ddof: int = 0) -> "Array":
        return Array(self._a.reduce(op, _axes(axis), keepdims, ddof, True), "nan" + op)

    def cumsum(self, axis: Optional[int] = None) -> "Array":
        """Running sum along ``axis`` (of the flattened array when ``None``; integers and
        bools accumulate in int64, as NumPy)."""
        return Array(self._a.cumulative("sum", axis), "cumsum")

    def cumprod(self, axis: Optional[int] = None) -> "Array":
        """Running product along ``axis`` (of the flattened array when ``None``)."""
        return Array(self._a.cumulative("prod", axis), "cumprod")

    def _sort(self, axis: Optional[int], positions: bool) -> "Array":
        # Along ``axis``, or along the flattened array when ``None``.
        x, axis = (self.reshape(-1), 0) if axis is None else (self, axis)
        return Array(x._a.sort(operator.index(axis), positions), "argsort" if positions else "sort")

    def argsort(self, axis: Optional[int] = -1) -> "Array":
        """The int64 positions that sort each lane along ``axis`` (stable, NaN last; of
        the flattened array when ``None``)."""
        return self._sort(axis, True)

    def take(self, indices: Any, axis: Optional[int] = None) -> "Array":
        """The elements at ``indices`` along ``axis`` (of the flattened array when
        ``None``); negative indices count from the end."""
        idx = np.asarray(indices)
        if idx.ndim > 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise TesseraIndexError("take needs an integer or a flat list of integer indices")
        flat = [int(i) for i in idx.reshape(-1)]
        out = Array(self._a.take(flat, None if axis is None else operator.index(axis)), "take")
        if idx.ndim == 0:  # one index: its axis goes, as in NumPy's take(x, 3)
            gone = 0 if axis is None else operator.index(axis) % out.ndim
            out = out.reshape([n for d, n in enumerate(out.shape) if d != gone])
        return out

    def clip(self, min: Any = None, max: Any = None) -> "Array":  # noqa: A002 - NumPy's names
        """Limited to ``[min, max]`` (either may be ``None``; arrays or scalars)."""
        if min is None and max is None:
            raise TesseraValueError("clip needs min or max")
        if min is None:
            return self._binary("minimum", max)
        if max is None:
            return self._binary("maximum", min)
        return Array(self._a.clip(_operand(min), _operand(max)), "clip", self._chunks)

    def round(self, decimals: int = 0) -> "Array":
        """Rounded to ``decimals`` decimals, half to even (NumPy's ``round``)."""
        return Array(self._a.round(operator.index(decimals)), "round", self._chunks)

    # --- operators ---------------------------------------------------------------------
    def _binary(self, op: str, other: Any, reflected: bool = False) -> "Array":
        other = _operand(other)
        return Array(self._a.binary(op, other, reflected), op, self._chunks)

    def _unary(self, op: str) -> "Array":
        return Array(self._a.unary(op), op, self._chunks)



_ops.install(
    Array,
    binary={
        "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide",
        "mod": "remainder", "pow": "pow", "and": "bitwise_and",
        "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift",
        "rshift": "right_shift", "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt",
        "ge": "ge",
    },
    reflected=["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor"],
    unary={"neg": "neg", "abs": "abs", "invert": "invert"},
)


def _operand(x: Any) -> Any:
    """The native operand of ``x``: an array's native, a Python scalar, or (NumPy data) a
    copied array."""
    if isinstance(x, Array):
        return x._a
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return x
    if isinstance(x, (np.ndarray, np.generic, list, tuple)):
        return asarray(x)._a
    raise TesseraTypeError(f"unsupported operand type {type(x).__name__}")


def _index(i: Any, n: int, axis: int) -> int:
    i = operator.index(i)
    j = i + n if i < 0 else i
    if not 0 <= j < n:
        raise TesseraIndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
    return j


def _getitem(a: Array, key: Any) -> Array:
    """Basic indexing (ints, slices with any step, ``None`` and one ``...``), a bool mask of
    the array's shape (NumPy's ``x[mask]``: the selected elements in C order, computed on the
    default session since their number is data), or integers and integer arrays, one per
    leading axis (``x[[2, 0, 2]]``, ``x[rows, cols]``: see :func:`_integer_arrays`)."""
    if isinstance(key, (Array, np.ndarray, list, bool, np.bool_)):
        return _array_index(a, key)
    if isinstance(key, tuple) and any(isinstance(k, (Array, np.ndarray, list)) for k in key):
        return _integer_arrays(a, key)
    expanded = _expanded(a, key)
    slices, out_shape, axis, reshape = [], [], 0, False
    for k in expanded:
        if k is None:
            out_shape.append(None)
            reshape = True
            continue
        n = a.shape[axis]
        if isinstance(k, slice):
            step = 1 if k.step is None else operator.index(k.step)
            if step == 0:
                raise TesseraValueError("slice step cannot be zero")
            start = None if k.start is None else operator.index(k.start)
            stop = None if k.stop is None else operator.index(k.stop)
            slices.append((start, stop, step))
            out_shape.append(len(range(*k.indices(n))))
        else:
            try:
                j = _index(k, n, axis)
            except TypeError as e:
                raise TesseraTypeError(f"invalid index {k!r}") from e
            slices.append((j, j + 1, 1))
            reshape = True
        axis += 1
    out = Array(a._a.slice(slices), "getitem")
    if reshape:
        out = out.reshape([1 if n is None else n for n in out_shape])
    return out


def _expanded(a: Array, key: Any) -> list:
    """``key`` (basic indexing) with its ``...`` spelled out and trailing ``:`` added."""
    if not isinstance(key, tuple):
        key = (key,)
    if sum(k is Ellipsis for k in key) > 1:
        raise TesseraIndexError("an index can only have a single ellipsis ('...')")
    real = sum(k is not None and k is not Ellipsis for k in key)
    if real > a.ndim:
        raise TesseraIndexError(
            f"too many indices for array: array is {a.ndim}-dimensional, but {real} were indexed"
        )
    expanded: list = []
    for k in key:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (a.ndim - real))
        else:
            expanded.append(k)
    expanded.extend([slice(None)] * (a.ndim - sum(k is not None for k in expanded)))
    return expanded


def _assigned(a: Array, key: Any, value: Any) -> Array:
    """``a`` with ``value`` at ``key`` (see :meth:`Array.__setitem__`)."""
    from ._functions import where

    if isinstance(key, (Array, np.ndarray, list)):
        mask = asarray(key)
        if mask.dtype != np.bool_ or tuple(mask.shape) != tuple(a.shape[: mask.ndim]):
            raise TesseraIndexError(
                "x[mask] = v needs a bool mask of x's shape or of its leading axes"
            )
        v = asarray(value)
        if v.size == 1:
            # A mask of the leading axes selects whole sub-arrays.
            full = mask.reshape(list(mask.shape) + [1] * (a.ndim - mask.ndim))
            return where(full, v.reshape(()).astype(a.dtype), a)
        return _assigned_masked(a, mask, v)
    # Per axis: which positions are selected (a bool mask) and, for each position, which
    # element of the value lands there.
    masks, maps, value_shape = [], [], []
    axis = 0
    for k in _expanded(a, key):
        if k is None:
            continue
        n = a.shape[axis]
        if isinstance(k, slice):
            picked = range(*k.indices(n))
        elif isinstance(k, (Array, np.ndarray, list)):
            raise TesseraIndexError("x[key] = v takes basic indices or one bool mask")
        else:
            picked = [_index(k, n, axis)]
        if not len(picked):
            return a  # nothing selected
        sel, where_from = np.zeros(n, np.bool_), np.zeros(n, np.int64)
        sel[list(picked)] = True
        where_from[list(picked)] = np.arange(len(picked))
        shape = [1] * a.ndim
        shape[axis] = n
        masks.append(asarray(sel).reshape(shape))
        maps.append(where_from)
        value_shape.append(len(picked) if isinstance(k, slice) else 1)
        axis += 1
    target = _getitem(a, key).shape
    v = asarray(value).astype(a.dtype)
    v = Array(v._a.broadcast_to(list(target)), "broadcast_to").reshape(value_shape)
    mask = None  # every position, until an axis selects fewer
    for d in range(a.ndim):
        if value_shape[d] != a.shape[d]:
            mask = masks[d] if mask is None else mask & masks[d]
        v = v.take(maps[d], d)
    return v if mask is None else where(mask, v, a)


def _assigned_masked(a: Array, mask: Array, v: Array) -> Array:
    """``a`` with the values ``v`` where ``mask`` (of ``a``'s shape or of its leading axes)
    holds: one value, or one sub-array, per selected position in C order, broadcast as
    NumPy's ``a[mask] = v``. How many positions the mask selects is known only once it is
    computed: the mask and ``v`` are computed here, and the values land in a host array of
    ``a``'s shape that the result reads."""
    from ._functions import where

    m = np.asarray(mask.compute())
    placed = np.zeros(a.shape, dtype=a.dtype)
    try:
        placed[m] = np.asarray(v.compute()).astype(a.dtype, copy=False)
    except ValueError as e:
        raise TesseraValueError(f"x[mask] = v: {e}") from None
    full = m.reshape(m.shape + (1,) * (a.ndim - m.ndim))
    return where(asarray(full), asarray(placed), a)


def _array_index(a: Array, key: Any) -> Array:
    """``a[key]`` for an array key: a bool mask of ``a``'s shape or of its leading axes
    (the selected elements, or sub-arrays, in C order; a 0-d mask adds an axis of length 1
    or 0), or integer positions along the first axis."""
    if isinstance(key, Array) and key.dtype == np.bool_ and key.shape == a.shape and a.ndim:
        return Array(a._a.boolean_mask(key._a, get_session()._native), "getitem[mask]")
    idx = np.asarray(key.compute() if isinstance(key, Array) else key)
    if idx.dtype == np.bool_:
        k = idx.ndim
        if idx.size == 0 and k <= a.ndim and all(m in (n, 0) for m, n in zip(idx.shape, a.shape)):
            # Nothing to select: NumPy takes a mask axis of length 0 against any length.
            return a[(slice(0, 0),) * k].reshape((0,) + a.shape[k:])
        if idx.shape != a.shape[:k]:
            raise TesseraIndexError(
                f"boolean index of shape {idx.shape} does not match the array's shape "
                f"{a.shape} or its leading axes"
            )
        if k == 0:  # NumPy's x[True] / x[False]
            return a.reshape((1,) + a.shape)[: int(idx)]
        if k == a.ndim and k > 1:
            return _array_index(a, asarray(idx))
        rows = a.reshape((-1,) + a.shape[k:]) if k > 1 else a
        return _array_index(rows, np.flatnonzero(idx))
    return _integer_arrays(a, (idx,))


def _integer_arrays(a: Array, key: tuple) -> Array:
    """``a[key]`` for integers and integer arrays, one per leading axis (the array API's
    integer array indexing, NumPy's advanced indexing without slices): the indices
    broadcast together, and each position of their shape takes the sub-array they name,
    so the result's shape is theirs followed by ``a``'s remaining axes. The indices are
    read into this process (as :meth:`Array.take` reads them) and become one gather of
    rows of ``a`` with its indexed axes flattened."""
    if len(key) > a.ndim:
        raise TesseraIndexError(
            f"too many indices for array: array is {a.ndim}-dimensional, but {len(key)} were "
            "indexed"
        )
    positions = []
    for axis, k in enumerate(key):
        if isinstance(k, (bool, np.bool_)) or not isinstance(
            k, (Array, np.ndarray, list, int, np.integer)
        ):
            raise TesseraIndexError(
                "an index with arrays takes integers and integer arrays only, one per leading "
                f"axis (got {type(k).__name__} for axis {axis}); a bool mask must be the only "
                "index"
            )
        idx = np.asarray(k.compute() if isinstance(k, Array) else k)
        if idx.size == 0:
            idx = idx.astype(np.int64)
        if idx.dtype.kind not in "iu":
            raise TesseraIndexError(
                f"arrays used as indices must be of integers, got {idx.dtype} for axis {axis}"
            )
        n = a.shape[axis]
        if idx.size and (idx.min() < -n or idx.max() >= n):
            bad = idx[(idx < -n) | (idx >= n)].flat[0]
            raise TesseraIndexError(
                f"index {bad} is out of bounds for axis {axis} with size {n}"
            )
        positions.append(np.where(idx < 0, idx + n, idx).astype(np.int64))
    try:
        positions = np.broadcast_arrays(*positions)
    except ValueError as e:
        shapes = " ".join(str(p.shape) for p in positions)
        raise TesseraIndexError(
            f"shape mismatch: indexing arrays could not be broadcast together with shapes {shapes}"
        ) from e
    shape = positions[0].shape
    rest = tuple(a.shape[len(key):])
    flat = np.ravel_multi_index(tuple(positions), a.shape[: len(key)])
    picked = [int(i) for i in np.reshape(flat, -1)]
    rows = a.reshape((-1,) + rest)
    return Array(rows._a.take(picked, 0), "getitem[take]").reshape(shape + rest)


def asarray(x: Any, dtype: Any = None) -> Array:
    """An array from ``x`` (a :class:`tessera.Array`, a NumPy array, or anything
    ``numpy.asarray`` takes). NumPy data is copied once into Tessera's buffer."""
    if isinstance(x, Array):
        return x if dtype is None else x.astype(dtype)
    arr = np.asarray(x, dtype=None if dtype is None else _dtype_name(dtype))
    if arr.dtype.name not in SUPPORTED_DTYPES:
        raise TesseraTypeError(
            f"dtype {arr.dtype} is not supported; Tessera has {SUPPORTED_DTYPES}"
        )
    # (Not np.ascontiguousarray: it turns a 0-d array into a 1-d one.)
    arr = arr if arr.flags.c_contiguous else arr.copy(order="C")
    return Array(_tessera.from_numpy(arr), "from_numpy")


from_numpy = asarray
