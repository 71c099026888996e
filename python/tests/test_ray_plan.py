"""Where ``Session.on_ray`` places its workers (``tessera._ray.plan_workers``), without Ray:
CPUs dealt per node, GPUs asked only of the nodes that have them, and requests no node can
hold refused with a typed error before any actor starts."""

import pytest

import tessera as ts
from tessera._ray import plan_workers

# (node id, CPUs, GPUs)
NODES = [("a", 8.0, 2.0), ("b", 4.0, 0.0)]


def test_one_worker_per_node_takes_its_cpus():
    assert plan_workers(NODES, None, None) == [("a", 8.0), ("b", 4.0)]


def test_workers_dealt_round_robin_share_a_node_s_cpus():
    assert plan_workers(NODES, 3, None) == [("a", 4.0), ("b", 4.0), ("a", 4.0)]
    assert plan_workers(NODES, 3, 2) == [("a", 2.0), ("b", 2.0), ("a", 2.0)]


def test_gpu_workers_go_only_to_nodes_with_enough_gpus():
    assert plan_workers(NODES, None, None, 1) == [("a", 8.0)]
    assert plan_workers(NODES, 2, None, 1) == [("a", 4.0), ("a", 4.0)]
    assert plan_workers(NODES, None, None, 2) == [("a", 8.0)]


def test_requests_no_node_can_hold_are_typed_errors():
    with pytest.raises(ts.ClusterError, match="no alive Ray node has 3 GPU"):
        plan_workers(NODES, None, None, 3)
    with pytest.raises(ts.ClusterError, match="which has 2 GPUs"):
        plan_workers(NODES, 3, None, 1)
    with pytest.raises(ts.ClusterError, match="which has 4 CPUs"):
        plan_workers(NODES, None, 6)
    with pytest.raises(ts.TesseraValueError, match="gpus_per_worker"):
        plan_workers(NODES, None, None, 0)
    with pytest.raises(ts.ClusterError, match="no alive node with a CPU"):
        plan_workers([], None, None)
