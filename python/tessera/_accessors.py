"""pandas' ``Series.str`` and ``Series.dt`` accessors over Tessera's column expressions.

Patterns are plain text: ``contains`` and ``replace`` take ``regex=False`` (pandas'
``contains`` defaults to a regular expression; a pattern without regex syntax means the
same either way, and one with it raises rather than answer differently).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any, Optional

from .errors import TesseraValueError

if TYPE_CHECKING:  # pragma: no cover
    from ._frame import Series

_REGEX_SYNTAX = set(".^$*+?{}[]\\|()")


def _plain(pat: str, regex: bool, what: str) -> str:
    if regex and any(c in _REGEX_SYNTAX for c in pat):
        raise TesseraValueError(
            f"str.{what}: regular expressions are not supported; pass regex=False to match "
            f"{pat!r} as plain text"
        )
    return pat


class StrAccessor:
    """String functions of a column (``series.str``); null stays null."""

    __slots__ = ("_series",)

    def __init__(self, series: "Series") -> None:
        self._series = series

    def _wrap(self, native: Any) -> "Series":
        return type(self._series)(native)

    @property
    def _s(self) -> Any:
        return self._series._s

    def lower(self) -> "Series":
        """Lower case."""
        return self._wrap(self._s.str_unary("lower"))

    def upper(self) -> "Series":
        """Upper case."""
        return self._wrap(self._s.str_unary("upper"))

    def len(self) -> "Series":
        """Length in characters."""
        return self._wrap(self._s.str_unary("len"))

    def strip(self) -> "Series":
        """Leading and trailing whitespace removed."""
        return self._wrap(self._s.str_unary("strip"))

    def startswith(self, pat: str) -> "Series":
        """Whether each value starts with ``pat``."""
        return self._wrap(self._s.str_test("startswith", pat))

    def endswith(self, pat: str) -> "Series":
        """Whether each value ends with ``pat``."""
        return self._wrap(self._s.str_test("endswith", pat))

    def contains(self, pat: str, regex: bool = True) -> "Series":
        """Whether each value contains ``pat`` (plain text; see the module's note)."""
        return self._wrap(self._s.str_test("contains", _plain(pat, regex, "contains")))

    def replace(self, pat: str, repl: str, regex: bool = False) -> "Series":
        """Every ``pat`` replaced by ``repl`` (plain text)."""
        return self._wrap(self._s.str_replace(_plain(pat, regex, "replace"), repl))

    def slice(
        self, start: Optional[int] = None, stop: Optional[int] = None, step: Optional[int] = None
    ) -> "Series":
        """Characters ``start:stop``, with Python's slice bounds (``step`` 1 only)."""
        if step not in (None, 1):
            raise TesseraValueError("str.slice: only step 1 is supported")
        return self._wrap(self._s.str_slice(0 if start is None else start, stop))


def _date_field(name: str, doc: str) -> property:
    """A ``DtAccessor`` property giving the date field ``name``."""

    def get(self: "DtAccessor") -> "Series":
        return type(self._series)(self._series._s.dt_field(name))

    return property(get, doc=doc)


class DtAccessor:
    """Date and timestamp fields of a column (``series.dt``)."""

    __slots__ = ("_series",)

    def __init__(self, series: "Series") -> None:
        self._series = series

    year = _date_field("year", "The year.")
    month = _date_field("month", "The month, 1 to 12.")
    day = _date_field("day", "The day of the month, 1 to 31.")
    hour = _date_field("hour", "The hour, 0 to 23.")
    minute = _date_field("minute", "The minute, 0 to 59.")
    second = _date_field("second", "The second, 0 to 59.")
    weekday = _date_field("weekday", "The day of the week, Monday 0 to Sunday 6.")
    dayofweek = day_of_week = weekday
    dayofyear = _date_field("dayofyear", "The day of the year, 1 to 366.")
    day_of_year = dayofyear
    quarter = _date_field("quarter", "The quarter, 1 to 4.")

    def floor(self, freq: str) -> "Series":
        """Timestamps rounded down to a whole ``freq``: ``'D'``, ``'h'``, ``'min'`` or ``'s'``
        (a tz-aware column's on its zone's wall clock)."""
        return type(self._series)(self._series._s.dt_floor(freq))

    def tz_localize(self, tz: Any, ambiguous: str = "raise",
                    nonexistent: str = "raise") -> "Series":
        """Tz-naive timestamps read as the wall clock of ``tz`` (a zone name, an offset such
        as ``'+05:30'``, or a ``tzinfo`` naming one), or with ``None`` tz-aware ones' wall
        clocks without their zone. A time the zone skips or repeats raises, pandas'
        default (the only choice taken)."""
        if ambiguous != "raise" or nonexistent != "raise":
            raise TesseraValueError(
                "dt.tz_localize: only ambiguous='raise' and nonexistent='raise' are supported")
        return type(self._series)(self._series._s.dt_tz_localize(_zone_name(tz)))

    def tz_convert(self, tz: Any) -> "Series":
        """Tz-aware timestamps' instants in ``tz``, whose wall clock their fields read."""
        name = _zone_name(tz)
        s = self._series._s
        # pandas' tz_convert(None): the instants in UTC, without a zone.
        out = s.dt_tz_convert("UTC").dt_tz_localize(None) if name is None else s.dt_tz_convert(
            name)
        return type(self._series)(out)


def _zone_name(tz: Any) -> Optional[str]:
    """The zone Arrow names for ``tz``: ``None``, a name or offset string, or a ``tzinfo``
    (``zoneinfo``'s and pytz's by their key, a fixed ``datetime.timezone`` as its offset)."""
    if isinstance(tz, str) and tz.lower() == "utc":
        return "UTC"  # pandas takes any case of UTC; the zone database its own
    if tz is None or isinstance(tz, str):
        return tz
    key = getattr(tz, "key", None) or getattr(tz, "zone", None)
    if isinstance(key, str):
        return key
    if isinstance(tz, dt.tzinfo):
        offset = tz.utcoffset(None)
        if offset is not None and offset.total_seconds() % 60 == 0:
            minutes = int(offset.total_seconds()) // 60
            sign = "-" if minutes < 0 else "+"
            return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    raise TypeError(f"dt: time zone {tz!r} is not a zone name, an offset or a fixed tzinfo")
