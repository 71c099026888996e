"""Tessera on Ray (``Session.on_ray``) on a two-node Ray cluster simulated on this machine
(``ray.cluster_utils.Cluster``): answers equal a session in this process, a killed worker
actor loses nothing, closing leaves no actor or process, bad settings are typed errors.

Ray binds to the host's address, and tests listen on loopback only: these run where the
only network interface is loopback (python/run-tests.sh runs pytest in a network
namespace of its own, ``unshare -n``, when it can)."""

import os
import socket
import threading
import time

import numpy as np
import pandas as pd
import pytest

import tessera as ts

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.skipif(
    [name for _, name in socket.if_nameindex()] != ["lo"],
    reason="Ray binds to the host's address: run in a network namespace (unshare -n)",
)


@pytest.fixture(scope="module")
def ray_cluster():
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    ray.init(address=cluster.address, logging_level="WARNING", log_to_driver=False)
    yield cluster
    ray.shutdown()
    cluster.shutdown()


@pytest.fixture(scope="module")
def local():
    with ts.Session(threads=2, chunk_bytes=1 << 16, progress=False) as s:
        yield s


def tessera_actor_processes():
    """pid -> title of the processes running Tessera's actors (Ray names a process after
    its actor's class: ``ray::TesseraWorker``)."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    title = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "ray::TesseraWorker" in title or "ray::TesseraScheduler" in title:
                found[int(entry)] = title
    return found


def frames():
    rng = np.random.default_rng(21)
    left = pd.DataFrame({"k": rng.integers(0, 50, 20_000), "x": rng.normal(size=20_000)})
    right = pd.DataFrame({"k": np.arange(0, 60), "w": rng.normal(size=60)})
    return left, right


def jobs(session, left, right):
    """A groupby, a join and an SVD computed on ``session``."""
    df = ts.from_pandas(left, rows_per_chunk=2_000)
    other = ts.from_pandas(right, rows_per_chunk=16)
    grouped = df.groupby("k").agg(total=("x", "sum"), n=("x", "count")).compute(session)
    joined = df.merge(other, on="k").compute(session)
    a = np.random.default_rng(3).standard_normal((4_000, 8))
    _, sv, _ = ts.linalg.svd(ts.asarray(a).rechunk((500, 8)))
    return (grouped.sort_index(), joined.sort_values(["k", "x"]).reset_index(drop=True),
            np.asarray(sv.compute(session)))


def test_a_worker_per_node_answers_as_in_process(ray_cluster, local):
    left, right = frames()
    with ts.Session.on_ray(chunk_bytes=1 << 16, progress=False) as s:
        info = s.cluster_info()
        assert info["workers"] == 2 and info["nthreads"] == 2, info
        # Without gpus_per_worker, no worker opens a GPU (--gpus none).
        assert [w["gpus"] for w in info["worker_list"]] == [0, 0], info
        nodes = ray.get([w.node.remote() for w in s._ray_cluster.workers])
        assert len(set(nodes)) == 2, nodes
        got = jobs(s, left, right)
    want = jobs(local, left, right)
    pd.testing.assert_frame_equal(got[0], want[0], check_exact=False, rtol=1e-12)
    pd.testing.assert_frame_equal(got[1], want[1])
    np.testing.assert_allclose(got[2], want[2], rtol=1e-10)
    # And against independent answers: pandas and NumPy.
    pd.testing.assert_series_equal(got[0]["n"], left.groupby("k")["x"].count(), check_names=False,
                                   check_dtype=False)
    assert len(got[1]) == len(left.merge(right, on="k"))
    np.testing.assert_allclose(got[2], np.linalg.svd(np.random.default_rng(3).standard_normal(
        (4_000, 8)), compute_uv=False), rtol=1e-10)


def test_a_killed_worker_actor_loses_nothing(ray_cluster, local):
    x = ts.random.default_rng(5).uniform(size=(3_000_000,))
    expr = (x * x).sum()
    want = float(expr.compute(local))
    with ts.Session.on_ray(chunk_bytes=1 << 15, progress=False) as s:
        victim = s._ray_cluster.workers[1]
        result = {}
        job = threading.Thread(target=lambda: result.update(v=float(expr.compute(s))))
        job.start()
        time.sleep(0.3)  # into the job (if it ended already, the answer must still hold)
        ray.kill(victim)
        job.join(timeout=300)
        assert not job.is_alive(), "the job did not end"
        assert result["v"] == pytest.approx(want, rel=1e-12)
        # The scheduler lost the worker; the session goes on with the other.
        deadline = time.monotonic() + 60
        while s.cluster_info()["workers"] != 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert s.cluster_info()["workers"] == 1
        assert float(expr.compute(s)) == pytest.approx(want, rel=1e-12)


def test_closing_leaves_no_actor_or_process(ray_cluster):
    with ts.Session.on_ray(workers=3, cpus_per_worker=None, progress=False) as s:
        assert s.cluster_info()["workers"] == 3
        assert len(tessera_actor_processes()) == 4  # the scheduler and three workers
        assert float(ts.arange(1000).sum().compute(s)) == 499500.0
    deadline = time.monotonic() + 60
    while tessera_actor_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not tessera_actor_processes()
    alive = [a for a in ray.util.list_named_actors(all_namespaces=True)]
    assert not alive, alive


def test_bad_settings_are_typed_errors_and_leave_nothing(ray_cluster):
    with pytest.raises(ts.TesseraValueError, match="at least one worker"):
        ts.Session.on_ray(workers=0)
    # More CPUs than any node has: refused before any actor starts.
    with pytest.raises(ts.ClusterError, match="cannot be placed on Ray node"):
        ts.Session.on_ray(workers=1, cpus_per_worker=64)
    # GPUs where no node has one: refused likewise.
    with pytest.raises(ts.TesseraValueError, match="gpus_per_worker must be at least 1"):
        ts.Session.on_ray(workers=1, gpus_per_worker=0)
    with pytest.raises(ts.ClusterError, match="no alive Ray node has 1 GPU"):
        ts.Session.on_ray(workers=1, gpus_per_worker=1)
    # Fits a node, but the CPUs are taken (by a task holding them): not placed in time.
    hold = ray.remote(num_cpus=1)(lambda: time.sleep(30))
    held = [hold.remote(), hold.remote()]
    try:
        with pytest.raises(ts.ClusterError, match="could not be placed on Ray within"):
            ts.Session.on_ray(workers=1, start_timeout=3)
    finally:
        for ref in held:
            ray.cancel(ref, force=True)
    deadline = time.monotonic() + 60
    while tessera_actor_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not tessera_actor_processes()
