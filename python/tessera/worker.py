"""``tessera-worker`` / ``python -m tessera.worker --scheduler HOST:PORT``: a worker
process, as the Rust program ``tessera-worker`` (same flags; ``--help`` lists them).
Runs until its scheduler goes away."""

from __future__ import annotations

from typing import Optional, Sequence

from ._programs import run


def main(args: Optional[Sequence[str]] = None) -> int:
    """Runs the worker with ``args`` (default: this process's command line); returns its
    exit status."""
    return run("tessera-worker", args)


if __name__ == "__main__":
    raise SystemExit(main())
