"""Debian packages the gate needs, installed when missing and running as root."""

import os
import shutil
import subprocess

from .common import GateError, say

# What each is for: tree, guest, kernel build, selftests build, build cache.
PACKAGES = [
    "linux-source-6.12",
    "qemu-system-x86",
    "flex", "bison", "bc", "libelf-dev", "libssl-dev", "cpio", "python3", "git", "make", "gcc",
    "libcap-dev", "libnuma-dev", "rsync",
    "ccache",
]


def missing(packages=PACKAGES):
    out = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${db:Status-Status}\n", *packages],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    installed = {line.split()[0] for line in out.splitlines() if line.endswith(" installed")}
    return [p for p in packages if p not in installed]


def apt_install(packages):
    if os.geteuid() != 0:
        raise GateError(f"missing packages {' '.join(packages)}: install them as root "
                        f"(apt-get install {' '.join(packages)})")
    say(f"deps: installing {' '.join(packages)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        # A new machine's package lists may be empty or stale: update once, retry.
        subprocess.run(["apt-get", "update", "-q"], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else str(r.returncode)
        raise GateError(f"apt-get install failed: {last}")


def ensure(install=True):
    """Install what is missing (root), or fail naming it."""
    need = missing()
    if need:
        if not install:
            raise GateError(f"missing packages {' '.join(need)} (run as root without --no-install)")
        apt_install(need)


def require_qemu():
    if not shutil.which("qemu-system-x86_64"):
        raise GateError("qemu-system-x86_64 not found: install package qemu-system-x86")
