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


def accel_args(accel):
    """QEMU's accelerator flags, for every guest (kselftest and KUnit)."""
    return ["-accel", "kvm"] if accel == "kvm" else ["-accel", "tcg,thread=multi"]


def qemu_command(kernel, tree, build, out, accel, smp, mem, extra):
    append = " ".join([
        "console=ttyS0", "root=hostroot", "rootfstype=9p",
        "rootflags=trans=virtio,version=9p2000.L,msize=512000", "ro", f"init={INIT}",
        # An Oops ends the guest at once (panic=-1 reboots, -no-reboot exits)
        # instead of leaving it to hang on a lock the dead task held.
        "oops=panic", "panic=-1", "kunit.enable=0", "printk.time=1",
        # Under TCG the jiffies watchdog loses ticks and marks the TSC
        # unstable, leaving a 4 ms clock (timed loops then read 0 s); QEMU's
        # TCG TSC follows the host clock, so trust it.
        "tsc=reliable",
    ])
    cmd = ["qemu-system-x86_64", "-nodefaults", "-nographic", "-no-reboot",
           "-m", mem, "-smp", str(smp), "-serial", "stdio", "-kernel", kernel, "-append", append,
           "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
           "-virtfs", f"local,path={out},mount_tag=out,security_model=none,multidevs=remap",
           "-virtfs", f"local,path={build},mount_tag=build,security_model=none,multidevs=remap"]
    cmd += accel_args(accel) + ["-cpu", "host" if accel == "kvm" else "max"]
    if os.path.isfile("/usr/share/qemu/qboot.rom"):
        cmd += ["-bios", "qboot.rom"]
    return cmd + shlex.split(extra or "")


def _boot(tree, build, kernel, run_dir, env, what, *, accel, smp, timeout, extra_qemu, mem,
          files=None):
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
    cmd = qemu_command(kernel, tree, build, out, accel, smp, mem, extra_qemu)
    say(f"guest: booting ({accel}, -smp {smp}, bound {timeout} s) for {what}; console {console_log}")
    t0 = time.monotonic()
    hung = None
    # A guest that printed a fatal report and then went quiet is stopped
    # early rather than at its bound (its results so far are kept).
    watch = console.QuietAfterFatal(progress=[os.path.join(out, n) for n in
                                              ("kselftest.log", "run.log", "status")])
    try:
        run_logged(cmd, console_log, "guest", timeout, heartbeat=30, watch=watch)
    except StepStopped:
        hung = watch.stopped(timeout)
    except StepTimeout:
        hung = f"guest hung: killed after {timeout} s"
    with open(console_log, errors="replace") as f:
        console_text = f.read()
    return out, console_text, round(time.monotonic() - t0), hung


def run_script(tree, build, kernel, run_dir, script, *, accel, smp, timeout, mem, thp="always",
               extra_qemu=""):
    """Boot and run a bash script (tools/bench). Returns (exit status or
    None, its output, console text, seconds, hung message or None)."""
    env = {"GATE_RUN": "run.sh", "GATE_THP": thp, "GATE_ITEMS": "", "GATE_TIMEOUT": str(timeout)}
    out, console_text, secs, hung = _boot(tree, build, kernel, run_dir, env, "a script",
                                          accel=accel, smp=smp, timeout=timeout,
                                          extra_qemu=extra_qemu, mem=mem,
                                          files={"run.sh": script})
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
