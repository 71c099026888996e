"""Tessera on Ray: ``Session.on_ray`` starts Tessera's scheduler and workers as Ray actors
(the same servers as ``tessera-scheduler`` / ``tessera-worker``, run on a thread of the
actor's process by the extension module) and returns a session on them.

- The scheduler is an actor on the driver's node that asks for no CPU; its address comes
  back through ``--address-file``.
- A worker is an actor pinned to a node (``NodeAffinitySchedulingStrategy``) that asks Ray
  for the CPUs its pool uses: by default one worker per alive node with CPUs, taking all
  of that node's CPUs; with ``workers=N``, N workers dealt round-robin over the nodes.
  With ``gpus_per_worker=G`` it also asks for G GPUs, on the nodes that have them, and
  runs its GPU tasks on those Ray assigns it (``tessera-worker --gpus all`` under the
  ``CUDA_VISIBLE_DEVICES`` Ray sets); without, it runs none (``--gpus none``).
- The servers talk over their own gRPC and Arrow Flight planes, on the node's address, with
  a shared secret made for this session (never sent outside Ray and the session).
- A worker actor that dies (``ray.kill``, its node removed) breaks its stream to the
  scheduler, which loses the worker at once; its chunks are computed again from lineage.
  Ray does not restart worker actors.
- The actors are named ``tessera-scheduler-TAG`` and ``tessera-worker-TAG-I`` (TAG
  random per session). Closing the session kills them (and shuts Ray down if ``on_ray`` started it).
- Workers are placed once, at start: Ray's autoscaler adds nodes only for workers that
  cannot be placed (pending actors), not for a long queue of Tessera tasks.
"""

from __future__ import annotations

import os
import secrets
import tempfile
import threading
import time
from typing import Any, List, Optional, Tuple

from . import _tessera
from .errors import ClusterError, TesseraValueError

#: Seconds to wait for the scheduler to listen and for every worker to register.
START_TIMEOUT = 60.0


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise ImportError("Session.on_ray needs Ray: pip install 'tessera[ray]'") from e
    return ray


class _Server:
    """One of the cluster's programs running on a thread of this process."""

    def __init__(self, program: str, args: List[str], secret: str) -> None:
        os.environ["TESSERA_SECRET"] = secret
        self.status: Optional[int] = None

        def run() -> None:
            self.status = _tessera.run_program(program, args)

        self._thread = threading.Thread(target=run, name=program, daemon=True)
        self._thread.start()


