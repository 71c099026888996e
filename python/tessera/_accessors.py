r"""pandas' ``Series.str`` and ``Series.dt`` accessors over Tessera's column expressions.

Patterns are Python ``re`` regular expressions (pandas' default for ``contains``,
``match``, ``fullmatch`` and ``extract``; ``replace`` takes ``regex=True``), run by
Rust's ``regex`` engine after a translation from Python's syntax, which matches what
``re`` matches. What that engine lacks raises ``TesseraValueError`` naming it, never a
different match: look-ahead and look-behind, backreferences, atomic groups, possessive
quantifiers, conditional groups, ``\N{...}``, and the flags other than ``IGNORECASE``,
``MULTILINE``, ``DOTALL`` and ``VERBOSE``. Where ``$`` (outside ``re.MULTILINE``) meets
a value that ends in a line break and holds another, the computation raises (use ``\Z``).
Corners that stay different: ``\b`` counts combining marks as word characters; case is
folded by Unicode's simple folding; in ``replace``, after an empty match the next starts a
character later.

Where pandas differs: ``extract``'s columns for unnamed groups are named ``"0"``, ``"1"``…
(strings, not integers); results with nulls are nullable booleans (``na`` fills them).
"""

from __future__ import annotations

import datetime as dt
import functools
import operator
import re
from typing import TYPE_CHECKING, Any, Optional, Tuple

from .errors import TesseraTypeError, TesseraValueError

if TYPE_CHECKING:  # pragma: no cover
    from ._frame import Series

_Flags = Tuple[bool, bool, bool, bool]
_TAKEN = re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE | re.UNICODE


def _pattern(pat: Any, case: Optional[bool], flags: int, what: str) -> Tuple[str, _Flags]:
    """The text of ``pat`` (a string or a compiled ``re.Pattern``) and the flags Tessera
    takes: ignore case, multiline, dot-all, verbose."""
    if isinstance(pat, re.Pattern):
        if flags or case is not None:
            raise TesseraValueError(
                f"str.{what}: case and flags cannot be set when pat is a compiled regex")
        pat, flags, case = pat.pattern, pat.flags, True
    if not isinstance(pat, str):
        raise TesseraTypeError(f"str.{what}: the pattern must be a str, not {type(pat).__name__}")
    flags = int(flags) | (re.IGNORECASE if case is False else 0)
    other = flags & ~_TAKEN
    if other:
        raise TesseraValueError(
            f"str.{what}: flag {re.RegexFlag(other)!r} is not supported; Tessera takes "
            "re.IGNORECASE, re.MULTILINE, re.DOTALL and re.VERBOSE")
    return pat, (bool(flags & re.IGNORECASE), bool(flags & re.MULTILINE),
                 bool(flags & re.DOTALL), bool(flags & re.VERBOSE))


def _missing(na: Any) -> bool:
    """Whether ``na`` leaves nulls as they are (``None`` or NaN)."""
    return na is None or (isinstance(na, float) and na != na)


