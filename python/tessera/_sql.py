"""SQL over Tessera frames: :func:`sql` and :meth:`Session.sql`."""

from __future__ import annotations

from typing import Mapping, Optional

from ._frame import DataFrame
from ._session import Session, get_session
from .errors import TesseraTypeError


def sql(query: str, tables: Optional[Mapping[str, DataFrame]] = None,
        session: Optional[Session] = None) -> DataFrame:
    """The lazy frame of one SQL ``SELECT`` over ``tables`` (name to Tessera frame).

    The query is translated into frame operations at once (a bad query raises
    :class:`tessera.SqlError` here) and runs when the frame is computed, with the
    frames' optimizer: filters pushed into the reads, unread columns pruned.
    ``session`` defaults to the current session. Columns a frame keeps as its index are
    ordinary columns in SQL. See ``docs/guide/sql.md`` for what is supported.

    >>> import pandas as pd
    >>> import tessera as ts
    >>> df = ts.from_pandas(pd.DataFrame({"k": [1, 1, 2], "v": [1.0, 2.0, 3.0]}))
    >>> ts.sql("select k, sum(v) as s from t group by k order by k", {"t": df}).compute()
       k    s
    0  1  3.0
    1  2  3.0
    """
    pairs = []
    for name, frame in (tables or {}).items():
        if not isinstance(frame, DataFrame):
            raise TesseraTypeError(
                f"table {name!r} is a {type(frame).__name__}, not a tessera.DataFrame")
        pairs.append((name, frame._f))
    return DataFrame(get_session(session)._native.sql(query, pairs))
