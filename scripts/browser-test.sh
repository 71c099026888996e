#!/usr/bin/env bash
# The HTML performance report in a real browser (issue 16): runs a real job with
# `--report` and `--trace`, opens the report in headless Chromium and checks that no
# JavaScript error reached the console, that every panel was drawn, and that the numbers
# on the page equal the job's statistics (as the example printed them, and as the trace
# counts its tasks). Keeps a screenshot, target/report.png, as the CI artifact.
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
echo "browser-test: passed in $(($(date +%s) - started)) s"
