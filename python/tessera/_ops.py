"""Python's operators, spelled once for arrays and series: each class gives a table of
``{python name: native op}`` and gets the dunder methods (``__add__``, ``__radd__``…) that
call its ``_binary(op, other, reflected)`` and ``_unary(op)``."""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable


def _binary(name: str, op: str, reflected: bool) -> Callable[[Any, Any], Any]:
    def method(self: Any, other: Any) -> Any:
        return self._binary(op, other, reflected)

    method.__name__ = method.__qualname__ = f"__{'r' if reflected else ''}{name}__"
    method.__doc__ = f"``{'other ' + name + ' self' if reflected else 'self ' + name + ' other'}`` ({op})."
    return method


def _unary(name: str, op: str) -> Callable[[Any], Any]:
    def method(self: Any) -> Any:
        return self._unary(op)

    method.__name__ = method.__qualname__ = f"__{name}__"
    method.__doc__ = f"``{name} self`` ({op})."
    return method


def install(
    cls: type, binary: Dict[str, str], reflected: Iterable[str], unary: Dict[str, str]
) -> None:
    """Adds to ``cls`` a method per ``binary`` entry (and its ``__r…__`` twin for the names
    in ``reflected``) and per ``unary`` entry. Comparisons need no twin: Python turns
    ``1 < x`` into ``x > 1``."""
    reflected = set(reflected)
    for name, op in binary.items():
        setattr(cls, f"__{name}__", _binary(name, op, False))
        if name in reflected:
            setattr(cls, f"__r{name}__", _binary(name, op, True))
    for name, op in unary.items():
        setattr(cls, f"__{name}__", _unary(name, op))
    cls.__hash__ = None  # == is elementwise
