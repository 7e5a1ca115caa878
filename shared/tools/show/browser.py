"""A headless Chromium driven by Selenium: the screenshot of the page, and its tests.

Debian's packages are used as they are (``apt-get install chromium chromium-driver``):
the browser and its driver are named explicitly, so Selenium never looks for (or
downloads) a driver of its own, and the flags below keep Chromium from reaching for
the network on its own account (updates, sync, field trials).  Each run gets a fresh
profile in a temporary folder, deleted afterwards.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # selenium is imported only when a browser is wanted
    from selenium.webdriver.chrome.webdriver import WebDriver

FLAGS = [
    "--headless",
    "--no-sandbox",  # as root, in a container: Chromium's sandbox needs privileges
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--hide-scrollbars",  # a screenshot of the page, not of the window's furniture
]


def programs() -> tuple[str | None, str | None]:
    """The Chromium and chromedriver programs on PATH, or None for each one missing."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    return chromium, shutil.which("chromedriver")


def missing() -> str | None:
    """Say what is missing to drive a browser here, or None if nothing is."""
    chromium, driver = programs()
    if chromium is None or driver is None:
        return "no chromium or chromedriver on PATH (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (it is in the test dependency group)"
    return None


@contextmanager
def headless_chromium(width: int = 1400, height: int = 1000) -> Iterator[WebDriver]:
    """A headless Chromium with a fresh profile, closed (and its profile deleted) after."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver_path = programs()
    if chromium is None or driver_path is None:
        raise RuntimeError(missing())
    with tempfile.TemporaryDirectory(prefix="crawler500-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for flag in [*FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"]:
            options.add_argument(flag)
        # The DevTools log of network events: how a test proves the page asked for nothing.
        options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
        driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
        try:
            yield driver
        finally:
            driver.quit()


#: The screen a projector shows, as a class sees the page in large type.
PROJECTOR = (1280, 720)


def screenshot(
    page: Path, picture: Path, step: int, big: bool = False, lang: str | None = None
) -> None:
    """Open the page at a step (1-based, in all crawls' time order) and save it as a PNG.

    The whole page, as wide as a 1280x720 projector's screen; or with ``big``, laid out
    for that screen (``#big``), as the projector shows it: the screen, not what is below
    it.  With ``lang``,
    the page in that language (``#lang=``), else in the one it opens in.
    """
    from selenium.webdriver.support.ui import WebDriverWait

    picture.parent.mkdir(parents=True, exist_ok=True)
    width, height = PROJECTOR
    with headless_chromium(width, height) as driver:
        fragment = "&".join([*(["big"] if big else []), *([f"lang={lang}"] if lang else [])])
        driver.get(f"{page.resolve().as_uri()}#{fragment + '&' if fragment else ''}step={step}")
        WebDriverWait(driver, 10).until(
            lambda d: d.execute_script("return document.body.dataset.ready")
        )
        # The whole page, not the window: a viewport as tall as the content.  (The window
        # is the size asked for inside, its bars aside: the viewport is set either way.)
        inside = height
        if not big:
            inside = int(driver.execute_script("return document.documentElement.scrollHeight"))
        metrics = {"width": width, "height": inside, "deviceScaleFactor": 1, "mobile": False}
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
        driver.save_screenshot(str(picture))
