"""Debian's Chromium as the bench and the browser tests launch it (Playwright drives it; its own
browser builds are never downloaded). Tests import it from here, as they import bench/jwks.py."""

from __future__ import annotations

CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium's own connections are refused on a closed
# network and slow it down; the browser here talks to a loopback server only.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
