"""The cluster's programs from the Python package: ``python -m tessera.scheduler`` /
``tessera.worker`` (the console scripts ``tessera-scheduler`` / ``tessera-worker`` run
the same ``main``), and ``Session.local_cluster`` started through them, with no Rust
program on hand."""

import os
import re
import signal
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import tessera as ts
from tessera import _tessera


def run_module(module, *args, timeout=60):
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          timeout=timeout)


def children():
    """This process's child processes: pid -> command line (from /proc)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
            found[int(entry)] = cmdline
    return found


def test_help_version_and_usage_errors_as_the_rust_programs():
    helped = run_module("tessera.worker", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "Usage: tessera-worker" in helped.stdout and "--scheduler" in helped.stdout
    version = run_module("tessera.scheduler", "--version")
    assert version.returncode == 0, version.stderr
    assert re.fullmatch(r"tessera-scheduler \d+\.\d+\.\d+\s*", version.stdout), version.stdout
    # A worker needs --scheduler: clap's usage error, exit status 2, and no traceback.
    missing = run_module("tessera.worker")
    assert missing.returncode == 2
    assert "--scheduler" in missing.stderr and "Traceback" not in missing.stderr
    bad = run_module("tessera.worker", "--scheduler", "127.0.0.1:1", "--memory-limit", "5X")
    assert bad.returncode == 2 and "unknown size unit" in bad.stderr


def test_an_unknown_program_is_a_value_error():
    with pytest.raises(ts.TesseraValueError, match="tessera-scheduler or tessera-worker"):
        _tessera.run_program("tessera-nothing", [])


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or sys.platform == "win32", reason="POSIX signals")
def test_scheduler_serves_then_stops_cleanly_on_ctrl_c():
    p = subprocess.Popen([sys.executable, "-m", "tessera.scheduler", "--listen", "127.0.0.1:0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        m = re.fullmatch(r"tessera-scheduler listening on (127\.0\.0\.1:\d+)\n", line)
        assert m, line
        # A client reaches it (connecting asks the scheduler for its state).
        with ts.Session.connect(m.group(1)) as s:
            assert not s.closed
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
    finally:
        p.kill()
        p.wait()
    assert p.returncode == 0, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads child processes from /proc")
def test_local_cluster_from_the_package_alone(monkeypatch, tmp_path):
    # No folder of Rust programs: the cluster runs on this interpreter's tessera package.
    monkeypatch.delenv("TESSERA_BIN_DIR", raising=False)
    rng = np.random.default_rng(11)
    pdf = pd.DataFrame({"k": rng.integers(0, 7, 5000), "x": rng.normal(size=5000)})
    path = tmp_path / "data.csv"
    pdf.to_csv(path, index=False)
    before = set(children())
    with ts.Session.local_cluster(2, threads_per_worker=1, memory_limit=1 << 28, gpus="none") as s:
        assert [w["gpus"] for w in s.cluster_info()["worker_list"]] == [0, 0]
        started = {pid: cmd for pid, cmd in children().items() if pid not in before}
        commands = sorted(cmd.split(" -m ", 1)[-1].split()[0] for cmd in started.values())
        assert commands == ["tessera.scheduler", "tessera.worker", "tessera.worker"], started
        got = ts.read_csv(str(path)).groupby("k").agg(total=("x", "sum"), n=("x", "count"))
        got = got.compute(s).reset_index().sort_values("k").reset_index(drop=True)
        want = pdf.groupby("k").agg(total=("x", "sum"), n=("x", "count")).reset_index()
        pd.testing.assert_frame_equal(got, want, check_dtype=False, check_exact=False, rtol=1e-12)
    # Closing the session stopped (and reaped) every process it started.
    assert not set(children()) & set(started), children()


def test_a_local_cluster_asked_for_a_gpu_that_is_not_there_names_the_cause(monkeypatch):
    monkeypatch.delenv("TESSERA_BIN_DIR", raising=False)
    with pytest.raises(ts.ClusterError, match="GPUs cannot be used"):
        ts.Session.local_cluster(1, gpus="4096")


def test_a_nanny_runs_its_worker_through_this_interpreter():
    # The child is `python -m tessera.worker` of this venv: it starts, cannot reach the
    # scheduler, and its status (1, not a restart) is the nanny's.
    done = run_module("tessera.worker", "--nanny", "--scheduler", "127.0.0.1:1")
    assert done.returncode == 1, done.stderr
    assert "cannot reach the scheduler" in done.stderr
    assert "No module named" not in done.stderr
    # --nanny that is not on the process's own command line (a worker run in-process, as
    # on Ray) is refused rather than restarting the wrong program.
    assert _tessera.run_program("tessera-worker", ["--nanny", "--scheduler", "127.0.0.1:1"]) == 1
