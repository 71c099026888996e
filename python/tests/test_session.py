"""Sessions: options, context manager, default session, the GIL and Ctrl-C."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import tessera as ts


def test_options_reach_the_session(tmp_path):
    with ts.Session(threads=2, memory_budget=1 << 28, chunk_bytes=1 << 20, spill_dir=str(tmp_path),
                    progress=False) as s:
        c = s.config
        assert (c["threads"], c["memory_budget"], c["chunk_bytes"]) == (2, 1 << 28, 1 << 20)
        assert str(c["spill_dir"]) == str(tmp_path)
        assert ts.get_session() is s  # the default inside the block
        assert float(ts.ones(10).sum()) == 10.0
    assert s.closed
    assert ts.get_session() is not s


def test_backend_keyword_picks_the_devices():
    with ts.Session(threads=2, backend="cpu", progress=False) as s:
        assert s.config["backend"] == "cpu"
        assert s.config["devices"] == ["cpu (2 threads)"]
    with ts.Session(threads=2, backend="auto", progress=False) as s:
        assert s.config["backend"] == "auto"
        assert s.config["devices"][0] == "cpu (2 threads)"
        assert float(ts.ones(10).sum()) == 10.0
    with pytest.raises(ValueError, match="unknown backend"):
        ts.Session(backend="tpu")
    if not os.path.exists("/proc/driver/nvidia"):
        with pytest.raises(ts.TesseraError, match="cuda backend cannot be used"):
            ts.Session(backend="cuda")


def test_to_backend_keeps_values_and_cuda_needs_a_gpu():
    x = np.arange(1000.0).reshape(100, 10)
    with ts.Session(threads=2, backend="cpu", progress=False) as s:
        a = ts.asarray(x).rechunk((30, 10))
        np.testing.assert_array_equal((a.to_backend("cpu") * 2).compute(s), x * 2)
        np.testing.assert_array_equal(a.to_backend("auto").sum(axis=0).compute(s), x.sum(axis=0))
        with pytest.raises(ValueError, match="unknown backend"):
            a.to_backend("tpu")
        with pytest.raises(ts.ComputeError, match="to_backend"):
            (a.to_backend("cuda") + 1).compute(s)
        assert float(a.sum().compute(s)) == x.sum()


def test_default_session_is_made_once():
    a = ts.get_session()
    assert ts.get_session() is a and not a.closed
    np.testing.assert_array_equal(np.asarray(ts.arange(3)), [0, 1, 2])


def test_eager_session_computes_at_once():
    with ts.Session(threads=1, eager=True) as s:
        x = ts.arange(5) * 2
        np.testing.assert_array_equal(x.compute(s), np.arange(5) * 2)


def test_gil_is_released_while_a_job_runs(session):
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=count)
    x = ts.random.default_rng(0).uniform(size=(3_000_000,))
    t.start()
    before = len(ticks)
    float(ts.sqrt(x * x + 1).sum().compute(session))
    after = len(ticks)
    stop.set()
    t.join()
    # The other thread kept running while this one waited for the job.
    assert after - before > 5


def test_ctrl_c_cancels_a_long_job_and_the_session_stays_usable():
    # About a minute of work on one thread (50M elements took 1.8 s). SIGINT at 0.3 s must
    # raise KeyboardInterrupt out of compute() and cancel the job: the next job on the
    # same one-thread session would otherwise wait behind it for the rest of that minute.
    # Python's own Ctrl-C handler, as in a terminal: a process started in the background
    # by a non-interactive shell inherits SIGINT ignored, and Python then keeps it so.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with ts.Session(threads=1) as s:
            x = ts.random.default_rng(1).uniform(size=(1_600_000_000,))
            job = (ts.sin(x) * ts.cos(x) + ts.sqrt(x)).sum()
            timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
            timer.start()
            try:
                with pytest.raises(KeyboardInterrupt):
                    job.compute(s)
            finally:
                timer.cancel()
            assert float(ts.arange(4).sum().compute(s)) == 6.0
    finally:
        signal.signal(signal.SIGINT, previous)


def test_local_cluster_and_connect():
    with ts.Session.local_cluster(2) as s:
        a = np.arange(1000.0).reshape(100, 10)
        np.testing.assert_allclose(ts.asarray(a).sum(axis=0).compute(s), a.sum(axis=0))
        # 4.8 MB from NumPy: past 1 MiB, it goes to the workers by Flight do_put.
        rng = np.random.default_rng(5)
        big = rng.standard_normal((60_000, 10))
        got = ts.asarray(big).sum(axis=0).compute(s)
        np.testing.assert_allclose(got, big.sum(axis=0), rtol=1e-12)
        np.testing.assert_array_equal(ts.asarray(big)[::7].compute(s), big[::7])


def test_connect_to_nothing_is_a_cluster_error():
    with pytest.raises(ts.ClusterError) as e:
        ts.Session.connect("127.0.0.1:1")
    assert isinstance(e.value, ConnectionError)


def test_dashboard_serves_metrics_that_equal_the_jobs():
    import re
    import urllib.request

    with ts.Session(threads=2, progress=False, dashboard="127.0.0.1:0") as s:
        link = s.dashboard_link
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", link), link
        assert float(ts.arange(1000).sum()) == 499500.0
        page = urllib.request.urlopen(link, timeout=30).read().decode()
        assert 'id="totals"' in page and 'id="task-stream"' in page
        metrics = urllib.request.urlopen(link + "metrics", timeout=30).read().decode()
        assert re.search(r"^tessera_jobs_finished_total 1$", metrics, re.M), metrics
    with ts.Session(threads=1, progress=False) as plain:
        assert plain.dashboard_link is None
    with pytest.raises(ValueError, match="only with a token"):
        ts.Session(dashboard="0.0.0.0:0")


def test_events_reach_python_logging(caplog, tmp_path):
    import logging

    import pandas as pd

    with ts.Session(threads=2, memory_budget=1 << 16, spill_dir=str(tmp_path),
                    progress=False) as s:
        # At the default WARNING level the job's info and debug events are not delivered.
        with caplog.at_level(logging.WARNING, logger="tessera"):
            assert float(ts.ones(100).sum().compute(s)) == 100.0
        assert not [r for r in caplog.records if r.name.startswith("tessera.")]
        # At INFO the job's end arrives, from the logger of the Rust module.
        with caplog.at_level(logging.INFO, logger="tessera"):
            assert float(ts.ones(100).sum().compute(s)) == 100.0
        finished = [r for r in caplog.records if r.getMessage().startswith("job finished")]
        assert finished and finished[0].name == "tessera.session"
        assert finished[0].levelno == logging.INFO and "chunks=" in finished[0].getMessage()
        assert not [r for r in caplog.records if r.levelno < logging.INFO]
        # At DEBUG a frame over the 64 KiB budget shows its chunks spilled by the store.
        caplog.clear()
        frame = pd.DataFrame({"k": np.arange(20000) % 5000, "v": np.arange(20000.0)})
        with caplog.at_level(logging.DEBUG, logger="tessera"):
            got = ts.from_pandas(frame, rows_per_chunk=2000).groupby("k").sum().compute(s)
        assert got["v"].sum() == frame["v"].sum()
        spilled = [r for r in caplog.records if r.getMessage().startswith("spilled")]
        assert spilled and spilled[0].name == "tessera.actors.store"
        assert spilled[0].levelno == logging.DEBUG and "bytes=" in spilled[0].getMessage()


def test_a_budget_on_resident_memory_is_reported_and_jobs_run_under_it():
    # 64 MiB against a process that holds more (Python, NumPy, the extension): the budget
    # drops to its floor and tasks run one at a time, spilling; answers stay right.
    with ts.Session(threads=2, memory_budget=1 << 26, chunk_bytes=1 << 16, progress=False,
                    limit_resident_memory=True) as s:
        assert s.config["limit_resident_memory"] is True
        x = np.arange(400_000, dtype=np.float64)
        np.testing.assert_array_equal((ts.asarray(x) * 2).compute(s), x * 2)
    with ts.Session(threads=1, progress=False) as plain:
        assert plain.config["limit_resident_memory"] is False
