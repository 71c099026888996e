"""Sessions: where lazy arrays and frames are computed."""

from __future__ import annotations

import sys
import threading
from typing import Any, Optional

from . import _tessera


class Session:
    """A Tessera session: an actor system with a pool of CPU worker threads that
    computes arrays and frames in chunks, within a host memory budget (spilling to disk
    beyond it).

    Every keyword argument left as ``None`` keeps Tessera's default:

    - ``threads``: worker threads (default: the cores this process may use);
    - ``memory_budget``: bytes of host memory for chunks (default 70% of the memory the
      process may use);
    - ``limit_resident_memory``: the memory budget limits the process's resident memory,
      not only the chunks reserved (default False; see docs/guide/memory.md);
    - ``disk_budget``: bytes the spill folder may hold;
    - ``spill_dir``: folder in which the private spill folder is made;
    - ``chunk_bytes``: target bytes per automatically sized chunk (default 32 MiB);
    - ``eager``: run every operation at once (Mars's eager mode);
    - ``progress``: draw a progress bar always (True), never (False), or when stderr is
      a terminal (None);
    - ``shuffle_rows``, ``broadcast_bytes``: groupby-shuffle and broadcast-join thresholds;
    - ``scheduler``: ``"HOST:PORT"`` of a cluster's scheduler to run on instead;
    - ``secret``: the cluster's shared secret (default ``$TESSERA_SECRET``);
    - ``dashboard``: ``"HOST:PORT"`` to serve the live dashboard at (``"127.0.0.1:0"``
      for any free port; see :attr:`dashboard_link`), with its Prometheus ``/metrics``;
    - ``dashboard_token``: the token every dashboard request must carry (needed to serve
      it off loopback);
    - ``backend``: ``"cpu"``, ``"cuda"`` (also every GPU; an error naming the cause where
      none can be used) or ``"auto"`` (the GPUs where they can be used) — default
      ``$TESSERA_BACKEND``, else ``"cpu"``. ``config["devices"]`` names the devices used.

    A session is a context manager: inside ``with Session() as s:`` it is the default
    session, and it is closed on exit.
    """

    def __init__(
        self,
        *,
        threads: Optional[int] = None,
        memory_budget: Optional[int] = None,
        disk_budget: Optional[int] = None,
        spill_dir: Optional[str] = None,
        chunk_bytes: Optional[int] = None,
        eager: bool = False,
        progress: Optional[bool] = None,
        shuffle_rows: Optional[int] = None,
        broadcast_bytes: Optional[int] = None,
        scheduler: Optional[str] = None,
        secret: Optional[str] = None,
        dashboard: Optional[str] = None,
        dashboard_token: Optional[str] = None,
        backend: Optional[str] = None,
        limit_resident_memory: bool = False,
    ) -> None:
        self._native = _tessera.Session(
            threads=threads,
            memory_budget=memory_budget,
            disk_budget=disk_budget,
            spill_dir=None if spill_dir is None else str(spill_dir),
            chunk_bytes=chunk_bytes,
            eager=eager,
            progress=progress,
            shuffle_rows=shuffle_rows,
            broadcast_bytes=broadcast_bytes,
            scheduler=scheduler,
            secret=secret,
            dashboard=dashboard,
            dashboard_token=dashboard_token,
            backend=backend,
            limit_resident_memory=limit_resident_memory,
        )
        self._previous: list = []
        self._on_close: list = []

    @classmethod
    def _wrap(cls, native: Any) -> "Session":
        s = cls.__new__(cls)
        s._native = native
        s._previous = []
        s._on_close = []
        return s

    @classmethod
    def connect(cls, address: str) -> "Session":
        """A session on the cluster whose scheduler listens at ``address``
        (``"HOST:PORT"``)."""
        return cls(scheduler=address)

    @classmethod
    def local_cluster(
        cls,
        workers: int = 2,
        *,
        threads_per_worker: Optional[int] = None,
        memory_limit: Optional[int] = None,
        gpus: Optional[str] = None,
    ) -> "Session":
        """A session on a cluster of a scheduler and ``workers`` worker processes on this
        machine (as Dask's ``LocalCluster``), started now and stopped, with everything
        they spilled, when the session closes.

        - ``threads_per_worker``: threads of each worker's pool (default: the cores
          shared out among the workers);
        - ``memory_limit``: bytes each worker holds in memory before spilling (default:
          no limit);
        - ``gpus``: the GPUs each worker runs the tasks with GPU kernels on: ``"all"``,
          ``"auto"``, ``"none"`` or ordinals such as ``"0,1"`` (default: by
          ``$TESSERA_BACKEND``: ``cuda`` all, ``auto`` auto, else none).

        The processes run this package's servers through this interpreter (``python -m
        tessera.scheduler``, ``python -m tessera.worker``), so nothing but ``pip
        install`` is needed; ``$TESSERA_BIN_DIR``, where set, names a folder with the
        Rust programs ``tessera-scheduler`` and ``tessera-worker`` to start instead."""
        return cls._wrap(
            _tessera.Session.local_cluster(
                workers,
                threads_per_worker=threads_per_worker,
                memory_limit=memory_limit,
                gpus=gpus,
                python=sys.executable or None,
            )
        )

    @classmethod
    def on_ray(
        cls,
        address: Optional[str] = None,
        workers: Optional[int] = None,
        *,
        cpus_per_worker: Optional[int] = None,
        gpus_per_worker: Optional[int] = None,
        memory_limit: Optional[int] = None,
        spill_dir: Optional[str] = None,
        start_timeout: float = 60.0,
        **options: Any,
    ) -> "Session":
        """A session on Tessera's scheduler and workers started as Ray actors (needs
        ``pip install 'tessera[ray]'``), stopped when the session closes.

        - ``address``: the Ray cluster to connect to when Ray is not initialised yet
          (``ray.init(address=...)``; default ``$RAY_ADDRESS`` or a new local Ray);
        - ``workers``: number of worker actors (default one per alive node with CPUs),
          dealt round-robin over the nodes;
        - ``cpus_per_worker``: CPUs each worker asks Ray for and runs threads on (default
          its node's CPUs shared among the node's workers);
        - ``gpus_per_worker``: GPUs each worker asks Ray for, on the nodes that have them,
          and runs the tasks with GPU kernels on (default none; a session on them takes
          ``backend="cuda"``);
        - ``memory_limit``, ``spill_dir``: each worker's, as ``tessera-worker``'s flags;
        - ``start_timeout``: seconds to wait for the actors to be placed and registered;
        - other keywords are :class:`Session`'s (``chunk_bytes``, ``progress``, …).

        The scheduler runs on the driver's node; workers talk over Tessera's own gRPC and
        Flight planes with a secret made for the session. A worker actor that dies loses
        nothing (its chunks are computed again). See docs/guide/cluster.md."""
        from . import _ray

        cluster, address, secret = _ray.start(address, workers, cpus_per_worker,
                                              gpus_per_worker, memory_limit, spill_dir,
                                              start_timeout)
        session = None
        try:
            session = cls(scheduler=address, secret=secret, **options)
            session._on_close.append(cluster.stop)
            session._ray_cluster = cluster
            _ray.wait_for_workers(session, len(cluster.workers), cluster, start_timeout)
        except BaseException:
            if session is not None:
                session.close()
            else:
                cluster.stop()
            raise
        return session

    def cluster_info(self) -> Optional[dict]:
        """The cluster's workers as its scheduler sees them (``workers``, ``nthreads``,
        ``memory_limit``, ``worker_list``), or None for a session in this process."""
        return self._native.cluster_info()

    @property
    def config(self) -> dict:
        """The session's settings (threads, memory_budget, chunk_bytes, …)."""
        return self._native.config()

    @property
    def dashboard_link(self) -> Optional[str]:
        """The live dashboard's page, ``http://HOST:PORT/``, or None without one (as
        Dask's ``Client.dashboard_link``)."""
        return self._native.dashboard_link

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran."""
        return self._native.closed

    def close(self) -> None:
        """Stops the session's actor system; later jobs on it raise ``ComputeError``.
        A session from :meth:`on_ray` then stops its Ray actors."""
        self._native.close()
        while self._on_close:
            self._on_close.pop()()

    def sql(self, query: str, tables: Optional[dict] = None) -> Any:
        """The lazy frame of one SQL ``SELECT`` over ``tables`` (name to
        ``tessera.DataFrame``), computed on this session: ``tessera.sql`` with
        ``session=self``."""
        from ._sql import sql

        return sql(query, tables, session=self)

    def __enter__(self) -> "Session":
        with _lock:
            self._previous.append(_state.current)
            _state.current = self
        return self

    def __exit__(self, *exc: Any) -> None:
        with _lock:
            _state.current = self._previous.pop() if self._previous else None
        self.close()

    def __repr__(self) -> str:
        if self.closed:
            return "tessera.Session<closed>"
        c = self.config
        return (
            f"tessera.Session<threads={c['threads']}, memory_budget={c['memory_budget']}, "
            f"chunk_bytes={c['chunk_bytes']}>"
        )


class _State:
    current: Optional[Session] = None
    default: Optional[Session] = None


_state = _State()
_lock = threading.Lock()


def get_session(session: Optional[Session] = None) -> Session:
    """``session`` if given, else the one of the innermost ``with Session()`` block, else
    the default session (made on first use with default settings, as Dask's default
    scheduler is)."""
    if session is not None:
        return session
    with _lock:
        if _state.current is not None and not _state.current.closed:
            return _state.current
        if _state.default is None or _state.default.closed:
            _state.default = Session()
        return _state.default
