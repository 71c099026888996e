"""The cluster's programs, ``tessera-scheduler`` and ``tessera-worker``, run in this
process by the extension module: the same servers as the Rust programs, installed by
``pip`` with the package (see :mod:`tessera.scheduler`, :mod:`tessera.worker`)."""

from __future__ import annotations

import signal
import sys
import threading
from typing import Optional, Sequence

from . import _tessera


def run(program: str, args: Optional[Sequence[str]] = None) -> int:
    """Runs ``program`` with the command-line arguments ``args`` (default
    ``sys.argv[1:]``) until it stops; returns its exit status.

    Ctrl-C and SIGTERM act as on the Rust program (the scheduler stops cleanly on Ctrl-C;
    the worker ends): Python's own Ctrl-C handler is set aside while the program runs,
    so no ``KeyboardInterrupt`` follows it."""
    argv = list(sys.argv[1:] if args is None else args)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    return int(_tessera.run_program(program, argv))
