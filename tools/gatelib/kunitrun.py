"""Boot the configuration's kernel under QEMU with KUnit enabled and parse
the KTAP from its console. The kernel holds everything .kunitconfig asks
for; the gate boots it itself, as kunit.py's exec would, because 7.x's
kunit.py puts -accel kvm first, and a nested KVM guest here fails."""

import os
import time

from . import console, guest, ktap
from .common import say
from .result import row


# DEBUG_VM_PGTABLE's boot-time checks are upstream's, and run in the
# kselftest guest's boot. Out of the KUnit boot, so that a kernel they crash
# (a pmd_lock() that takes no lock trips the deposit's assert_spin_locked()
# there) still reaches our cases, and a kill in this boot is our cases'.
NO_DEBUG_VM_PGTABLE = "initcall_blacklist=debug_vm_pgtable"
DEBUG_VM_PGTABLE_BANNER = "Validating architecture page table helpers"


def kunit_args(filter_glob=""):
    """The kernel arguments that run KUnit at boot: on, without upstream's
    boot-time checks, the suites filter_glob matches (every suite without)."""
    args = ["kunit.enable=1", NO_DEBUG_VM_PGTABLE]
    if filter_glob:
        args.append(f"kunit.filter_glob={filter_glob}")
    return args


def qemu_command(kernel, *, accel, smp, extra, filter_glob):
    """kunit.py's x86_64 boot (1 GiB, serial console, QEMU's default CPU
    under TCG: 4-level paging, as the accounting cases expect), with the
    accelerator the gate was asked for."""
    append = guest.BOOT_ARGS + kunit_args(filter_glob) + ["kunit_shutdown=reboot"]
    cmd = ["qemu-system-x86_64", "-nodefaults", "-m", "1024", "-kernel", kernel,
           "-append", " ".join(append), "-no-reboot", "-nographic", "-serial", "stdio",
           "-smp", str(smp)]
    return cmd + guest.machine_args(accel, None, extra)


def run(kernel, log_dir, *, filter_glob="", timeout=300, accel="tcg", smp=2, extra_qemu=""):
    """Boot an already built kernel and parse its KTAP. Returns (kunit
    rows, console rows, facts)."""
    os.makedirs(log_dir, exist_ok=True)
    exec_log = os.path.join(log_dir, "kunit-exec.log")
    cmd = qemu_command(kernel, accel=accel, smp=smp, extra=extra_qemu, filter_glob=filter_glob)
    say(f"kunit: booting under QEMU ({accel}, -smp {smp}, bound {timeout} s); log {exec_log}")
    t0 = time.monotonic()
    hung = guest.run_bounded(cmd, exec_log, "kunit boot", timeout, console.GuestWatch())
    facts = {"kunit_exec_s": round(time.monotonic() - t0)}
    with open(exec_log, errors="replace") as f:
        text = f.read()
    rows = ktap.kunit_rows(text)
    if hung:
        rows.append(row("(guest)", "boot finished", "fail", hung))
    cons = console.results(text, "kunit console")
    return rows, cons, facts
