"""Lazy, chunked dataframes with pandas' API (``tessera.DataFrame``).

Where Tessera differs from pandas:

- groupby results hold the keys as columns (pandas' ``as_index=False``), sorted by the
  keys unless ``sort=False``; several functions on one column are named ``col_func``
  (pandas makes a column MultiIndex);
- rows of a filter, merge or ``drop_duplicates`` come back in an order that may differ
  from pandas' (sort before comparing);
- integer columns with nulls stay integers in Arrow (``to_arrow``); ``compute`` gives
  pandas ``float64`` for them, as pandas itself does;
- frames have no index: a boolean Series filters (``df[mask]``) or is assigned to its own
  frame only; ``Series.isin`` with another frame's Series is the exception that makes this
  useful (a mark join: ``df[df.k.isin(other.k)]``, ``df[~df.k.isin(other.k)]``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Union

from . import _ops, _tessera
from ._accessors import DtAccessor, StrAccessor
from ._session import Session, get_session
from .errors import TesseraTypeError, TesseraValueError


def _pyarrow():
    try:
        import pyarrow
    except ImportError as e:  # pragma: no cover - an install without the extra
        raise ImportError("tessera dataframes need pyarrow (pip install pyarrow)") from e
    return pyarrow


class _Stream:
    """An Arrow PyCapsule stream for pyarrow to read (see :func:`_table`)."""

    __slots__ = ("_capsule",)

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self._capsule


def _table(capsule: Any) -> Any:
    """The :class:`pyarrow.Table` over an Arrow stream capsule (Tessera's buffers, no copy).

    Read through ``RecordBatchReader``: ``pa.table(stream)`` imports pandas on its first
    call (about 0.25 s) to check whether it was given a pandas object.
    """
    return _pyarrow().RecordBatchReader.from_stream(_Stream(capsule)).read_all()


def _names(x: Union[str, Sequence[str]]) -> List[str]:
    return [x] if isinstance(x, str) else list(x)


class DataFrame:
    """A lazy table cut into chunks of rows; :meth:`compute` gives a
    :class:`pandas.DataFrame`, :meth:`to_arrow` a :class:`pyarrow.Table`."""

    __slots__ = ("_f",)

    def __init__(self, native: Any) -> None:
        self._f = native

    @property
    def columns(self) -> List[str]:
        """The column names."""
        return list(self._f.columns)

    @property
    def dtypes(self) -> Dict[str, str]:
        """Each column's Arrow type, as text."""
        return dict(self._f.dtypes)

    def __repr__(self) -> str:
        return f"tessera.DataFrame<columns={self.columns}>"

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return Series(self._f.column(key))
        if isinstance(key, Series):
            return DataFrame(self._f.filter(key._s))
        if isinstance(key, (list, tuple)):
            return DataFrame(self._f.select(list(key)))
        raise TesseraTypeError(f"cannot index a DataFrame with {type(key).__name__}")

    def __getattr__(self, name: str) -> "Series":
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._f.columns:
            return Series(self._f.column(name))
        raise AttributeError(f"DataFrame has no attribute or column {name!r}")

    def assign(self, **columns: Any) -> "DataFrame":
        """With columns added or replaced: each value a Series of this frame or a scalar."""
        pairs = [(k, v._s if isinstance(v, Series) else v) for k, v in columns.items()]
        return DataFrame(self._f.with_columns(pairs))

    def groupby(self, by: Union[str, Sequence[str]], sort: bool = True) -> "GroupBy":
        """Groups by the key columns ``by``."""
        return GroupBy(self, _names(by), sort)

    def merge(
        self,
        right: "DataFrame",
        how: str = "inner",
        on: Union[None, str, Sequence[str]] = None,
        left_on: Union[None, str, Sequence[str]] = None,
        right_on: Union[None, str, Sequence[str]] = None,
        suffixes: Sequence[str] = ("_x", "_y"),
        indicator: Union[bool, str] = False,
    ) -> "DataFrame":
        """Database-style join (pandas' ``merge``): ``how`` is inner, left, right or
        outer; keys by ``on`` or ``left_on``/``right_on`` (by default the common
        columns). Null keys match each other, as in pandas.

        ``indicator=True`` adds pandas' ``_merge`` column (or a column of the name given):
        ``"left_only"``, ``"right_only"`` or ``"both"``, a categorical with pandas'
        categories in pandas' order.

        Tessera's additions: ``how="leftsemi"`` keeps each left row whose key occurs in
        ``right`` once (SQL's ``EXISTS``/``IN``; pandas' ``df[df.k.isin(right.k)]``), and
        ``how="leftanti"`` each left row whose key does not (``NOT EXISTS``); both give the
        left columns only, read only ``right``'s keys, and take no indicator. Unlike SQL,
        a null key matches a null key there too."""
        if on is not None and (left_on is not None or right_on is not None):
            raise TesseraValueError('pass "on" or "left_on"/"right_on", not both')
        if on is None and left_on is None and right_on is None:
            on = [c for c in self.columns if c in right.columns]
            if not on:
                raise TesseraValueError("no common columns to merge on")
        if on is not None:
            left_on = right_on = on
        if left_on is None or right_on is None:
            raise TesseraValueError('pass both "left_on" and "right_on"')
        left_keys, right_keys = _names(left_on), _names(right_on)
        if len(left_keys) != len(right_keys):
            raise TesseraValueError("left_on and right_on must have the same length")
        sx, sy = suffixes
        if indicator is True:
            name: Optional[str] = "_merge"
        elif indicator is False:
            name = None
        elif isinstance(indicator, str):
            name = indicator
        else:
            raise TesseraTypeError("indicator must be a bool or a column name")
        return DataFrame(self._f.merge(right._f, left_keys, right_keys, how, (sx, sy), name))

    def sort_values(self, by: Union[str, Sequence[str]], ascending: bool = True) -> "DataFrame":
        """Sorted by the columns ``by`` (stable; nulls last)."""
        return DataFrame(self._f.sort_values(_names(by), bool(ascending)))

    def head(self, n: int = 5) -> "DataFrame":
        """The first ``n`` rows."""
        return DataFrame(self._f.head(n))

    def drop_duplicates(self, subset: Union[None, str, Sequence[str]] = None) -> "DataFrame":
        """Without repeated rows (judged on ``subset`` when given)."""
        return DataFrame(self._f.drop_duplicates(None if subset is None else _names(subset)))

    def compute(self, session: Optional[Session] = None) -> Any:
        """Runs the job; returns a :class:`pandas.DataFrame` (through Arrow)."""
        return self.to_arrow(session).to_pandas()

    def to_arrow(self, session: Optional[Session] = None) -> Any:
        """Runs the job; returns a :class:`pyarrow.Table` over the result's chunks (its
        buffers are Tessera's, not copied)."""
        return _table(self._f.compute_stream(get_session(session)._native))

    def persist(self, session: Optional[Session] = None) -> "DataFrame":
        """Computes the frame and keeps its chunks in the session."""
        return DataFrame(self._f.persist(get_session(session)._native))

    def describe(self, session: Optional[Session] = None) -> Any:
        """Summary statistics of the numeric columns, as a pandas DataFrame."""
        return _table(self._f.describe(get_session(session)._native)).to_pandas()

    def __len__(self) -> int:
        return self._f.len(get_session()._native)

    def to_csv(self, path: str, session: Optional[Session] = None) -> int:
        """Computes the frame and writes it to ``path`` as CSV; returns the rows written."""
        return self._f.write(get_session(session)._native, str(path), False)

    def to_parquet(self, path: str, session: Optional[Session] = None) -> int:
        """Computes the frame and writes it to ``path`` as Parquet; returns the rows."""
        return self._f.write(get_session(session)._native, str(path), True)


class Series:
    """One column of a DataFrame, or an expression over its columns."""

    __slots__ = ("_s",)

    def __init__(self, native: Any) -> None:
        self._s = native

    @property
    def name(self) -> str:
        """The column's name."""
        return self._s.name

    def __repr__(self) -> str:
        return f"tessera.Series<{self.name}>"

    def _binary(self, op: str, other: Any, reflected: bool = False) -> "Series":
        other = other._s if isinstance(other, Series) else other
        return Series(self._s.binary(op, other, reflected))

    def _unary(self, op: str) -> "Series":
        return Series(self._s.unary(op))

    def isin(self, values: Union["Series", Sequence[Any]]) -> "Series":
        """Whether each value is one of ``values``: a list of scalars (false for null), or a
        tessera Series of any frame, whose values are looked in by a join (never null; as in
        pandas, a null is in values that hold a null, unlike SQL's ``IN``). The result is a
        boolean Series of this one's frame: combine it with others of that frame, negate it
        with ``~``, filter with ``df[mask]`` or ``assign`` it. Rows of a frame filtered so
        come in the order of a merge (sort before comparing)."""
        if isinstance(values, Series):
            return Series(self._s.isin_series(values._s))
        if isinstance(values, DataFrame):
            raise TesseraTypeError("Series.isin takes a list or a Series, not a DataFrame")
        return Series(self._s.isin(list(values)))

    def fillna(self, value: Any) -> "Series":
        """Nulls replaced by ``value``."""
        return Series(self._s.fillna(value))

    def between(self, left: Any, right: Any) -> "Series":
        """Whether ``left <= value <= right`` (pandas' ``inclusive='both'``)."""
        return Series(self._s.between(left, right))

    def astype(self, dtype: Any) -> "Series":
        """Converted to ``dtype``: a NumPy or pandas name (``'int32'``, ``'float64'``,
        ``'string'``, ``'category'``, ``'datetime64[ns]'``…) or ``int float str bool``."""
        names = {int: "int64", float: "float64", str: "string", bool: "bool"}
        name = names.get(dtype) if isinstance(dtype, type) else None
        return Series(self._s.astype(name or str(dtype)))

    def map(self, arg: Dict[Any, Any]) -> "Series":
        """Each value mapped through the dict ``arg``; values not in it become null."""
        if not isinstance(arg, dict):
            raise TesseraTypeError("Series.map takes a dict (functions cannot run in Tessera)")
        return Series(self._s.map_values(list(arg.items())))

    def where(self, cond: "Series", other: Any = None) -> "Series":
        """The values where ``cond`` is true, ``other`` (a scalar or a column of the same
        frame; null by default) where it is false or null."""
        if not isinstance(cond, Series):
            raise TesseraTypeError("Series.where: cond must be a boolean column of the same frame")
        other = other._s if isinstance(other, Series) else other
        return Series(self._s.where_(cond._s, other))

    def mask(self, cond: "Series", other: Any = None) -> "Series":
        """The values where ``cond`` is false, ``other`` where it is true (pandas'
        ``mask``; a null condition keeps ``other``)."""
        if not isinstance(cond, Series):
            raise TesseraTypeError("Series.mask: cond must be a boolean column of the same frame")
        return self.where(~cond, other)

    def unique(self) -> "Series":
        """The distinct values, in no particular order (a lazy series)."""
        return Series(self._s.unique())

    @property
    def str(self) -> StrAccessor:
        """String functions: ``lower upper len strip startswith endswith contains replace
        slice``."""
        return StrAccessor(self)

    @property
    def dt(self) -> DtAccessor:
        """Date fields: ``year month day hour minute second weekday dayofyear quarter`` and
        ``floor``."""
        return DtAccessor(self)

    def to_frame(self) -> DataFrame:
        """The series as a one-column frame."""
        return DataFrame(self._s.to_frame())

    def value_counts(self) -> DataFrame:
        """Each value and its ``count``, most frequent first."""
        return DataFrame(self._s.to_frame().value_counts(self.name))

    def _reduce(self, func: str) -> "Scalar":
        name = self.name
        return Scalar(self._s.to_frame().groupby_agg([], [(name, func, name)]), name)

    def sum(self) -> "Scalar":
        """Sum of the non-null values."""
        return self._reduce("sum")

    def mean(self) -> "Scalar":
        """Mean of the non-null values."""
        return self._reduce("mean")

    def min(self) -> "Scalar":
        """Smallest non-null value."""
        return self._reduce("min")

    def max(self) -> "Scalar":
        """Largest non-null value."""
        return self._reduce("max")

    def count(self) -> "Scalar":
        """Number of non-null values."""
        return self._reduce("count")

    def std(self) -> "Scalar":
        """Sample standard deviation (ddof 1)."""
        return self._reduce("std")

    def var(self) -> "Scalar":
        """Sample variance (ddof 1)."""
        return self._reduce("var")

    def nunique(self) -> "Scalar":
        """Number of distinct non-null values."""
        return self._reduce("nunique")

    def compute(self, session: Optional[Session] = None) -> Any:
        """Runs the job; returns a :class:`pandas.Series`."""
        return self.to_frame().compute(session)[self.name]

    def to_arrow(self, session: Optional[Session] = None) -> Any:
        """Runs the job; returns a :class:`pyarrow.ChunkedArray`."""
        return self.to_frame().to_arrow(session).column(0)


_ops.install(
    Series,
    binary={
        "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "mod": "mod", "eq": "eq",
        "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge", "and": "and", "or": "or",
    },
    reflected=["add", "sub", "mul", "and", "or"],
    unary={"invert": "not", "neg": "neg"},
)


class Scalar:
    """A lazy one-value result (a series' reduction); :meth:`compute` gives the value."""

    __slots__ = ("_f", "_name")

    def __init__(self, frame: Any, name: str) -> None:
        self._f = frame
        self._name = name

    def __repr__(self) -> str:
        return f"tessera.Scalar<{self._name}>"

    def compute(self, session: Optional[Session] = None) -> Any:
        """Runs the job; returns the value as a Python scalar (None for null)."""
        return DataFrame(self._f).to_arrow(session).column(0)[0].as_py()


class GroupBy:
    """A frame grouped by key columns (``df.groupby(keys)``)."""

    __slots__ = ("_df", "_keys", "_sort")

    def __init__(self, df: DataFrame, keys: List[str], sort: bool) -> None:
        self._df, self._keys, self._sort = df, keys, sort

    def agg(self, arg: Any = None, **named: Any) -> DataFrame:
        """Aggregates with pandas' spellings: ``"sum"`` (every other column),
        ``{"x": "sum", "y": ["min", "max"]}`` (outputs ``x``, ``y_min``, ``y_max``), or
        named aggregation ``total=("x", "sum")``. Functions: sum mean min max count size
        std var first last nunique."""
        if isinstance(arg, str) and not named:
            return self._each(arg)
        specs = []
        if isinstance(arg, dict):
            for column, funcs in arg.items():
                if isinstance(funcs, str):
                    specs.append((column, funcs, column))
                else:
                    funcs = list(funcs)
                    for f in funcs:
                        specs.append((column, f, column if len(funcs) == 1 else f"{column}_{f}"))
        elif arg is not None:
            raise TesseraTypeError("agg takes a function name, a dict, or named aggregations")
        for output, spec in named.items():
            if not (isinstance(spec, tuple) and len(spec) == 2):
                raise TesseraTypeError(f"named aggregation {output}= must be (column, function)")
            specs.append((spec[0], spec[1], output))
        if not specs:
            raise TesseraValueError("no aggregation given")
        return DataFrame(self._df._f.groupby_agg(self._keys, specs, self._sort))

    def _each(self, func: str) -> DataFrame:
        return DataFrame(self._df._f.groupby_each(self._keys, func, self._sort))

    def sum(self) -> DataFrame:
        """Sum of every numeric non-key column per group."""
        return self._each("sum")

    def mean(self) -> DataFrame:
        """Mean of every numeric non-key column per group."""
        return self._each("mean")

    def min(self) -> DataFrame:
        """Minimum of every non-key column per group."""
        return self._each("min")

    def max(self) -> DataFrame:
        """Maximum of every non-key column per group."""
        return self._each("max")

    def count(self) -> DataFrame:
        """Non-null values of every non-key column per group."""
        return self._each("count")

    def size(self) -> DataFrame:
        """Rows per group (a ``size`` column)."""
        return self._each("size")


def read_csv(path: str) -> DataFrame:
    """Reads a CSV file (or a glob such as ``data/part-*.csv``) lazily: the schema is
    inferred now from the header and the first MiB."""
    return DataFrame(_tessera.read_csv(str(path)))


def read_parquet(path: str, columns: Optional[Sequence[str]] = None) -> DataFrame:
    """Reads a Parquet file lazily (only ``columns`` when given)."""
    return DataFrame(_tessera.read_parquet(str(path), None if columns is None else list(columns)))


def from_arrow(data: Any, rows_per_chunk: Optional[int] = None) -> DataFrame:
    """A frame over a :class:`pyarrow.Table` or :class:`pyarrow.RecordBatch` (or any
    object with ``__arrow_c_stream__``): one chunk per record batch, or chunks of
    ``rows_per_chunk`` rows. The Arrow buffers are shared, not copied."""
    pa = _pyarrow()
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    return DataFrame(_tessera.from_arrow(data, rows_per_chunk))


def from_pandas(df: Any, rows_per_chunk: Optional[int] = None) -> DataFrame:
    """A frame over a :class:`pandas.DataFrame`'s columns (its index is dropped),
    converted through pyarrow."""
    pa = _pyarrow()
    return from_arrow(pa.Table.from_pandas(df, preserve_index=False), rows_per_chunk)
