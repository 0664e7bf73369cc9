"""The kselftest guest: boot a built kernel under QEMU with the host's / as
a read-only 9p root, run the host-built selftests/mm install for the chosen
categories (or tools/bench's script), and collect their output and the
console. Building is kbuild's, parsing ktap's and console's."""

import os
import shlex
import shutil
import time

from . import console, ktap
from .common import REPO, StepStopped, StepTimeout, run_logged, say
from .result import Status, row

INIT = os.path.join(REPO, "tools", "guest-init")


# Kernel arguments of every boot (kselftest guest and KUnit): the serial
# console; a panic reboots, which -no-reboot turns into QEMU's exit, so a
# dead guest ends at once rather than at its bound; and under TCG the
# jiffies watchdog loses ticks and marks the TSC unstable, leaving a 4 ms
# clock (timed loops then read 0 s), while QEMU's TCG TSC follows the host
# clock, so it is trusted.
BOOT_ARGS = ["console=ttyS0", "panic=-1", "tsc=reliable"]


def machine_args(accel, tcg_cpu, extra):
    """QEMU's accelerator, CPU (the host's under KVM, tcg_cpu or QEMU's
    default under TCG), firmware (qboot when installed) and the caller's
    extra arguments, for every boot."""
    args = ["-accel", "kvm"] if accel == "kvm" else ["-accel", "tcg,thread=multi"]
    cpu = "host" if accel == "kvm" else tcg_cpu
    if cpu:
        args += ["-cpu", cpu]
    if os.path.isfile("/usr/share/qemu/qboot.rom"):
        args += ["-bios", "qboot.rom"]
    return args + shlex.split(extra or "")


# The kselftest guest's bound when none is given, per suite and
# configuration. Ours: 600 s (its six programs take about 124 s). Upstream's
# thp, mremap and cow categories: 900 s, and 1800 s on debug, where the
# unmodified tree's guest took 508 s on 2026-12-06 and 880 s on 2026-12-07
# on the same machine kind (split_huge_page_test is most of it).
GUEST_BOUNDS = {("ours", None): 600, ("upstream", None): 900, ("upstream", "debug"): 1800}


def bound(suite, config, given=None):
    """Seconds the kselftest guest may run: the bound given, else the
    suite's for that configuration."""
    if given:
        return given
    return GUEST_BOUNDS.get((suite, config), GUEST_BOUNDS[suite, None])


def bounds_text():
    """The bounds above, as --help says them."""
    said = [f"{b} s for {suite}" + (f" on {cfg}" if cfg else "")
            for (suite, cfg), b in GUEST_BOUNDS.items()]
    return "The kselftest guest's bound (--timeout) defaults to " + ", ".join(said) + ".\n"


def run_bounded(cmd, log, label, timeout, watch, heartbeat=30):
    """Run a boot with its console into log under its bound and watch;
    returns None, or why it was stopped (the guest row's reason)."""
    try:
        run_logged(cmd, log, label, timeout, heartbeat=heartbeat, watch=watch)
    except StepStopped:
        return watch.stopped(timeout)
    except StepTimeout:
        return f"guest hung: killed after {timeout} s"
    return None


def qemu_command(kernel, tree, build, out, accel, smp, mem, extra, kunit_args=None):
    """The guest's QEMU command; KUnit stays off at boot unless kunit_args
    (the KUnit boot's own arguments) are given."""
    append = " ".join(BOOT_ARGS + [
        "root=hostroot", "rootfstype=9p",
        "rootflags=trans=virtio,version=9p2000.L,msize=512000", "ro", f"init={INIT}",
        # An Oops panics too: the guest ends at once instead of hanging on
        # a lock the dead task held.
        "oops=panic", "printk.time=1",
    ] + (list(kunit_args) if kunit_args is not None else ["kunit.enable=0"]))
    cmd = ["qemu-system-x86_64", "-nodefaults", "-nographic", "-no-reboot",
           "-m", mem, "-smp", str(smp), "-serial", "stdio", "-kernel", kernel, "-append", append,
           "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
           "-virtfs", f"local,path={out},mount_tag=out,security_model=none,multidevs=remap",
           "-virtfs", f"local,path={build},mount_tag=build,security_model=none,multidevs=remap"]
    # A boot that runs KUnit keeps the KUnit boot's CPU (QEMU's default under
    # TCG: 4-level paging, which the accounting cases count tables for).
    return cmd + machine_args(accel, "max" if kunit_args is None else None, extra)


