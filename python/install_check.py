"""Run by python/install-test.sh in a new venv holding only the installed wheel (and
NumPy): the package's cluster commands and ``Session.local_cluster`` work with no Rust
programs, and stop without leaving a process."""

import csv
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

import tessera as ts

BIN = os.path.dirname(sys.executable)
TIMEOUT = 60


def check(condition, what):
    if not condition:
        raise SystemExit(f"install-check: FAILED: {what}")


def processes_under(folder):
    """pid -> command line of the processes started from ``folder``'s programs."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if any(a.decode(errors="replace").startswith(folder) for a in argv[:2]):
                found[int(entry)] = b" ".join(argv).decode(errors="replace")
    return found


def commands():
    for name in ("tessera-scheduler", "tessera-worker"):
        path = shutil.which(name)
        check(path == os.path.join(BIN, name), f"{name} is the venv's console script, not {path}")
        done = subprocess.run([name, "--help"], capture_output=True, text=True, timeout=TIMEOUT)
        check(done.returncode == 0 and f"Usage: {name}" in done.stdout, f"{name} --help: {done}")
    check("TESSERA_BIN_DIR" not in os.environ, "no folder of Rust programs named")


def manual_cluster():
    """`tessera-scheduler` and `tessera-worker` started by hand, as `dask scheduler` and
    `dask worker`: a client's job runs on them; Ctrl-C stops the scheduler, and the worker
    ends when its scheduler goes away."""
    scheduler = subprocess.Popen(["tessera-scheduler", "--listen", "127.0.0.1:0"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    worker = None
    try:
        line = scheduler.stdout.readline()
        m = re.fullmatch(r"tessera-scheduler listening on (127\.0\.0\.1:\d+)\n", line)
        check(m, f"the scheduler's first line: {line!r}")
        worker = subprocess.Popen(["tessera-worker", "--scheduler", m.group(1), "--nthreads", "1"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with ts.Session.connect(m.group(1)) as s:
            got = ts.arange(1_000_000, dtype="int64").sum().compute(s)
            check(int(got) == 999_999 * 1_000_000 // 2, f"sum on the manual cluster: {got}")
        scheduler.send_signal(signal.SIGINT)
        check(scheduler.wait(timeout=TIMEOUT) == 0, "the scheduler exits 0 on Ctrl-C")
        worker.wait(timeout=TIMEOUT)  # raises if the worker outlives its scheduler
    finally:
        for p in (scheduler, worker):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


def local_cluster(folder):
    """`Session.local_cluster`: a groupby on CSV data (read and written by Tessera, no
    pandas or pyarrow) equals the sums computed here; closing leaves no process."""
    data, out = os.path.join(folder, "data.csv"), os.path.join(folder, "out.csv")
    want = {}
    with open(data, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["k", "x"])
        for i in range(20_000):
            k, x = i % 13, (i * 7919) % 1000
            w.writerow([k, x])
            want[k] = want.get(k, 0) + x
    with ts.Session.local_cluster(2, threads_per_worker=1) as s:
        started = processes_under(BIN)
        names = sorted(cmd.split(" -m ", 1)[-1].split()[0] for cmd in started.values())
        check(names == ["tessera.scheduler", "tessera.worker", "tessera.worker"],
              f"the cluster's processes: {started}")
        ts.read_csv(data).groupby("k").agg(total=("x", "sum")).reset_index().to_csv(out, session=s)
    with open(out, newline="") as f:
        got = {int(r["k"]): int(float(r["total"])) for r in csv.DictReader(f)}
    check(got == want, f"groupby on the local cluster: {got} != {want}")
    left = processes_under(BIN)
    check(not left, f"processes left after the session closed: {left}")


def main():
    commands()
    manual_cluster()
    with tempfile.TemporaryDirectory() as folder:
        local_cluster(folder)
    check(not processes_under(BIN), "no process of the venv left")
    print("install-check: console scripts, a manual cluster and local_cluster from the wheel")


if __name__ == "__main__":
    main()
