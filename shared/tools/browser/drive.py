"""The browser site driven as a student uses it: served, opened, an exercise shown, checked.

tests/test_browser.py proves the tab with these steps, and the benchmark
(shared/tools/bench/browsertab.py) times them.  The site is served from a loopback address
only, by a server that prints nothing and counts what it sends; the page is opened in
Debian's headless Chromium (shared/tools/show/browser.py) at a projector's 1280x720.

Times are taken by the page's own clock, ``performance.now()``, so that they do not
include the driver's polling: the moment Python is ready (``body[data-ready]``) is noted
by a script Chromium runs in every new document before the page's own, and a check is
timed from the click on Check to the moment ``#output`` says it is done.  The page
itself (site/app.js) knows nothing of this.
"""

from __future__ import annotations

import functools
import http.server
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from shared.tools.show import browser

if TYPE_CHECKING:  # selenium is imported only when a browser is wanted
    from selenium.webdriver.chrome.webdriver import WebDriver

#: Seconds for Pyodide's first start on a busy machine, under the 120 s limit of a test.
LOAD_S = 90
#: Seconds for a check: the page's own limit (90 s) and the time to say it stopped one.
CHECK_S = 120
READY = "return document.body.dataset.ready === '1'"

# Run by Chromium in every new document before the page's scripts: the page's clock when
# body[data-ready] first says '1'.  performance.now() counts from the navigation's start,
# so that is the time from asking for the page to a Python that can check.
NOTE_READY = """
document.addEventListener('DOMContentLoaded', () => {
  const note = () => {
    if (document.body.dataset.ready === '1' && window.__readyMs === undefined) {
      window.__readyMs = performance.now();
    }
  };
  new MutationObserver(note).observe(document.body, {attributeFilter: ['data-ready']});
  note();
});
"""

# Before the click on Check: note the click's moment (capture: before the page's own
# listener runs) and the moment #output's data-state turns 'done' after it.
TIME_CHECK = """
const output = document.getElementById('output');
output.dataset.state = '';
window.__checkMs = undefined;
let began;
document.getElementById('check').addEventListener(
  'click', () => { began = performance.now(); }, {capture: true, once: true});
const seen = new MutationObserver(() => {
  if (output.dataset.state === 'done' && began !== undefined) {
    window.__checkMs = performance.now() - began;
    seen.disconnect();
  }
});
seen.observe(output, {attributeFilter: ['data-state']});
"""


class CountingHandler(http.server.SimpleHTTPRequestHandler):
    """A static file server that writes no line per request and counts the bytes it sends."""

    def log_message(self, format: str, *args: Any) -> None:
        """Say nothing: a page load is some thirty requests."""

    def copyfile(self, source: BinaryIO, outputfile: BinaryIO) -> None:  # type: ignore[override]
        """Send a file's body, as the base class does, counting its bytes."""
        sent = 0
        while chunk := source.read(64 * 1024):
            outputfile.write(chunk)
            sent += len(chunk)
        assert isinstance(self.server, LoopbackServer)
        self.server.counted(sent)


class LoopbackServer(http.server.ThreadingHTTPServer):
    """A folder served on 127.0.0.1 at a free port, counting the files and bytes it sent.

    Only the bodies are counted: a 304 (the browser's copy is still good) sends none.
    """

    def __init__(self, folder: Path) -> None:
        """Bind to 127.0.0.1 (never another address) at a port the system picks."""
        handler = functools.partial(CountingHandler, directory=str(folder))
        super().__init__(("127.0.0.1", 0), handler)
        self.files_sent = 0
        self.bytes_sent = 0
        self._lock = threading.Lock()  # one thread per request
        self._running = False

    @property
    def url(self) -> str:
        """The site's address, ending in a slash."""
        return f"http://127.0.0.1:{self.server_address[1]}/"

    def counted(self, sent: int) -> None:
        """Add one file's body to the counts."""
        with self._lock:
            self.files_sent += 1
            self.bytes_sent += sent

    def start(self) -> None:
        """Serve from a daemon thread, so that a test's own thread drives the browser."""
        self._running = True
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """Stop serving and close the socket; stopping twice does nothing."""
        if self._running:
            self._running = False
            self.shutdown()
            self.server_close()


@contextmanager
def served(folder: Path) -> Iterator[LoopbackServer]:
    """The folder served on a loopback address, stopped afterwards (if not before)."""
    server = LoopbackServer(folder)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def chromium() -> Iterator[WebDriver]:
    """A headless Chromium at 1280x720 with a fresh profile, noting when each page is ready."""
    with browser.headless_chromium(*browser.PROJECTOR) as driver:
        source = {"source": NOTE_READY}
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", source)
        yield driver


@contextmanager
def opened(folder: Path) -> Iterator[tuple[WebDriver, LoopbackServer]]:
    """The site served and open in a headless Chromium, its Python ready; and the server."""
    with served(folder) as server, chromium() as driver:
        load(driver, server.url + "#")
        yield driver, server


def wait(driver: WebDriver, script: str, seconds: float = 60) -> Any:
    """Wait until the script returns something true; that value.

    Raises TimeoutError, naming the script, when it is still false after ``seconds``.
    """
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if value := driver.execute_script(script):
            return value
        time.sleep(0.1)
    raise TimeoutError(f"after {seconds} s the page still fails: {script}")


def ready_s(driver: WebDriver) -> float:
    """Wait for the page's Python; the seconds from the navigation to it (the page's clock)."""
    wait(driver, READY, LOAD_S)
    return float(wait(driver, "return window.__readyMs", 5)) / 1000


def load(driver: WebDriver, url: str) -> float:
    """Open the page at ``url`` and wait for its Python; the seconds that took."""
    driver.get(url)
    return ready_s(driver)


def reload(driver: WebDriver) -> float:
    """Reload the page and wait for its Python; the seconds that took."""
    driver.refresh()
    return ready_s(driver)


def show(driver: WebDriver, name: str) -> None:
    """Open an exercise's view and wait for its editors."""
    driver.execute_script("location.hash = '#'; location.hash = '#' + arguments[0]", name)
    wait(driver, f"return document.querySelector('textarea[data-path]') && '{name}'")


@dataclass(frozen=True)
class Checked:
    """What a press of Check gave: #output's text, its kind, and how long it took."""

    output: str
    #: "result" for a check's report; "error" when the page had to say it could not check.
    kind: str
    seconds: float


def check(driver: WebDriver, files: dict[str, str] | None = None) -> Checked:
    """Put the files (if any) in the shown exercise's editors, press Check, and wait for it.

    Without files the editors keep what they hold: on a fresh profile, the fresh files.
    """
    if files:
        driver.execute_script(
            """for (const [path, text] of Object.entries(arguments[0])) {
                 const area = document.querySelector(`textarea[data-path="${path}"]`);
                 area.value = text;
                 area.dispatchEvent(new Event('input', {bubbles: true}));
               }""",
            files,
        )
    driver.execute_script(TIME_CHECK)
    driver.find_element("id", "check").click()
    wait(driver, "return document.getElementById('output').dataset.state === 'done'", CHECK_S)
    output = str(driver.execute_script("return document.getElementById('output').textContent"))
    kind = str(driver.execute_script("return document.getElementById('output').className"))
    milliseconds = float(wait(driver, "return window.__checkMs", 5))
    return Checked(output, kind.removeprefix("kind-"), milliseconds / 1000)


def version(driver: WebDriver) -> str:
    """The browser's version, as its driver reports it: "156.0.8078.129"."""
    return str(driver.capabilities.get("browserVersion", "?"))
