#!/usr/bin/env bash
# The HTML performance report in a real browser (issue 16): runs a real job with
# `--report` and `--trace`, opens the report in headless Chromium and checks that no
# JavaScript error reached the console, that every panel was drawn, and that the numbers
# on the page equal the job's statistics (as the example printed them, and as the trace
# counts its tasks); then the live dashboard served by the same example, and the one a
# cluster's scheduler serves (`tessera-scheduler --dashboard`, one worker). Keeps
# screenshots, target/report.png, target/dashboard.png and target/scheduler-dashboard.png,
# as the CI artifacts.
#
# Needs Rust, CPython 3 and Debian's chromium; installs chromium with apt-get (as root,
# non-interactive) when /usr/bin/chromium is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "browser-test: /usr/bin/chromium is missing and installing it needs root" >&2
    exit 1
  fi
  echo "browser-test: installing chromium"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

out=target/browser-test
rm -rf "$out"
mkdir -p "$out"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT

# The example as `cargo test --workspace` builds it (and with the same features: building
# the examples package alone would resolve them differently and rebuild every
# dependency); after the test run this builds nothing.
cargo test -q --workspace --no-run
target/debug/examples/monte_carlo_pi --points 2e7 --chunk-rows 500000 --threads 2 \
  --report "$out/report.html" --trace "$out/trace.json" >"$out/stdout.txt"

flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --user-data-dir="$profile" --enable-logging=stderr --v=0)

# Loads a page: its DOM after load on stdout, the browser's log (console included) in $2.
browse() {
  timeout 120 chromium "${flags[@]}" --dump-dom "file://$PWD/$1" 2>"$2"
}

# The console check must see an error when there is one: a page that throws.
printf '<!DOCTYPE html><p>x</p><script>undefinedFunction()</script>\n' >"$out/throws.html"
browse "$out/throws.html" "$out/throws.log" >/dev/null
if ! grep -q 'CONSOLE.*Uncaught' "$out/throws.log"; then
  echo "browser-test: the console check does not see a thrown error; log:" >&2
  cat "$out/throws.log" >&2
  exit 1
fi

browse "$out/report.html" "$out/console.log" >"$out/dom.html"
timeout 120 chromium "${flags[@]}" --window-size=1280,1800 --screenshot="$PWD/target/report.png" \
  "file://$PWD/$out/report.html" 2>"$out/screenshot.log"

python3 - "$out" <<'PY'
import json, re, sys
from html.parser import HTMLParser

out = sys.argv[1]
problems = []

console = open(f"{out}/console.log", encoding="utf-8", errors="replace").read()
for line in console.splitlines():
    if "CONSOLE" in line:
        problems.append(f"console: {line}")

class Dom(HTMLParser):
    """Sections by id, the shapes drawn in each, and the data-stat cells."""
    def __init__(self):
        super().__init__()
        self.section, self.shapes, self.stats, self.cell = None, {}, {}, None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.section = a.get("id")
            self.shapes[self.section] = 0
        elif self.section and tag in ("rect", "path", "td", "li"):
            self.shapes[self.section] += 1
        if tag == "td" and "data-stat" in a:
            self.cell = a["data-stat"]
    def handle_data(self, data):
        if self.cell:
            self.stats[self.cell] = data.strip()
            self.cell = None
    def handle_endtag(self, tag):
        if tag == "section":
            self.section = None

dom = Dom()
dom.feed(open(f"{out}/dom.html", encoding="utf-8").read())
panels = ["task-stream", "progress", "memory", "time-per-op", "occupancy", "job-stats", "plan"]
for panel in panels:
    if dom.shapes.get(panel, 0) == 0:
        problems.append(f"panel {panel} missing or empty")

printed = open(f"{out}/stdout.txt").read()
chunks = int(re.search(r"^chunks:\s+(\d+)", printed, re.M).group(1))
produced = int(re.search(r"^produced:\s+(\d+) bytes", printed, re.M).group(1))
for name, want in [("chunks_run", chunks), ("bytes_produced", produced)]:
    got = dom.stats.get(name)
    if got != str(want):
        problems.append(f"{name}: page shows {got}, the job reported {want}")
by_op = sum(int(v) for k, v in dom.stats.items() if k.startswith("chunks_by_op."))
if by_op != chunks:
    problems.append(f"chunks_by_op cells add up to {by_op}, not {chunks}")

trace = json.load(open(f"{out}/trace.json"))
tasks = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "task"]
if len(tasks) != chunks:
    problems.append(f"the trace has {len(tasks)} task events for {chunks} chunk tasks")

png = open("target/report.png", "rb").read()
if not png.startswith(b"\x89PNG") or len(png) < 10_000:
    problems.append(f"target/report.png is not a drawn page ({len(png)} bytes)")

