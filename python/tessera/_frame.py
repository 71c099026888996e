"""Lazy, chunked dataframes with pandas' API (``tessera.DataFrame``).

Tessera frames have no row labels; what pandas holds as an index is kept as columns that
the frame marks as its index (a groupby's keys, with pandas' default ``as_index=True``, or
``set_index``): ``compute()`` gives them to pandas as the index, ``reset_index()`` makes them
plain columns again, and they are not among ``columns``.

Where Tessera differs from pandas:

- groupby results come sorted by the keys unless ``sort=False``; several functions on one
  column are named ``col_func`` (pandas makes a column MultiIndex);
- rows of a filter, merge or ``drop_duplicates`` come back in an order that may differ
  from pandas' (sort before comparing);
- integer columns with nulls stay integers in Arrow (``to_arrow``); ``compute`` gives
  pandas ``float64`` for them, as pandas itself does;
- decimal columns (pyarrow's ``decimal128``, which ``from_pandas`` makes of a column of
  ``decimal.Decimal`` objects) compute exactly with DuckDB's result types (see the Rust
  ``expr`` module): ``sum`` is a ``decimal128(38, s)``, ``mean`` a float, ``/`` a float;
  ``compute`` gives ``decimal.Decimal`` objects, as pandas' ``read_parquet`` does. Their
  ``%`` is floored, as for numbers (``decimal.Decimal``'s own ``%`` truncates).
- frames have no index: a boolean Series filters (``df[mask]``) or is assigned to its own
  frame only; ``Series.isin`` with another frame's Series is the exception that makes this
  useful (a mark join: ``df[df.k.isin(other.k)]``, ``df[~df.k.isin(other.k)]``).
"""

from __future__ import annotations

import operator
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


def _flag(value: Any, what: str) -> bool:
    """A boolean argument as pandas validates one: a bool (NumPy's too) or 0/1; anything
    else, a string above all (``bool("False")`` is true), is a ``ValueError``."""
    if isinstance(value, bool) or type(value).__name__ in ("bool_", "bool"):
        return bool(value)
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise TesseraValueError(f'For argument "{what}" expected type bool, received type '
                            f"{type(value).__name__}.")


def _count(n: Any) -> int:
    """A row count: a non-negative integer (a negative one counts from the end in pandas,
    which Tessera does not take)."""
    try:
        n = operator.index(n)
    except TypeError:
        raise TesseraTypeError(f"expected an integer count, got {type(n).__name__}") from None
    if n < 0:
        raise TesseraValueError(f"a negative count ({n}) is not supported")
    return int(n)


def _directions(ascending: Any, keys: int) -> List[bool]:
    """``ascending`` (a bool, or one per key) as one direction per key."""
    if isinstance(ascending, (list, tuple)) or type(ascending).__name__ == "ndarray":
        flags = [_flag(a, "ascending") for a in ascending]
        if len(flags) != keys:
            raise TesseraValueError(
                f"Length of ascending ({len(flags)}) != length of by ({keys})")
        return flags
    return [_flag(ascending, "ascending")] * keys


