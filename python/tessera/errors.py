"""Tessera's exceptions.

Every error Tessera raises derives from :class:`TesseraError` and from the standard
exception a NumPy or pandas user would catch for the same mistake, so ``except ValueError``
keeps working.
"""


class TesseraError(Exception):
    """Base class of every error Tessera raises."""


class TesseraValueError(TesseraError, ValueError):
    """Shapes that do not fit, sizes, chunk shapes, arguments or data values out of range
    (a malformed CSV line among them)."""


class TesseraAxisError(TesseraError, ValueError, IndexError):
    """An axis outside ``-ndim..ndim`` (NumPy's ``AxisError`` is both too)."""


class TesseraIndexError(TesseraError, IndexError):
    """An index outside an axis."""


class TesseraTypeError(TesseraError, TypeError):
    """A dtype an operation does not accept, or a value of the wrong kind."""


class ColumnNotFoundError(TesseraError, KeyError):
    """A column name the frame does not have."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class TesseraFileNotFoundError(TesseraError, FileNotFoundError):
    """A file to read that does not exist."""


class TesseraOSError(TesseraError, OSError):
    """A file that could not be read or written for another reason."""


class TesseraMemoryError(TesseraError, MemoryError):
    """The memory and disk budgets were both full: nothing more could be spilled."""


class SqlError(TesseraError, ValueError):
    """A SQL text that could not be translated: a parse error, an unknown table or
    column, an ambiguous column, or a construct Tessera does not support."""


class ComputeError(TesseraError, RuntimeError):
    """A job failed for a reason other than its input (lost chunks or actors, a closed
    session)."""


class ClusterError(TesseraError, ConnectionError):
    """A cluster could not be started, reached or used."""


__all__ = [
    "TesseraError",
    "TesseraValueError",
    "TesseraAxisError",
    "TesseraIndexError",
    "TesseraTypeError",
    "ColumnNotFoundError",
    "TesseraFileNotFoundError",
    "TesseraOSError",
    "TesseraMemoryError",
    "SqlError",
    "ComputeError",
    "ClusterError",
]