if problems:
    print("browser-test: FAILED", *problems, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print(f"browser-test: {len(panels)} panels drawn, no console error, "
      f"{chunks} chunk tasks on the page and in the trace; screenshot target/report.png")
PY
# A free TCP port on loopback.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# Waits until file $2 holds $1 while process $3 runs (its log $4 is shown if it dies).
wait_for() {
  for _ in $(seq 1 240); do
    grep -q "$1" "$2" && return 0
    kill -0 "$3" 2>/dev/null || { cat "$4" >&2; exit 1; }
    sleep 0.5
  done
  echo "browser-test: no \"$1\" in $2 after 2 minutes" >&2
  exit 1
}

# The live dashboard (the same example, serving it at a free port and for a minute after
# its job): loaded over HTTP, its event stream opened by the page's script (the status line
# then says "live"), every panel drawn, the totals equal to the job's and to /metrics.
port=$(free_port)
target/debug/examples/monte_carlo_pi --points 2e6 --chunk-rows 100000 --threads 2 \
  --dashboard "127.0.0.1:$port" --dashboard-hold 60 >"$out/dash-stdout.txt" 2>"$out/dash-stderr.txt" &
dash=$!
trap 'kill "$dash" 2>/dev/null || true; rm -rf "$profile"' EXIT
wait_for "serving for" "$out/dash-stderr.txt" "$dash" "$out/dash-stderr.txt"
# Its panels come over an event stream after the load event, so the page is watched
# through the DevTools protocol until the stream has opened (scripts/live_page.py); console
# errors and exceptions fail it.
if python3 scripts/live_page.py "file://$PWD/$out/throws.html" "document.readyState === 'complete'" \
  /dev/null /dev/null "${flags[@]}" 2>/dev/null; then
  echo "browser-test: live_page.py does not see a thrown error" >&2
  exit 1
fi
python3 scripts/live_page.py "http://127.0.0.1:$port/" \
  "document.getElementById('status').textContent === 'live'" \
  "$out/dash-dom.html" target/dashboard.png "${flags[@]}" --window-size=1280,1800
python3 - "$out" "$port" <<'PY'
import re, sys, urllib.request
sys.path.insert(0, "scripts")
from page_checks import live_page_problems, report
out, port = sys.argv[1], sys.argv[2]
dom = open(f"{out}/dash-dom.html", encoding="utf-8").read()
problems = live_page_problems(
    dom, ["running", "memory-now", "workers", "totals", "task-stream", "progress", "memory",
          "time-per-op", "occupancy", "job-stats", "plan"], "target/dashboard.png")
chunks = int(re.search(r"^chunks:\s+(\d+)", open(f"{out}/dash-stdout.txt").read(), re.M).group(1))
shown = re.search(r'data-metric="tasks_run_total">(\d+)<', dom)
metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
scraped = re.search(r"^tessera_tasks_run_total (\d+)$", metrics, re.M)
for name, got in [("page", shown), ("/metrics", scraped)]:
    if not got or int(got.group(1)) != chunks:
        problems.append(f"{name} shows {got and got.group(1)} chunk tasks, the job ran {chunks}")
report("dashboard", problems, f"dashboard live, every panel drawn, {chunks} chunk tasks on "
       "the page and in /metrics; screenshot target/dashboard.png")
PY
kill "$dash" 2>/dev/null || true

# The scheduler's dashboard: a scheduler serving it and one worker registered with it;
# the page live, its panels drawn, the worker listed (as in /metrics).
sport=$(free_port)
dport=$(free_port)
target/debug/tessera-scheduler --listen "127.0.0.1:$sport" --dashboard "127.0.0.1:$dport" \
  >"$out/sched-stdout.txt" 2>"$out/sched-stderr.txt" &
sched=$!
trap 'kill "$sched" "${worker:-}" 2>/dev/null || true; rm -rf "$profile"' EXIT
wait_for "dashboard on" "$out/sched-stdout.txt" "$sched" "$out/sched-stderr.txt"
target/debug/tessera-worker --scheduler "127.0.0.1:$sport" --nthreads 1 \
  >"$out/worker-stdout.txt" 2>"$out/worker-stderr.txt" &
worker=$!
python3 - "$dport" <<'PY'
import sys, time, urllib.request
for _ in range(120):
    text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=30).read().decode()
    if "\ntessera_workers 1\n" in text:
        sys.exit(0)
    time.sleep(0.5)
sys.exit("browser-test: the worker did not register with the scheduler")
PY
python3 scripts/live_page.py "http://127.0.0.1:$dport/" \
  "document.getElementById('status').textContent === 'live'" \
  "$out/sched-dom.html" target/scheduler-dashboard.png "${flags[@]}" --window-size=1280,1200
python3 - "$out" <<'PY'
import re, sys
sys.path.insert(0, "scripts")
from page_checks import live_page_problems, report
dom = open(f"{sys.argv[1]}/sched-dom.html", encoding="utf-8").read()
problems = live_page_problems(
    dom, ["running", "memory-now", "workers", "totals"], "target/scheduler-dashboard.png")
workers = re.search(r'<section id="workers">(.*?)</section>', dom, re.S)
rows = workers.group(1).count("<tr><td>") if workers else 0
if rows != 1:
    problems.append(f"the workers panel lists {rows} workers, not 1")
report("scheduler dashboard", problems, "the scheduler's dashboard live, its panels drawn, "
       "its worker listed; screenshot target/scheduler-dashboard.png")
PY
kill "$sched" "$worker" 2>/dev/null || true

echo "browser-test: passed in $(($(date +%s) - started)) s"
