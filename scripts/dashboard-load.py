#!/usr/bin/env python3
"""Runs a benchmark command that serves the live dashboard while pages load it: CLIENTS
event streams read continuously (as open browser tabs do) and one never reads (a stalled
client), all connected before the command's second run. Prints the command's output (its
JSON lines, in shared/peers' format) and, on stderr, how much each reader received, so a
run with pages can sit beside one without (issue 16's dashboard benchmark; not for CI).

    scripts/dashboard-load.py --port 8787 --clients 20 -- \\
        target/release/tessera-bench pi --size 1e9 --repeat 6 \\
        --dashboard 127.0.0.1:8787 --engine tessera-dash20
"""
import argparse
import socket
import subprocess
import sys
import threading
import time


def open_stream(port, rcvbuf=None):
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
    return s


def read_all(s, counts, i):
    s.settimeout(1.0)
    while True:
        try:
            data = s.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            return
        if not data:
            return
        counts[i] += data.count(b"event: ")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", args.port), timeout=1).close()
            break
        except OSError:
            if time.time() > deadline or proc.poll() is not None:
                sys.exit("dashboard-load: the dashboard never listened")
            time.sleep(0.02)
    counts = [0] * args.clients
    readers = []
    for i in range(args.clients):
        t = threading.Thread(target=read_all, args=(open_stream(args.port), counts, i), daemon=True)
        t.start()
        readers.append(t)
    stalled = open_stream(args.port, rcvbuf=4096)
    out, _ = proc.communicate()
    sys.stdout.write(out)
    print(f"dashboard-load: {args.clients} readers got {min(counts)}..{max(counts)} events "
          f"each; one client never read", file=sys.stderr)
    stalled.close()
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
