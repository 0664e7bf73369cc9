"""Boot the configuration's kernel under QEMU with KUnit enabled and parse
the KTAP from its console. The kernel holds everything .kunitconfig asks
for; the gate boots it itself, as kunit.py's exec would, because 7.x's
kunit.py puts -accel kvm first, and a nested KVM guest here fails."""

import os
import shlex
import time

from . import console, guest, ktap
from .common import StepStopped, StepTimeout, run_logged, say
from .result import row


def qemu_command(kernel, *, accel, smp, extra, filter_glob):
    """kunit.py's x86_64 boot (1 GiB, serial console, qboot when there),
    with the accelerator the gate was asked for."""
    append = ["console=ttyS0", "kunit.enable=1", "kunit_shutdown=reboot",
              # A panic reboots, which ends QEMU (-no-reboot) and the run
              # at once, rather than waiting out the bound.
              "panic=-1",
              # As in the kselftest guest: TCG's TSC follows the host clock.
              "tsc=reliable"]
    if filter_glob:
        append.append(f"kunit.filter_glob={filter_glob}")
    cmd = ["qemu-system-x86_64", "-nodefaults", "-m", "1024", "-kernel", kernel,
           "-append", " ".join(append), "-no-reboot", "-nographic", "-serial", "stdio",
           "-smp", str(smp)] + guest.accel_args(accel)
    if accel == "kvm":
        cmd += ["-cpu", "host"]
    if os.path.isfile("/usr/share/qemu/qboot.rom"):
        cmd += ["-bios", "qboot.rom"]
    return cmd + shlex.split(extra or "")


def run(kernel, log_dir, *, filter_glob="", timeout=300, accel="tcg", smp=2, extra_qemu=""):
    """Boot an already built kernel and parse its KTAP. Returns (kunit
    rows, console rows, facts)."""
    os.makedirs(log_dir, exist_ok=True)
    exec_log = os.path.join(log_dir, "kunit-exec.log")
    cmd = qemu_command(kernel, accel=accel, smp=smp, extra=extra_qemu, filter_glob=filter_glob)
    say(f"kunit: booting under QEMU ({accel}, -smp {smp}, bound {timeout} s); log {exec_log}")
    t0 = time.monotonic()
    hung = None
    watch = console.QuietAfterFatal()
    try:
        run_logged(cmd, exec_log, "kunit boot", timeout, watch=watch)
    except StepStopped:
        hung = watch.stopped(timeout)
    except StepTimeout:
        hung = f"guest hung: killed after {timeout} s"
    facts = {"kunit_exec_s": round(time.monotonic() - t0)}
    with open(exec_log, errors="replace") as f:
        text = f.read()
    rows = ktap.kunit_rows(text)
    if hung:
        rows.append(row("(guest)", "boot finished", "fail", hung))
    cons = console.results(text, "kunit console")
    return rows, cons, facts