def _boot(tree, build, kernel, run_dir, env, what, *, accel, smp, timeout, extra_qemu, mem,
          files=None, kunit_args=None):
    """One guest boot with guest.env (and files) in a fresh out share.
    Returns (out dir, console text, seconds, hung message or None)."""
    out = os.path.join(run_dir, "out")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    with open(os.path.join(out, "guest.env"), "w") as f:
        f.write(f"GATE_TREE='{tree}'\nGATE_BUILD='{build}'\n")
        for k, v in env.items():
            f.write(f"{k}='{v}'\n")
    for name, text in (files or {}).items():
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
    console_log = os.path.join(run_dir, "guest-console.log")
    cmd = qemu_command(kernel, tree, build, out, accel, smp, mem, extra_qemu, kunit_args)
    say(f"guest: booting ({accel}, -smp {smp}, bound {timeout} s) for {what}; console {console_log}")
    t0 = time.monotonic()
    # A guest that printed a fatal report and then went quiet, or whose
    # heartbeat stopped, is stopped early rather than at its bound (its
    # results so far are kept).
    watch = console.GuestWatch(progress=[os.path.join(out, n) for n in
                                         ("kselftest.log", "run.log", "status")],
                               heartbeat=os.path.join(out, "heartbeat"))
    hung = run_bounded(cmd, console_log, "guest", timeout, watch)
    with open(console_log, errors="replace") as f:
        console_text = f.read()
    return out, console_text, round(time.monotonic() - t0), hung


def run_script(tree, build, kernel, run_dir, script, *, accel, smp, timeout, mem, thp="always",
               extra_qemu="", kunit_args=None):
    """Boot and run a bash script (tools/bench; tools/flake --one-boot, with
    kunit_args). Returns (exit status or None, its output, console text,
    seconds, hung message or None)."""
    env = {"GATE_RUN": "run.sh", "GATE_THP": thp, "GATE_ITEMS": "", "GATE_TIMEOUT": str(timeout)}
    out, console_text, secs, hung = _boot(tree, build, kernel, run_dir, env, "a script",
                                          accel=accel, smp=smp, timeout=timeout,
                                          extra_qemu=extra_qemu, mem=mem,
                                          files={"run.sh": script}, kunit_args=kunit_args)
    status = read(os.path.join(out, "status"))
    return (int(status) if status and status.strip().isdigit() else None,
            read(os.path.join(out, "run.log")) or "", console_text, secs, hung)


def boot(tree, build, kernel, run_dir, items, *, accel, smp, timeout, extra_qemu="", mem="2G",
         thp="always"):
    """Boot and run; returns (kselftest rows, console text, facts)."""
    env = {"GATE_ITEMS": items, "GATE_TIMEOUT": max(60, timeout - 30), "GATE_THP": thp}
    out, console_text, secs, hung = _boot(tree, build, kernel, run_dir, env, f"'{items}'",
                                          accel=accel, smp=smp, timeout=timeout,
                                          extra_qemu=extra_qemu, mem=mem)
    facts = {"guest_s": secs}
    thp = read(os.path.join(out, "thp"))
    if thp:
        facts["thp"] = thp.strip()
    status = read(os.path.join(out, "status"))
    log = read(os.path.join(out, "kselftest.log"))
    rows = ktap.kselftest_rows(log or "")
    if hung:
        rows.append(row("(guest)", "guest finished", "fail", hung))
    elif status is None:
        rows.append(row("(guest)", "guest finished", "fail",
                     "the guest stopped before the selftests finished (see the console)"))
    elif status.strip() != "0" and not any(r.status == Status.FAIL for r in rows):
        rows.append(row("(guest)", "make run_tests", "fail", f"exited {status.strip()}"))
    return rows, console_text, facts


def read(path):
    """A file the guest wrote (or any), or None when it is not there."""
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None