class StrAccessor:
    """String functions of a column (``series.str``); null stays null."""

    __slots__ = ("_series",)

    def __init__(self, series: "Series") -> None:
        self._series = series

    def _wrap(self, native: Any, na: Any = None) -> "Series":
        out = type(self._series)(native)
        return out if _missing(na) else out.fillna(na)

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

    def startswith(self, pat: Any, na: Any = None) -> "Series":
        """Whether each value starts with ``pat`` (a string, or a tuple of them: any)."""
        return self._prefix("startswith", pat, na)

    def endswith(self, pat: Any, na: Any = None) -> "Series":
        """Whether each value ends with ``pat`` (a string, or a tuple of them: any)."""
        return self._prefix("endswith", pat, na)

    def _prefix(self, func: str, pat: Any, na: Any) -> "Series":
        pats = pat if isinstance(pat, tuple) else (pat,)
        if not pats or not all(isinstance(p, str) for p in pats):
            raise TesseraTypeError(f"str.{func}: expected a string or a tuple of strings")
        tests = [type(self._series)(self._s.str_test(func, p)) for p in pats]
        out = functools.reduce(operator.or_, tests)
        return out if _missing(na) else out.fillna(na)

    def contains(self, pat: Any, case: bool = True, flags: int = 0, na: Any = None,
                 regex: bool = True) -> "Series":
        """Whether ``pat`` matches anywhere in each value: a regular expression, or plain
        text with ``regex=False`` (then without case as pandas: upper case compared).
        Nulls stay null unless ``na`` fills them."""
        if not regex and isinstance(pat, re.Pattern):
            raise TesseraValueError("str.contains: a compiled regex needs regex=True")
        text, fl = _pattern(pat, None if case else False, flags, "contains")
        if not regex:
            fl = (fl[0], False, False, False)
        return self._wrap(self._s.str_pattern_test("contains", text, regex, fl), na)

    def match(self, pat: Any, case: bool = True, flags: int = 0, na: Any = None) -> "Series":
        """Whether the regular expression ``pat`` matches at the start of each value."""
        text, fl = _pattern(pat, None if case else False, flags, "match")
        return self._wrap(self._s.str_pattern_test("match", text, True, fl), na)

    def fullmatch(self, pat: Any, case: bool = True, flags: int = 0,
                  na: Any = None) -> "Series":
        """Whether the regular expression ``pat`` matches all of each value."""
        text, fl = _pattern(pat, None if case else False, flags, "fullmatch")
        return self._wrap(self._s.str_pattern_test("fullmatch", text, True, fl), na)

    def extract(self, pat: Any, flags: int = 0, expand: bool = True) -> Any:
        """The capture groups of ``pat``'s first match in each value (null where it does
        not match): a DataFrame of a column per group (named by the group's name, else
        ``"0"``, ``"1"``…), or with ``expand=False`` and one group a Series."""
        from ._frame import DataFrame

        text, fl = _pattern(pat, None, flags, "extract")
        frame = DataFrame(self._s.str_extract(text, fl))
        if expand or len(frame.columns) > 1:
            return frame
        return self._wrap(self._s.str_extract_one(text, fl))

    def replace(self, pat: Any, repl: str, n: int = -1, case: Optional[bool] = None,
                flags: int = 0, regex: bool = False) -> "Series":
        r"""Every ``pat`` replaced by ``repl``: plain text by default, or with
        ``regex=True`` a regular expression whose ``repl`` may refer to its groups
        (``\1``, ``\g<name>``), as ``re.sub``. ``case=False`` or ``flags`` make the
        text a pattern (escaped), as pandas. Every occurrence is replaced (``n=-1``)."""
        if callable(repl):
            raise TesseraTypeError("str.replace: a callable repl cannot run in Tessera")
        if not isinstance(repl, str):
            raise TesseraTypeError("str.replace: repl must be a str")
        if n != -1:
            raise TesseraValueError("str.replace: only n=-1 (every occurrence) is supported")
        compiled = isinstance(pat, re.Pattern)
        if compiled and not regex:
            raise TesseraValueError(
                "str.replace: cannot use a compiled regex as the pattern with regex=False")
        text, fl = _pattern(pat, case, flags, "replace")
        if regex or any(fl):
            return self._wrap(self._s.str_replace_regex(text, repl, bool(regex), fl))
        return self._wrap(self._s.str_replace(text, repl))

    def like(self, pattern: str, escape: Optional[str] = None) -> "Series":
        """SQL ``LIKE``: ``%`` stands for any run of characters, ``_`` for one; case
        counts; ``escape`` (none by default) before ``%``, ``_`` or itself makes it plain
        text. ``~`` gives ``NOT LIKE``; null stays null."""
        if escape is not None and (not isinstance(escape, str) or len(escape) != 1):
            raise TesseraValueError("str.like: escape must be one character")
        return self._wrap(self._s.str_like(pattern, escape))

    def slice(
        self, start: Optional[int] = None, stop: Optional[int] = None, step: Optional[int] = None
    ) -> "Series":
        """Characters ``start:stop``, with Python's slice bounds (``step`` 1 only)."""
        if step not in (None, 1):
            raise TesseraValueError("str.slice: only step 1 is supported")
        return self._wrap(self._s.str_slice(0 if start is None else start, stop))

    def __getitem__(self, key: Any) -> "Series":
        """``series.str[a:b]``: :meth:`slice`."""
        if not isinstance(key, slice):
            raise TesseraTypeError("str[...] takes a slice, such as str[1:3]")
        return self.slice(key.start, key.stop, key.step)


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
