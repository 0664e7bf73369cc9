"""Debian packages the gate needs, installed when missing and running as root."""

import os
import shutil
import subprocess

from .common import GateError, say

# What each is for: guest, kernel build, selftests build, build cache (the
# tree's own package comes with --tree: install_tree_package).
PACKAGES = [
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


def _apt(*args):
    """Run apt-get, never asking anything; its output as one text."""
    return subprocess.run(["apt-get", *args], env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _last_line(r):
    return r.stdout.strip().splitlines()[-1] if r.stdout.strip() else str(r.returncode)


def apt_install(packages):
    if os.geteuid() != 0:
        raise GateError(f"missing packages {' '.join(packages)}: install them as root "
                        f"(apt-get install {' '.join(packages)})")
    say(f"deps: installing {' '.join(packages)}")
    cmd = ["install", "-y", "-q", "--no-install-recommends", *packages]
    r = _apt(*cmd)
    if r.returncode != 0:
        # A new machine's package lists may be empty or stale: update once, retry.
        _apt("update", "-q")
        r = _apt(*cmd)
    if r.returncode != 0:
        raise GateError(f"apt-get install failed: {_last_line(r)}")


APT_LISTS = "/etc/apt/sources.list.d"
APT_PINS = "/etc/apt/preferences.d"
MIRROR = "http://deb.debian.org/debian"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


def add_suite(suite):
    """Add a Debian suite to apt, pinned at 100 so nothing on the machine is
    upgraded from it: only what is asked for by name comes from there."""
    name = f"pmd-gate-{suite}"
    lst = os.path.join(APT_LISTS, f"{name}.list")
    pin = os.path.join(APT_PINS, name)
    want_list = (f"# pmd-ptlock gate: a kernel source package from {suite}; pinned low by\n"
                 f"# {pin} so nothing else is upgraded from it.\n"
                 f"deb [signed-by={KEYRING}] {MIRROR} {suite} main\n")
    want_pin = f"Package: *\nPin: release n={suite}\nPin-Priority: 100\n"
    changed = False
    for path, text in ((lst, want_list), (pin, want_pin)):
        old = open(path).read() if os.path.isfile(path) else None
        if old != text:
            with open(path, "w") as f:
                f.write(text)
            changed = True
    return changed


def install_tree_package(package, suite):
    """Install a kernel source package, from suite (added and pinned low)
    when given; refuses when apt would install or upgrade anything else."""
    if os.geteuid() != 0:
        raise GateError(f"missing package {package}: install it as root")
    if suite:
        fresh = add_suite(suite)
        if fresh or not _candidate(package):
            say(f"deps: apt-get update (for {suite})")
            _apt("update", "-q")
        sim = _apt("-s", "install", "--no-install-recommends", package)
        inst = [line.split()[1] for line in sim.stdout.splitlines() if line.startswith("Inst ")]
        if sim.returncode != 0 or inst != [package]:
            raise GateError(f"apt would not install {package} alone from {suite} "
                            f"({', '.join(inst) or _last_line(sim)}): nothing installed")
    apt_install([package])


def _candidate(package):
    out = subprocess.run(["apt-cache", "policy", package], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    for line in out.splitlines():
        if line.strip().startswith("Candidate:"):
            return line.split(":", 1)[1].strip() not in ("", "(none)")
    return False


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
