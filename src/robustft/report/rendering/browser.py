"""Load a report page in a real headless browser (Debian's `chromium`), take a screenshot and collect every
console error, script error and unrendered image.

Chromium logs every console message at one level, so errors are found two ways: "Uncaught" lines of the
console log (--enable-logging=stderr), and the page's own record (assets/guard.js catches script and
resource errors and console.error; page.js checks every image once loaded) read back from the DOM
after load (--dump-dom). The DOM dump also returns what the page's scripts did (e.g. how many examples a
filter shows, and the links to the next example page carrying that filter on)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
    "--virtual-time-budget=5000",
]
INSTALL_HINT = "apt-get install -y chromium"
CONSOLE_LINE = re.compile(r":CONSOLE[^\]]*\] (.*)")


@dataclass
class BrowserCheck:
    errors: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    attributes: dict[str, str] = field(default_factory=dict)  # data-* attributes of <body> after load
    screenshot: Path | None = None
    dom: str = ""  # the page as its scripts left it (e.g. the links they rewrote)


def find_browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _run(browser: str, args: list[str], url: str, timeout: float) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="robustft-chromium-") as profile:
        return subprocess.run(
            [browser, *FLAGS, f"--user-data-dir={profile}", *args, url],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def check_page(
    page: Path,
    screenshot: Path | None = None,
    fragment: str = "",
    width: int = 1400,
    height: int = 1800,
    timeout: float = 120.0,
) -> BrowserCheck:
    """Load `page` (file:// URL, with an optional #fragment), screenshot it, and return what went wrong."""
    browser = find_browser()
    if browser is None:
        raise FileNotFoundError(f"no chromium found; install it with: {INSTALL_HINT}")
    url = Path(page).resolve().as_uri() + (f"#{fragment}" if fragment else "")
    result = BrowserCheck()
    dom = _run(browser, ["--dump-dom"], url, timeout)
    logs, result.dom = dom.stderr, dom.stdout
    if dom.returncode != 0:
        result.errors.append(f"chromium exited {dom.returncode} on --dump-dom")
    body = re.search(r"<body([^>]*)>", dom.stdout)
    if body:
        result.attributes = dict(re.findall(r'data-([\w-]+)="([^"]*)"', body.group(1)))
    box = re.search(r'<pre id="page-errors">(.*?)</pre>', dom.stdout, re.S)
    if body is None or result.attributes.get("ready") != "1":
        result.errors.append("the page's scripts did not finish (body data-ready is not 1)")
    if box and box.group(1).strip():
        result.errors += [line for line in box.group(1).strip().splitlines() if line]
    if screenshot is not None:
        shot = _run(
            browser,
            [f"--screenshot={Path(screenshot).resolve()}", f"--window-size={width},{height}", "--hide-scrollbars"],
            url,
            timeout,
        )
        logs += shot.stderr
        if shot.returncode != 0 or not Path(screenshot).is_file():
            result.errors.append(f"no screenshot (chromium exited {shot.returncode})")
        else:
            result.screenshot = Path(screenshot)
    result.console = [m.group(1) for m in CONSOLE_LINE.finditer(logs)]
    result.errors += [f"console: {line}" for line in result.console if "Uncaught" in line or "Error" in line]
    return result
