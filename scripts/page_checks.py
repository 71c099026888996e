"""What scripts/browser-test.sh checks of a live dashboard page, shared by the session's
dashboard and the scheduler's (standard library only)."""
import re
import sys


def live_page_problems(dom, panels, png):
    """Problems of a page's DOM (as scripts/live_page.py saved it) and its screenshot: its
    event stream not open, a panel of `panels` missing, the screenshot not drawn."""
    problems = []
    status = re.search(r'<p id="status">([^<]*)</p>', dom)
    if not status or status.group(1) != "live":
        problems.append(
            f"the page's event stream did not open (status: {status and status.group(1)})")
    for panel in panels:
        if f'<section id="{panel}">' not in dom:
            problems.append(f"panel {panel} missing")
    shot = open(png, "rb").read()
    if not shot.startswith(b"\x89PNG") or len(shot) < 10_000:
        problems.append(f"{png} is not a drawn page ({len(shot)} bytes)")
    return problems


def report(what, problems, passed):
    """Fails the check of `what` with its problems, or prints `passed`."""
    if problems:
        print(f"browser-test: {what} FAILED", *problems, sep="\n  ", file=sys.stderr)
        sys.exit(1)
    print(f"browser-test: {passed}")
