"""Opens a live page in headless Chromium through the DevTools protocol (over
--remote-debugging-pipe, no extra package) and waits until a script condition holds, as a
person watching it would. Used by browser-test.sh for the dashboard, whose panels arrive
over an event stream after the page's load event.

usage: live_page.py URL CONDITION DOM_OUT PNG_OUT [chromium flags...]
Writes the DOM once CONDITION (a JavaScript expression) is true and a screenshot; prints
every console error and uncaught exception and exits 1 on any, or on a timeout.
"""
import base64, json, os, subprocess, sys, time

url, condition, dom_out, png_out, *flags = sys.argv[1:]
to_chrome_r, to_chrome_w = os.pipe()
from_chrome_r, from_chrome_w = os.pipe()

def child_fds():
    os.dup2(to_chrome_r, 3)
    os.dup2(from_chrome_w, 4)

proc = subprocess.Popen(["chromium", *flags, "--remote-debugging-pipe", "about:blank"],
                        pass_fds=(3, 4), preexec_fn=child_fds,
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
os.close(to_chrome_r)
os.close(from_chrome_w)
reader = os.fdopen(from_chrome_r, "rb")
buffer, next_id, problems = b"", 0, []

def receive():
    global buffer
    while b"\0" not in buffer:
        more = reader.read1(65536)
        if not more:
            raise SystemExit("live_page: chromium closed the pipe")
        buffer += more
    message, buffer = buffer.split(b"\0", 1)
    return json.loads(message)

def note(event):
    method, params = event.get("method"), event.get("params", {})
    if method == "Runtime.exceptionThrown":
        problems.append(f"exception: {params['exceptionDetails'].get('text')}")
    elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
        problems.append(f"console.{params['type']}: {params.get('args')}")
    elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
        problems.append(f"log: {params['entry'].get('text')}")

def call(method, session=None, **params):
    global next_id
    next_id += 1
    message = {"id": next_id, "method": method, "params": params}
    if session:
        message["sessionId"] = session
    os.write(to_chrome_w, json.dumps(message).encode() + b"\0")
    while True:
        reply = receive()
        if reply.get("id") == next_id:
            if "error" in reply:
                raise SystemExit(f"live_page: {method}: {reply['error']}")
            return reply["result"]
        note(reply)

try:
    targets = call("Target.getTargets")["targetInfos"]
    page = next(t["targetId"] for t in targets if t["type"] == "page")
    session = call("Target.attachToTarget", targetId=page, flatten=True)["sessionId"]
    for domain in ("Runtime", "Log", "Page"):
        call(f"{domain}.enable", session)
    call("Page.navigate", session, url=url)
    deadline = time.time() + 60
    while True:
        held = call("Runtime.evaluate", session, expression=f"Boolean({condition})",
                    returnByValue=True)["result"].get("value")
        if held:
            break
        if time.time() > deadline:
            problems.append(f"timed out waiting for: {condition}")
            break
        time.sleep(0.2)
    dom = call("Runtime.evaluate", session, expression="document.documentElement.outerHTML",
               returnByValue=True)["result"]["value"]
    open(dom_out, "w", encoding="utf-8").write(dom)
    shot = call("Page.captureScreenshot", session, format="png")["data"]
    open(png_out, "wb").write(base64.b64decode(shot))
    call("Browser.close")
finally:
    proc.kill()
for p in problems:
    print(f"live_page: {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
