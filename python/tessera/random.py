"""Random arrays (``tessera.random.default_rng``).

Tessera's generator is counter based (Philox4x32-10): element *i* depends only on the
seed, the draw and *i*, so values are the same under any chunking. They are not NumPy's
values for the same seed.
"""

from __future__ import annotations

from typing import Sequence, Union

from . import _tessera
from ._array import Array, _shape

Shape = Union[int, Sequence[int]]


class Generator:
    """A random number generator; each call draws a new, independent stream."""

    __slots__ = ("_g",)

    def __init__(self, seed: int) -> None:
        self._g = _tessera.default_rng(seed)

    def uniform(self, low: float = 0.0, high: float = 1.0, size: Shape = ()) -> Array:
        """float64 values uniform in ``[low, high)``."""
        return Array(self._g.uniform(float(low), float(high), _shape(size)), "random.uniform")

    def normal(self, loc: float = 0.0, scale: float = 1.0, size: Shape = ()) -> Array:
        """float64 values normal with mean ``loc`` and standard deviation ``scale``."""
        return Array(self._g.normal(float(loc), float(scale), _shape(size)), "random.normal")

    def integers(self, low: int, high: Union[int, None] = None, size: Shape = ()) -> Array:
        """int64 values uniform in ``[low, high)`` (``[0, low)`` when ``high`` is None)."""
        if high is None:
            low, high = 0, low
        return Array(self._g.integers(int(low), int(high), _shape(size)), "random.integers")

    def random(self, size: Shape = ()) -> Array:
        """float64 values uniform in ``[0, 1)``."""
        return Array(self._g.random(_shape(size)), "random.random")


def default_rng(seed: int = 0) -> Generator:
    """A generator seeded with ``seed`` (NumPy's ``default_rng``)."""
    return Generator(seed)


__all__ = ["Generator", "default_rng"]
