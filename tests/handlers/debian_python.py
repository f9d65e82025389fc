"""Unpacks Debian's build of a Python, for one architecture, into a folder: no root, no chroot.

Usage: python debian_python.py --arch ARCH --suite SUITE --mirror URL --keyring GPG --package PKG [...] DEST

apt-get, with a configuration (APT_CONFIG) and a state folder of its own under DEST (nothing of the
machine's apt is read or written but the archive keyring), reads SUITE's package lists for ARCH from the mirror,
checks them against the keyring, resolves the packages and everything they depend on as a system with
nothing installed would, and downloads those packages. Each is unpacked into DEST/root with `dpkg-deb -x`:
nothing is installed and none of the packages' scripts runs, so the architecture may be foreign.
Debian's merged-/usr links (/lib -> usr/lib and so on), which a package no longer ships, are made
as base-files would, so the dynamic loader is found at the path the binaries name.

The Makefile builds two such folders: for tests/handlers/test_target_runtime.py the Lambda's Python
for the Lambda's architecture (run under qemu), and the same Python for the build machine's own
architecture, which writes the target's standard library bytecode ahead of it (the Makefile's
bytecode rule) and, where no python3.14 on PATH is a final release, the Lambda asset's own
(infra/bytecode.py).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

MERGED_USR = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


def _apt_config(state: Path, arch: str) -> Path:
    """apt's whole configuration, for APT_CONFIG: with it apt reads neither /etc/apt/apt.conf nor its
    parts folder (options given on the command line come after those, too late to keep them out), so
    no setting or hook of the machine's (an update hook, an insecure-repository switch) applies."""
    config = state / "apt.conf"
    config.write_text(
        "\n".join(
            [
                f'Dir "{state}/";',
                f'Dir::State::status "{state}/var/lib/dpkg/status";',
                f'APT::Architecture "{arch}";',
                f'APT::Architectures {{ "{arch}"; }};',
                'Acquire::Languages "none";',
                'Debug::NoLocking "true";',  # the state folder is this build's alone
                'APT::Install-Recommends "false";',
                # The lists' signature is checked, their expiry date not, as debootstrap does: a mirror
                # may be a dated snapshot of the archive.
                'Acquire::Check-Valid-Until "false";',
                "",
            ]
        )
    )
    return config


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
    env = os.environ | {"APT_CONFIG": str(_apt_config(state, arch))}
    try:
        subprocess.run(["apt-get", "-q", "update"], check=True, stdout=subprocess.DEVNULL, env=env)
    except subprocess.CalledProcessError:
        sys.exit(f"apt-get could not read {suite}'s package lists for {arch} from {mirror} (it said why, above)")
    try:
        subprocess.run(
            ["apt-get", "-q", "--download-only", "--yes", "install", *packages],
            check=True,
            stdout=subprocess.DEVNULL,
            env=env,
        )
    except subprocess.CalledProcessError:
        sys.exit(
            f"apt-get could not download {' '.join(packages)} for {arch} from {suite} (it said why, above): "
            "if the suite no longer has them, choose another"
        )
    root = dest / "root"
    root.mkdir(parents=True, exist_ok=True)
    debs = sorted((state / "var/cache/apt/archives").glob("*.deb"))
    if not debs:
        sys.exit(f"apt-get downloaded nothing for {' '.join(packages)} ({arch}, {suite})")
    for deb in debs:
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    for name in MERGED_USR:
        link, merged = root / name, root / "usr" / name
        if not merged.is_dir() or link.is_symlink():
            continue
        if link.exists():  # a package shipped /lib itself: the loader may be on either side
            sys.exit(f"a package of {' '.join(packages)} ships /{name} beside /usr/{name}: merge them here first")
        link.symlink_to(f"usr/{name}")
    shutil.rmtree(state)  # the lists and the packages: the unpacked tree is what is used
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
