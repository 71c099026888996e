"""Tessera: parallel, chunked NumPy- and pandas-style computing on a Rust actor runtime.

>>> import tessera as ts
>>> x = ts.random.default_rng(7).uniform(-1, 1, size=(1_000_000, 2))
>>> inside = ((x * x).sum(axis=1) < 1).sum()
>>> pi = float(inside.astype("float64") * 4 / 1_000_000)

Arrays and frames are lazy: operations build an expression, checked for shapes and
dtypes at once, that ``compute()`` cuts into chunks and runs on every core of a
:class:`Session` (the default session is made on first use). Results come back as NumPy
arrays (owning Tessera's result buffer, no copy) and pandas/Arrow tables.
"""

from . import array_api, fft, learn, linalg, random
from ._array import SUPPORTED_DTYPES, Array, asarray, from_numpy
from ._frame import (
    DataFrame,
    GroupBy,
    Scalar,
    Series,
    concat,
    from_arrow,
    from_pandas,
    read_csv,
    read_parquet,
)
from ._functions import (
    abs,
    all,
    any,
    arange,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    argmax,
    argmin,
    argsort,
    around,
    ceil,
    clip,
    concatenate,
    conj,
    conjugate,
    copysign,
    cos,
    cosh,
    count_nonzero,
    cumprod,
    cumsum,
    diff,
    exp,
    expm1,
    floor,
    full,
    hypot,
    imag,
    isfinite,
    isin,
    isinf,
    isnan,
    linspace,
    log,
    log10,
    log1p,
    log2,
    logical_and,
    logical_not,
    logical_or,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    nanargmax,
    nextafter,
    nanargmin,
    nanmax,
    nanmean,
    nanmin,
    nanstd,
    nansum,
    nanvar,
    ones,
    outer,
    prod,
    real,
    reshape,
    rint,
    round,
    sign,
    sin,
    sinh,
    sort,
    sqrt,
    std,
    sum,
    take,
    tan,
    tanh,
    transpose,
    trunc,
    unique,
    var,
    where,
    zeros,
)
from ._session import Session, get_session
from ._sql import sql
from .errors import (
    ClusterError,
    ColumnNotFoundError,
    ComputeError,
    SqlError,
    TesseraAxisError,
    TesseraError,
    TesseraFileNotFoundError,
    TesseraIndexError,
    TesseraMemoryError,
    TesseraOSError,
    TesseraTypeError,
    TesseraValueError,
)

__all__ = [name for name in dir() if not name.startswith("_")]
