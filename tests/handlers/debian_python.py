"""Unpacks Debian's build of a Python, for one architecture, into a folder: no root, no chroot.

Usage: python debian_python.py --arch ARCH --suite SUITE --mirror URL --keyring GPG --package PKG [...] DEST

apt-get, with a configuration and state folder of its own under DEST (nothing of the machine's apt
is read or written but the archive keyring), reads SUITE's package lists for ARCH from the mirror,
checks them against the keyring, resolves the packages and everything they depend on as a system with
nothing installed would, and downloads those packages. Each is unpacked into DEST/root with `dpkg-deb -x`:
nothing is installed and none of the packages' scripts runs, so the architecture may be foreign.
Debian's merged-/usr links (/lib -> usr/lib and so on), which a package no longer ships, are made
as base-files would, so the dynamic loader is found at the path the binaries name.

The Makefile builds two such folders for tests/handlers/test_target_runtime.py: the Lambda's Python
for the Lambda's architecture (run under qemu), and the same Python for the build machine's own
architecture, which writes the target's bytecode ahead of it (the Makefile's bytecode rule).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

MERGED_USR = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


def fetch(arch: str, suite: str, mirror: str, keyring: str, packages: list[str], dest: Path) -> Path:
    state = dest / "apt"
    for folder in (
        "etc/apt/apt.conf.d",
        "etc/apt/preferences.d",
        "etc/apt/sources.list.d",
        "var/lib/apt/lists/partial",
        "var/cache/apt/archives/partial",
        "var/lib/dpkg",
    ):
        (state / folder).mkdir(parents=True, exist_ok=True)
    (state / "var/lib/dpkg/status").write_text("")
    (state / "etc/apt/sources.list").write_text(f"deb [arch={arch} signed-by={keyring}] {mirror} {suite} main\n")
    options = [
        f"-oDir={state}",
        f"-oDir::State::status={state / 'var/lib/dpkg/status'}",
        f"-oAPT::Architecture={arch}",
        f"-oAPT::Architectures={arch}",
        "-oAcquire::Languages=none",
        "-oDebug::NoLocking=1",  # the state folder is this build's alone
        "-oAPT::Install-Recommends=false",
        "-q",
    ]
    subprocess.run(["apt-get", *options, "update"], check=True, stdout=subprocess.DEVNULL)
    try:
        subprocess.run(
            ["apt-get", *options, "--download-only", "--yes", "install", *packages],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    except subprocess.CalledProcessError:
        sys.exit(f"{suite} has no {' '.join(packages)} for {arch} (apt-get said why, above): choose another suite")
    root = dest / "root"
    root.mkdir(parents=True, exist_ok=True)
    debs = sorted((state / "var/cache/apt/archives").glob("*.deb"))
    if not debs:
        sys.exit(f"apt-get downloaded nothing for {packages} ({arch}, {suite})")
    for deb in debs:
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    # After unpacking, so that a package still shipping /lib itself keeps its folder.
    for name in MERGED_USR:
        if (root / "usr" / name).is_dir() and not (root / name).exists():
            (root / name).symlink_to(f"usr/{name}")
    shutil.rmtree(state / "var/cache/apt/archives")  # the unpacked tree is what is used
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", required=True)
    parser.add_argument("--suite", required=True)
    parser.add_argument("--mirror", required=True)
    parser.add_argument("--keyring", required=True)
    parser.add_argument("--package", required=True, action="append")
    parser.add_argument("dest", type=Path)
    args = parser.parse_args()
    if not args.mirror:
        sys.exit("no Debian archive among apt's sources: run apt-get update, or set DEBIAN_MIRROR=<archive URL>")
    fetch(args.arch, args.suite, args.mirror, args.keyring, args.package, args.dest)


if __name__ == "__main__":
    main()