class TesseraScheduler:
    """A Ray actor running ``tessera-scheduler`` on its node's address."""

    def __init__(self, secret: str, start_timeout: float) -> None:
        import ray

        folder = tempfile.mkdtemp(prefix="tessera-ray-scheduler-")
        file = os.path.join(folder, "address")
        host = ray.util.get_node_ip_address()
        self._server = _Server(
            "tessera-scheduler", ["--listen", f"{host}:0", "--address-file", file], secret
        )
        deadline = time.monotonic() + start_timeout
        while not os.path.exists(file):
            if self._server.status is not None:
                raise RuntimeError(f"tessera-scheduler exited with status {self._server.status}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"tessera-scheduler did not listen within {start_timeout} s")
            time.sleep(0.01)
        with open(file) as f:
            self._address = f.read().strip()
        os.remove(file)
        os.rmdir(folder)

    def address(self) -> str:
        """``HOST:PORT`` the scheduler listens at."""
        return self._address


class TesseraWorker:
    """A Ray actor running ``tessera-worker`` on its node's address."""

    def __init__(self, scheduler: str, secret: str, name: str, nthreads: int, gpus: bool,
                 memory_limit: Optional[int], spill_dir: Optional[str]) -> None:
        import ray

        host = ray.util.get_node_ip_address()
        args = ["--scheduler", scheduler, "--listen", f"{host}:0", "--nthreads", str(nthreads),
                "--name", name, "--gpus", "all" if gpus else "none"]
        if memory_limit is not None:
            args += ["--memory-limit", str(memory_limit)]
        if spill_dir is not None:
            args += ["--spill-dir", spill_dir]
        self._server = _Server("tessera-worker", args, secret)

    def node(self) -> str:
        """The Ray node this worker runs on."""
        import ray

        return ray.get_runtime_context().get_node_id()

    def status(self) -> Optional[int]:
        """The worker's exit status once it stopped, else None."""
        return self._server.status


def plan_workers(nodes: List[Tuple[str, float, float]], workers: Optional[int],
                 cpus_per_worker: Optional[int],
                 gpus_per_worker: Optional[int] = None) -> List[Tuple[str, float]]:
    """(node id, CPUs) for each worker over ``nodes`` ((node id, CPUs, GPUs) of the alive
    nodes with CPUs; with ``gpus_per_worker``, those of them with that many GPUs): one per
    node by default, else ``workers`` dealt round-robin; each asks for ``cpus_per_worker``
    or its node's CPUs shared among the node's workers (a fraction where they are more
    than its CPUs; the worker then runs one thread), and ``gpus_per_worker`` GPUs."""
    if workers is not None and workers < 1:
        raise TesseraValueError(f"on_ray needs at least one worker, not {workers}")
    if cpus_per_worker is not None and cpus_per_worker < 1:
        raise TesseraValueError(f"cpus_per_worker must be at least 1, not {cpus_per_worker}")
    if gpus_per_worker is not None and gpus_per_worker < 1:
        raise TesseraValueError(f"gpus_per_worker must be at least 1, not {gpus_per_worker}")
    if not nodes:
        raise ClusterError("the Ray cluster has no alive node with a CPU")
    gpus = gpus_per_worker or 0
    if gpus:
        nodes = [n for n in nodes if n[2] >= gpus]
        if not nodes:
            raise ClusterError(f"no alive Ray node has {gpus} GPU(s) for a Tessera worker")
    count = len(nodes) if workers is None else workers
    on_node = [nodes[i % len(nodes)] for i in range(count)]
    share = {node: sum(1 for n, _, _ in on_node if n == node) for node, _, _ in nodes}
    plan = [(node, float(cpus_per_worker or cpus / share[node])) for node, cpus, _ in on_node]
    have = {node: (cpus, node_gpus) for node, cpus, node_gpus in nodes}
    for node, cpus in plan:
        if cpus * share[node] > have[node][0]:
            raise ClusterError(
                f"{share[node]} Tessera worker(s) of {cpus:g} CPUs cannot be placed on Ray node "
                f"{node}, which has {have[node][0]:g} CPUs"
            )
        if gpus * share[node] > have[node][1]:
            raise ClusterError(
                f"{share[node]} Tessera worker(s) of {gpus} GPU(s) cannot be placed on Ray "
                f"node {node}, which has {have[node][1]:g} GPUs"
            )
    return plan


class RayCluster:
    """The actors of one ``on_ray`` session; :meth:`stop` kills them."""

    def __init__(self, ray: Any, scheduler: Any, workers: List[Any], started_ray: bool) -> None:
        self._ray = ray
        self.scheduler = scheduler
        self.workers = workers
        self._started_ray = started_ray

    def stop(self) -> None:
        """Kills the workers, then the scheduler; shuts Ray down if ``on_ray`` started it."""
        ray = self._ray
        if not ray.is_initialized():
            return
        for actor in [*self.workers, self.scheduler]:
            try:
                ray.kill(actor)
            except Exception:  # already dead, or Ray is going away: nothing left to stop
                pass
        if self._started_ray:
            ray.shutdown()


def start(address: Optional[str], workers: Optional[int], cpus_per_worker: Optional[int],
          gpus_per_worker: Optional[int], memory_limit: Optional[int],
          spill_dir: Optional[str], start_timeout: float) -> Tuple[RayCluster, str, str]:
    """Starts the actors; returns them, the scheduler's address and the secret."""
    ray = _ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    started_ray = not ray.is_initialized()
    if started_ray:
        ray.init(address=address)
    nodes = [(n["NodeID"], float(n["Resources"]["CPU"]), float(n["Resources"].get("GPU", 0)))
             for n in ray.nodes() if n.get("Alive") and n["Resources"].get("CPU", 0) >= 1]
    try:
        placement = plan_workers(nodes, workers, cpus_per_worker, gpus_per_worker)
    except Exception:
        if started_ray:
            ray.shutdown()
        raise
    secret = secrets.token_urlsafe(24)
    tag = secrets.token_hex(3)
    here = ray.get_runtime_context().get_node_id()
    scheduler = ray.remote(TesseraScheduler).options(
        name=f"tessera-scheduler-{tag}",
        num_cpus=0,
        scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=True),
    ).remote(secret, start_timeout)
    cluster = RayCluster(ray, scheduler, [], started_ray)
    try:
        address = ray.get(scheduler.address.remote(), timeout=start_timeout)
        for i, (node, cpus) in enumerate(placement):
            cluster.workers.append(ray.remote(TesseraWorker).options(
                name=f"tessera-worker-{tag}-{i}",
                num_cpus=cpus,
                num_gpus=gpus_per_worker or 0,
                max_restarts=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
            ).remote(address, secret, f"ray-worker-{tag}-{i}", max(1, int(cpus)),
                     bool(gpus_per_worker), memory_limit, spill_dir))
        pending = [w.node.remote() for w in cluster.workers]
        ready, _ = ray.wait(pending, num_returns=len(pending), timeout=start_timeout)
        if len(ready) < len(pending):
            raise ClusterError(
                f"{len(pending) - len(ready)} of {len(pending)} Tessera workers could not be "
                f"placed on Ray within {start_timeout} s (CPUs asked: "
                f"{[c for _, c in placement]}, GPUs each: {gpus_per_worker or 0}; Ray's free "
                f"resources: "
                f"{ray.available_resources()})"
            )
        ray.get(ready)
    except ray.exceptions.RayError as e:
        cluster.stop()
        raise ClusterError(f"starting Tessera's actors on Ray: {e}") from e
    except BaseException:
        cluster.stop()
        raise
    return cluster, address, secret


def wait_for_workers(session: Any, n: int, cluster: RayCluster, start_timeout: float) -> None:
    """Waits until ``n`` workers are registered with the session's scheduler."""
    deadline = time.monotonic() + start_timeout
    while True:
        info = session.cluster_info()
        if info is not None and info["workers"] >= n:
            return
        stopped = [s for s in _ray().get([w.status.remote() for w in cluster.workers])
                   if s is not None]
        if stopped or time.monotonic() > deadline:
            got = 0 if info is None else info["workers"]
            raise ClusterError(
                f"{got} of {n} Tessera workers on Ray registered within {start_timeout} s"
                + (f"; workers exited with status {stopped}" if stopped else "")
            )
        time.sleep(0.05)