class DataFrame:
    """A lazy table cut into chunks of rows; :meth:`compute` gives a
    :class:`pandas.DataFrame`, :meth:`to_arrow` a :class:`pyarrow.Table`."""

    __slots__ = ("_f", "_index")

    def __init__(self, native: Any, index: Sequence[str] = ()) -> None:
        self._f = native
        #: The columns pandas would hold as the index (see the module's doc).
        self._index = tuple(index)

    def _new(self, native: Any) -> "DataFrame":
        """A frame over ``native`` keeping this one's index columns where it still has them."""
        kept = set(native.columns)
        return DataFrame(native, [c for c in self._index if c in kept])

    @property
    def columns(self) -> List[str]:
        """The column names (the index columns left out, as pandas)."""
        return [c for c in self._f.columns if c not in self._index]

    def explain(self) -> str:
        """The plan a job of this frame runs after the optimizer (filters pushed down,
        unread columns pruned), one node a line with its output columns, inputs indented
        below their reader (Polars' ``explain``). Runs nothing."""
        return self._f.explain()

    @property
    def index_names(self) -> List[str]:
        """The columns held as the index (``[]`` for none)."""
        return list(self._index)

    def set_index(self, keys: Union[str, Sequence[str]]) -> "DataFrame":
        """The columns ``keys`` held as the index (pandas' ``set_index``)."""
        keys = _names(keys)
        for k in keys:
            if k not in self._f.columns:
                raise KeyError(k)
        return DataFrame(self._f, keys)

    def reset_index(self, drop: bool = False) -> "DataFrame":
        """The index columns made plain columns again (or dropped with ``drop=True``)."""
        if drop and self._index:
            return DataFrame(self._f.drop(list(self._index)))
        return DataFrame(self._f)

    @property
    def dtypes(self) -> Dict[str, str]:
        """Each column's Arrow type, as text."""
        return dict(self._f.dtypes)

    def __repr__(self) -> str:
        return f"tessera.DataFrame<columns={self.columns}>"

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return Series(self._f.column(key), self._index)
        if isinstance(key, Series):
            return self._new(self._f.filter(key._s))
        if isinstance(key, (list, tuple)):
            index = [c for c in self._index if c not in key]
            return DataFrame(self._f.select(index + list(key)), index)
        raise TesseraTypeError(f"cannot index a DataFrame with {type(key).__name__}")

    def __getattr__(self, name: str) -> "Series":
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._f.columns:
            return Series(self._f.column(name), self._index)
        raise AttributeError(f"DataFrame has no attribute or column {name!r}")

    def assign(self, **columns: Any) -> "DataFrame":
        """With columns added or replaced, in order: each value a Series of this frame, a
        scalar, or a callable given the frame so far (pandas' ``assign``). A Series after a
        callable must come from a callable too: Tessera has no index to align the first
        frame's Series with the one the callable made."""
        out, pending = self, []
        for k, v in columns.items():
            if callable(v) and not isinstance(v, Series):
                if pending:
                    out, pending = out._new(out._f.with_columns(pending)), []
                v = v(out)
                out = out._new(out._f.with_columns([(k, v._s if isinstance(v, Series) else v)]))
            else:
                pending.append((k, v._s if isinstance(v, Series) else v))
        return out._new(out._f.with_columns(pending)) if pending else out

    def rename(self, columns: Any = None) -> "DataFrame":
        """With columns renamed by ``columns``: a dict ``{old: new}`` (names it does not hold
        are ignored, as pandas) or a function of the name."""
        if columns is None:
            return self
        names = list(self._f.columns)
        if callable(columns):
            pairs = [(c, str(columns(c))) for c in names]
        elif isinstance(columns, dict):
            pairs = [(c, columns[c]) for c in names if c in columns]
        else:
            raise TesseraTypeError("rename takes columns= as a dict or a function")
        pairs = [(a, b) for a, b in pairs if a != b]
        if not pairs:
            return self
        new = dict(pairs)
        return DataFrame(self._f.rename(pairs), [new.get(c, c) for c in self._index])

    def drop(self, columns: Union[str, Sequence[str]]) -> "DataFrame":
        """Without the columns ``columns``."""
        return self._new(self._f.drop(_names(columns)))

    def groupby(self, by: Union[str, Sequence[str]], sort: bool = True,
                as_index: bool = True) -> "GroupBy":
        """Groups by the key columns ``by``; the result holds the keys as its index
        (pandas' default) or, with ``as_index=False``, as plain columns."""
        return GroupBy(self, _names(by), _flag(sort, "sort"), _flag(as_index, "as_index"))

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
        # pandas gives a merge on columns a new row index: the index columns become plain.
        if indicator is True:
            name: Optional[str] = "_merge"
        elif indicator is False:
            name = None
        elif isinstance(indicator, str):
            name = indicator
        else:
            raise TesseraTypeError("indicator must be a bool or a column name")
        return DataFrame(self._f.merge(right._f, left_keys, right_keys, how, (sx, sy), name))

    def sort_values(
        self,
        by: Union[str, Sequence[str]],
        ascending: Union[bool, Sequence[bool]] = True,
        kind: Optional[str] = None,
        na_position: str = "last",
    ) -> "DataFrame":
        """Sorted by the columns ``by``: ``ascending`` is one direction for all keys or a
        list with one per key (pandas' ``ascending=[False, True]``); ``na_position`` puts
        nulls and NaNs ``"last"`` or ``"first"``. The sort is always stable (equal keys keep
        their order, whatever the chunking), so every ``kind`` gives pandas'
        ``kind="stable"`` answer."""
        keys = _names(by)
        if kind not in (None, "quicksort", "mergesort", "heapsort", "stable"):
            raise TesseraValueError(f"sort_values: unknown kind {kind!r}")
        if na_position not in ("last", "first"):
            raise TesseraValueError(f"invalid na_position: {na_position!r}")
        return self._new(self._f.sort_values(keys, _directions(ascending, len(keys)),
                                             na_position == "first"))

    def nlargest(self, n: int, columns: Union[str, Sequence[str]],
                 keep: str = "first") -> "DataFrame":
        """The ``n`` rows with the largest values of ``columns``, largest first; of tied
        rows the first ones (``keep="first"``, the one choice taken); rows with a missing
        value there come last, as in pandas."""
        return self._extreme(n, columns, keep, True)

    def nsmallest(self, n: int, columns: Union[str, Sequence[str]],
                  keep: str = "first") -> "DataFrame":
        """The ``n`` rows with the smallest values of ``columns``, smallest first (see
        :meth:`nlargest`)."""
        return self._extreme(n, columns, keep, False)

    def _extreme(self, n: int, columns: Any, keep: str, largest: bool) -> "DataFrame":
        if keep != "first":
            raise TesseraValueError(f"keep={keep!r}: only keep='first' is supported")
        return self._new(self._f.nextreme(_count(n), _names(columns), largest))

    def head(self, n: int = 5) -> "DataFrame":
        """The first ``n`` rows."""
        return self._new(self._f.head(_count(n)))

    def drop_duplicates(self, subset: Union[None, str, Sequence[str]] = None) -> "DataFrame":
        """Without repeated rows (judged on ``subset`` when given)."""
        return self._new(self._f.drop_duplicates(None if subset is None else _names(subset)))

    def compute(self, session: Optional[Session] = None) -> Any:
        """Runs the job; returns a :class:`pandas.DataFrame` (through Arrow), with the index
        columns as its index."""
        out = self.to_arrow(session).to_pandas()
        return out.set_index(list(self._index)) if self._index else out

    def to_arrow(self, session: Optional[Session] = None) -> Any:
        """Runs the job; returns a :class:`pyarrow.Table` over the result's chunks (its
        buffers are Tessera's, not copied)."""
        return _table(self._f.compute_stream(get_session(session)._native))

    def persist(self, session: Optional[Session] = None) -> "DataFrame":
        """Computes the frame and keeps its chunks in the session."""
        return self._new(self._f.persist(get_session(session)._native))

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
    """One column of a DataFrame, or an expression over its columns.

    Operators take another series of the frame or a scalar: ``None``, a bool, number
    (NumPy's too) or string, or a date or time: ``datetime.date``, ``datetime.datetime``
    (tz-naive or aware), ``datetime.timedelta``, NumPy's ``datetime64`` and
    ``timedelta64``, pandas' ``Timestamp``, ``Timedelta`` and ``DateOffset`` (years,
    months, weeks, days). A date column compares with a timestamp as its midnight (pandas
    raises there); ``NaT`` and other pandas offsets raise ``TesseraValueError``.
    """

    __slots__ = ("_s", "_index")
    # NumPy defers its scalars' operators to ours (`np.datetime64(…) < s` reaches `s > …`
    # with the datetime64 itself, not the int or datetime NumPy would turn it into).
    __array_ufunc__ = None

    def __init__(self, native: Any, index: Sequence[str] = ()) -> None:
        self._s = native
        #: The index columns of its frame, which ``compute`` gives pandas as the index.
        self._index = tuple(index)

    def _new(self, native: Any) -> "Series":
        """A series over ``native`` (the same frame), keeping the index."""
        return Series(native, self._index)

    @property
    def name(self) -> str:
        """The column's name."""
        return self._s.name

    def __repr__(self) -> str:
        return f"tessera.Series<{self.name}>"

    def _binary(self, op: str, other: Any, reflected: bool = False) -> "Series":
        other = other._s if isinstance(other, Series) else other
        return self._new(self._s.binary(op, other, reflected))

    def _unary(self, op: str) -> "Series":
        return self._new(self._s.unary(op))

    def rename(self, name: str) -> "Series":
        """The same values under the name ``name``."""
        return self._new(self._s.rename(str(name)))

    def isna(self) -> "Series":
        """True where the value is missing: null, or NaN in a float column (pandas'
        ``isna``)."""
        return self._new(self._s.math("isna"))

    isnull = isna

    def notna(self) -> "Series":
        """True where the value is present (pandas' ``notna``)."""
        return self._new(self._s.math("notna"))

    notnull = notna

    def abs(self) -> "Series":
        """The absolute values."""
        return self._new(self._s.math("abs"))

    __abs__ = abs

    def round(self, decimals: int = 0) -> "Series":
        """Rounded to ``decimals`` places, halves to even (NumPy's and pandas' rule);
        integers and decimals keep their type."""
        return self._new(self._s.round(operator.index(decimals)))

    def __round__(self, ndigits: Optional[int] = None) -> "Series":
        return self.round(0 if ndigits is None else ndigits)

    def case_when(self, caselist: Sequence[Any]) -> "Series":
        """pandas' ``case_when``: for each ``(condition, replacement)`` in order, the
        replacement (a scalar or a series of the same frame) where the condition (a boolean
        series of the same frame) holds first; this series' value where none holds."""
        cases = []
        for case in caselist:
            if not (isinstance(case, tuple) and len(case) == 2):
                raise TesseraTypeError("case_when takes a list of (condition, replacement) tuples")
            cond, value = case
            if not isinstance(cond, Series):
                raise TesseraTypeError("case_when: each condition must be a boolean Series")
            cases.append((cond._s, value._s if isinstance(value, Series) else value))
        return self._new(self._s.case_when(cases))

    def head(self, n: int = 5) -> "Series":
        """The first ``n`` values."""
        return Series(self.to_frame()._f.head(_count(n)).column(self.name))

    def nlargest(self, n: int = 5, keep: str = "first") -> "Series":
        """The ``n`` largest values, largest first (missing values last)."""
        return Series(self.to_frame()._extreme(n, self.name, keep, True)._f.column(self.name))

    def nsmallest(self, n: int = 5, keep: str = "first") -> "Series":
        """The ``n`` smallest values, smallest first (missing values last)."""
        return Series(self.to_frame()._extreme(n, self.name, keep, False)._f.column(self.name))

    def isin(self, values: Union["Series", Sequence[Any]]) -> "Series":
        """Whether each value is one of ``values``: a list of scalars (false for null), or a
        tessera Series of any frame, whose values are looked in by a join (never null; as in
        pandas, a null is in values that hold a null, unlike SQL's ``IN``). The result is a
        boolean Series of this one's frame: combine it with others of that frame, negate it
        with ``~``, filter with ``df[mask]`` or ``assign`` it. Rows of a frame filtered so
        come in the order of a merge (sort before comparing)."""
        if isinstance(values, Series):
            return self._new(self._s.isin_series(values._s))
        if isinstance(values, DataFrame):
            raise TesseraTypeError("Series.isin takes a list or a Series, not a DataFrame")
        return self._new(self._s.isin(list(values)))

    def fillna(self, value: Any) -> "Series":
        """Nulls replaced by ``value``."""
        return self._new(self._s.fillna(value))

    def between(self, left: Any, right: Any) -> "Series":
        """Whether ``left <= value <= right`` (pandas' ``inclusive='both'``)."""
        return self._new(self._s.between(left, right))

    def astype(self, dtype: Any) -> "Series":
        """Converted to ``dtype``: a NumPy or pandas name (``'int32'``, ``'float64'``,
        ``'string'``, ``'category'``, ``'datetime64[ns]'``…), a decimal
        (``'decimal(15, 2)'``, or pyarrow's ``pd.ArrowDtype(pa.decimal128(15, 2))``), or
        ``int float str bool``. A value that does not fit is an error."""
        names = {int: "int64", float: "float64", str: "string", bool: "bool"}
        name = names.get(dtype) if isinstance(dtype, type) else None
        return self._new(self._s.astype(name or str(dtype)))

    def map(self, arg: Dict[Any, Any]) -> "Series":
        """Each value mapped through the dict ``arg``; values not in it become null."""
        if not isinstance(arg, dict):
            raise TesseraTypeError("Series.map takes a dict (functions cannot run in Tessera)")
        return self._new(self._s.map_values(list(arg.items())))

    def where(self, cond: "Series", other: Any = None) -> "Series":
        """The values where ``cond`` is true, ``other`` (a scalar or a column of the same
        frame; null by default) where it is false or null."""
        if not isinstance(cond, Series):
            raise TesseraTypeError("Series.where: cond must be a boolean column of the same frame")
        other = other._s if isinstance(other, Series) else other
        return self._new(self._s.where_(cond._s, other))

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
        """String functions: ``lower upper len strip startswith endswith contains match
        fullmatch extract replace slice like`` and ``str[a:b]`` (patterns are Python ``re``
        regular expressions)."""
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
        """Runs the job; returns a :class:`pandas.Series` (indexed by the frame's index
        columns, if it has any)."""
        if self._index:
            index = [c for c in self._index if c != self.name]
            frame = DataFrame(self._s.to_frame_with(index), index)
            return frame.compute(session)[self.name]
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
    reflected=["add", "sub", "mul", "truediv", "mod", "and", "or"],
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
    """A frame grouped by key columns (``df.groupby(keys)``); ``grouped["col"]`` or
    ``grouped[["a", "b"]]`` selects the columns its aggregations cover."""

    __slots__ = ("_df", "_keys", "_sort", "_as_index", "_selection")

    def __init__(self, df: DataFrame, keys: List[str], sort: bool, as_index: bool = True,
                 selection: Union[None, str, List[str]] = None) -> None:
        self._df, self._keys, self._sort = df, keys, sort
        self._as_index = as_index
        #: A column name (aggregations give a Series, as pandas' SeriesGroupBy), a list of
        #: names, or None (every non-key column).
        self._selection = selection

    def __getitem__(self, key: Union[str, Sequence[str]]) -> "GroupBy":
        for k in _names(key):
            if k not in self._df._f.columns:
                raise KeyError(k)
        sel = key if isinstance(key, str) else list(key)
        return GroupBy(self._df, self._keys, self._sort, self._as_index, sel)

    def _result(self, native: Any) -> Any:
        """The aggregated frame with the keys as its index (or as columns with
        ``as_index=False``); one selected column with the keys as index is a Series."""
        if not self._as_index:
            return DataFrame(native)
        frame = DataFrame(native, self._keys)
        if isinstance(self._selection, str):
            return frame[self._selection]
        return frame

    def agg(self, arg: Any = None, **named: Any) -> Any:
        """Aggregates with pandas' spellings: ``"sum"`` (every other column, or the selected
        ones), ``["sum", "max"]`` on a selected column, ``{"x": "sum", "y": ["min",
        "max"]}`` (outputs ``x``, ``y_min``, ``y_max``), or named aggregation
        ``total=("x", "sum")``. Functions: sum mean min max count size std var first last
        nunique."""
        if isinstance(arg, str) and not named:
            return self._each(arg)
        if isinstance(arg, (list, tuple)) and isinstance(self._selection, str):
            arg = {self._selection: list(arg)}
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
        out = self._df._f.groupby_agg(self._keys, specs, self._sort)
        return DataFrame(out, self._keys) if self._as_index else DataFrame(out)

    aggregate = agg

    def _each(self, func: str) -> Any:
        if self._selection is None:
            return self._result(self._df._f.groupby_each(self._keys, func, self._sort))
        specs = [(c, func, c) for c in _names(self._selection)]
        return self._result(self._df._f.groupby_agg(self._keys, specs, self._sort))

    def sum(self) -> Any:
        """Sum of every numeric non-key column (or the selected ones) per group."""
        return self._each("sum")

    def mean(self) -> Any:
        """Mean of every numeric non-key column (or the selected ones) per group."""
        return self._each("mean")

    def min(self) -> Any:
        """Minimum of every non-key column (or the selected ones) per group."""
        return self._each("min")

    def max(self) -> Any:
        """Maximum of every non-key column (or the selected ones) per group."""
        return self._each("max")

    def count(self) -> Any:
        """Non-null values of every non-key column (or the selected ones) per group."""
        return self._each("count")

    def nunique(self) -> Any:
        """Distinct non-null values of every non-key column (or the selected ones)."""
        return self._each("nunique")

    def size(self) -> Any:
        """Rows per group, null values included: a Series named ``size`` indexed by the keys
        (pandas' default), or with ``as_index=False`` a frame of the keys and ``size``."""
        native = self._df._f.groupby_each(self._keys, "size", self._sort)
        if not self._as_index:
            return DataFrame(native)
        return DataFrame(native, self._keys)["size"]


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


