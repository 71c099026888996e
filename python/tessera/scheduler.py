"""``tessera-scheduler`` / ``python -m tessera.scheduler``: the cluster's scheduler, as
the Rust program ``tessera-scheduler`` (same flags; ``--help`` lists them). Prints
``tessera-scheduler listening on HOST:PORT`` once it listens; stops on Ctrl-C."""

from __future__ import annotations

from typing import Optional, Sequence

from ._programs import run


def main(args: Optional[Sequence[str]] = None) -> int:
    """Runs the scheduler with ``args`` (default: this process's command line); returns
    its exit status."""
    return run("tessera-scheduler", args)


if __name__ == "__main__":
    raise SystemExit(main())
