"""Open a local HTML file in headless Debian Chromium (selenium) and collect what a
test checks: console entries, images, every network request, a screenshot."""
from __future__ import annotations

import json
import os
import pathlib

import pytest

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"

# Chromium resolves no host and contacts nothing on its own: every name maps to
# "not found" (loopback excepted: the Rerun web viewer's test serves on 127.0.0.1),
# DNS-over-HTTPS and every background service are off. The background-networking
# flags alone still let it look up Google hosts (accounts, clients2, autofill,
# fonts) on start; test/ros/test_no_outbound.py captures what leaves the machine.
NO_NETWORK_ARGS = ("--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1",
                   "--disable-background-networking", "--disable-component-update", "--disable-sync",
                   "--disable-default-apps", "--disable-extensions", "--disable-domain-reliability",
                   "--disable-client-side-phishing-detection", "--disable-breakpad", "--no-pings",
                   "--no-default-browser-check", "--no-first-run", "--disable-quic", "--metrics-recording-only",
                   "--disable-features=DnsOverHttps,OptimizationHints,Translate,MediaRouter,"
                   "DialMediaRouteProvider,AutofillServerCommunication,CertificateTransparencyComponentUpdater,"
                   "InterestFeedContentSuggestions")

needs_chromium = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                    reason=f"{CHROMIUM} is absent (env/bootstrap.sh --test installs it)")


def _driver(profile_dir: pathlib.Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", *NO_NETWORK_ARGS,
                "--window-size=1280,2000", f"--user-data-dir={profile_dir}"):
        opts.add_argument(arg)
    # browser: console entries; performance: DevTools Network events, i.e. every request made.
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


def open_page(page: pathlib.Path, tmp_path: pathlib.Path) -> dict:
    """Load `page`; returns console entries, images (src, naturalWidth), requested URLs,
    the screenshot path and the page text."""
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    driver = _driver(profile)
    try:
        # Leave the browser's own start page first and drop what it requested.
        driver.get("about:blank")
        driver.get_log("performance")
        driver.get(page.resolve().as_uri())
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth]);")
        text = driver.execute_script("return document.body.innerText;")
        shot = tmp_path / "report_screenshot.png"
        assert driver.save_screenshot(str(shot))
        console = driver.get_log("browser")
        requests = []
        for entry in driver.get_log("performance"):
            msg = json.loads(entry["message"])["message"]
            if msg.get("method") == "Network.requestWillBeSent":
                requests.append(msg["params"]["request"]["url"])
    finally:
        driver.quit()
    return {"console": console, "images": images, "requests": requests, "screenshot": shot, "text": text}


def assert_self_contained_page(page: pathlib.Path, tmp_path: pathlib.Path, min_images: int = 1) -> dict:
    """No SEVERE console entry, every image a decoded data: URI, no request but the
    file itself and data: URIs, and a screenshot that is not one flat colour."""
    import numpy as np
    from matplotlib.image import imread

    seen = open_page(page, tmp_path)
    severe = [e for e in seen["console"] if e.get("level") == "SEVERE"]
    assert not severe, severe
    assert len(seen["images"]) >= min_images, seen["images"]
    for src, complete, width in seen["images"]:
        assert src.startswith("data:image/png;base64,"), src[:80]
        assert complete and width > 0, (src[:80], complete, width)
    assert seen["requests"], "the performance log saw no request at all (not even the page)"
    off_file = [u for u in seen["requests"] if not u.startswith(("file://", "data:"))]
    assert not off_file, off_file
    pixels = imread(seen["screenshot"])
    assert pixels.shape[0] > 100 and pixels.shape[1] > 100
    colours = np.unique(pixels.reshape(-1, pixels.shape[-1])[:, :3], axis=0)
    assert len(colours) > 16, f"screenshot has only {len(colours)} colours"
    return seen