def concat(objs: Sequence[DataFrame], ignore_index: bool = False) -> DataFrame:
    """The frames stacked in order, columns matched by name and missing ones null (pandas'
    ``concat`` of frames, ``axis=0``, ``join="outer"``). Index columns become plain columns
    (Tessera has no row labels to keep)."""
    frames = list(objs)
    if not frames or not all(isinstance(f, DataFrame) for f in frames):
        raise TesseraTypeError("concat takes a non-empty list of tessera DataFrames")
    return DataFrame(_tessera.concat([f._f for f in frames]))


def series_where(cond: Series, x: Any, y: Any) -> Series:
    """``ts.where`` on columns: ``x`` where ``cond`` (a boolean Series) holds, ``y`` where it
    is false or missing; ``x`` and ``y`` are scalars or Series of ``cond``'s frame."""
    native = _tessera.series_where(cond._s, *(v._s if isinstance(v, Series) else v
                                              for v in (x, y)))
    return Series(native, cond._index)


def from_pandas(df: Any, rows_per_chunk: Optional[int] = None) -> DataFrame:
    """A frame over a :class:`pandas.DataFrame`'s columns (its index is dropped),
    converted through pyarrow."""
    pa = _pyarrow()
    return from_arrow(pa.Table.from_pandas(df, preserve_index=False), rows_per_chunk)
