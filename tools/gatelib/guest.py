"""The kselftest guest: build the guest kernel and the mm selftests on the host,
boot the kernel under QEMU with the host's / as a read-only 9p root, run
make run_tests for the chosen categories, collect the TAP and the console."""

import hashlib
import os
import re
import shlex
import shutil
import time

from . import console, ktap
from .common import REPO, GateError, StepStopped, StepTimeout, first_error, run_logged, say

INIT = os.path.join(REPO, "tools", "guest-init")


def _fragment_symbols(path):
    """{SYMBOL: value} a fragment asks for ("n" for '# CONFIG_X is not set')."""
    want = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            m = re.match(r"^CONFIG_([A-Za-z0-9_]+)=(.*)$", line)
            if m:
                want[m.group(1)] = m.group(2)
                continue
            m = re.match(r"^# CONFIG_([A-Za-z0-9_]+) is not set$", line)
            if m:
                want[m.group(1)] = "n"
    return want


def read_config(path):
    have = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"^CONFIG_([A-Za-z0-9_]+)=(.*)$", line.strip())
            if m:
                have[m.group(1)] = m.group(2)
    return have


def wanted_symbols(fragments):
    """{SYMBOL: value} the fragments ask for, a later fragment overriding an
    earlier one (merge_config.sh's order)."""
    want = {}
    for frag in fragments:
        want.update(_fragment_symbols(frag))
    return want


def missing_symbols(config_path, fragments):
    """Symbols the fragments asked for that the final .config does not have as asked."""
    have = read_config(config_path)
    bad = []
    for sym, val in wanted_symbols(fragments).items():
        got = have.get(sym, "n")
        if got != val:
            bad.append(f"CONFIG_{sym}={val} (got {got})")
    return bad


# How a build dir is configured: the fragments merged over allnoconfig
# (merge_config.sh -n), so the kernel holds what they ask for and what that
# selects, and nothing else. Part of the configure stamp: a build dir made
# another way is configured again.
BASE = "allnoconfig"


def configure(tree, build, fragments, log_dir, env):
    """The fragments merged in order over allnoconfig, redone only when a
    fragment changes."""
    os.makedirs(build, exist_ok=True)
    paths = list(fragments)
    h = hashlib.sha256(BASE.encode() + b"\0")
    for p in paths:
        with open(p, "rb") as f:
            h.update(os.path.basename(p).encode() + b"\0" + f.read())
    stamp_path = os.path.join(build, ".gate-config-stamp")
    config = os.path.join(build, ".config")
    stamp = h.hexdigest()
    old = open(stamp_path).read().strip() if os.path.isfile(stamp_path) else ""
    if old != stamp or not os.path.isfile(config):
        log = os.path.join(log_dir, "kernel-config.log")
        if os.path.exists(log):
            os.unlink(log)
        # merge_config.sh -n runs `make allnoconfig` with the merged fragments
        # as KCONFIG_ALLCONFIG: what they set is kept, every other prompt is n.
        cmd = [os.path.join(tree, "scripts", "kconfig", "merge_config.sh"), "-n", "-O", build,
               *paths]
        if run_logged(cmd, log, "kernel config", 600, cwd=tree, env=env, heartbeat=0) != 0:
            raise GateError(f"kernel configuration failed (log: {log})")
        with open(stamp_path, "w") as f:
            f.write(stamp + "\n")
    bad = missing_symbols(config, fragments)
    if bad:
        names = ", ".join(os.path.basename(p) for p in fragments)
        raise GateError(f"config fragment did not take effect ({names}): {', '.join(bad[:6])}")
    return read_config(config)


def build_kernel(tree, build, log_dir, env, jobs, timeout=3600):
    log = os.path.join(log_dir, "kernel-build.log")
    say(f"kernel: building ({build}); log {log}")
    rc = run_logged(["make", f"O={build}", f"-j{jobs}", "bzImage"], log, "kernel build", timeout,
                    cwd=tree, env=env)
    if rc != 0:
        raise GateError(f"kernel build failed: {first_error(log)} (log: {log})")
    return os.path.join(build, "arch", "x86", "boot", "bzImage")


def build_selftests(tree, build, log_dir, env, jobs, timeout=1800):
    """Headers into build/usr/include, selftests/mm built into build/kselftest/mm
    and installed, with kselftest's runner, into build/kselftest/kselftest_install: the
    guest runs that install (run_kselftest.sh) and never runs make, whose
    up-to-date checks over 9p took about 45 s of every guest run."""
    log = os.path.join(log_dir, "selftests-build.log")
    say(f"guest: building selftests/mm on the host; log {log}")
    for cmd in (["make", f"O={build}", "-s", "headers"],
                ["make", "-C", "tools/testing/selftests", "TARGETS=mm", f"O={build}",
                 "building_out_of_srctree=1", f"-j{jobs}", "install"]):
        rc = run_logged(cmd, log, "selftests build", timeout, cwd=tree, env=env)
        if rc != 0:
            raise GateError(f"selftests build failed: {first_error(log)} (log: {log})")
    if not os.path.isfile(os.path.join(build, INSTALL, "run_kselftest.sh")):
        raise GateError(f"selftests install made no {INSTALL}/run_kselftest.sh (log: {log})")
    return os.path.join(build, "kselftest", "mm")


# Where build_selftests installs, relative to its build dir (kselftest's default).
INSTALL = os.path.join("kselftest", "kselftest_install")


def qemu_command(kernel, tree, build, out, accel, smp, mem, extra):
    append = " ".join([
        "console=ttyS0", "root=hostroot", "rootfstype=9p",
        "rootflags=trans=virtio,version=9p2000.L,msize=512000", "ro", f"init={INIT}",
        # An Oops ends the guest at once (panic=-1 reboots, -no-reboot exits)
        # instead of leaving it to hang on a lock the dead task held.
        "oops=panic", "panic=-1", "kunit.enable=0", "printk.time=1",
    ])
    cmd = ["qemu-system-x86_64", "-nodefaults", "-nographic", "-no-reboot",
           "-m", mem, "-smp", str(smp), "-serial", "stdio", "-kernel", kernel, "-append", append,
           "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
           "-virtfs", f"local,path={out},mount_tag=out,security_model=none,multidevs=remap",
           "-virtfs", f"local,path={build},mount_tag=build,security_model=none,multidevs=remap"]
    if accel == "kvm":
        cmd += ["-accel", "kvm", "-cpu", "host"]
    else:
        cmd += ["-accel", "tcg,thread=multi", "-cpu", "max"]
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
        hung = (f"guest stopped early: {watch.check() or 'quiet after a fatal report'} "
                f"(bound {timeout} s)")
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
    status = _read(os.path.join(out, "status"))
    return (int(status) if status and status.strip().isdigit() else None,
            _read(os.path.join(out, "run.log")) or "", console_text, secs, hung)


def boot(tree, build, kernel, run_dir, items, *, accel, smp, timeout, extra_qemu="", mem="2G",
         thp="always"):
    """Boot and run; returns (kselftest rows, console text, facts)."""
    env = {"GATE_ITEMS": items, "GATE_TIMEOUT": max(60, timeout - 30), "GATE_THP": thp}
    out, console_text, secs, hung = _boot(tree, build, kernel, run_dir, env, f"'{items}'",
                                          accel=accel, smp=smp, timeout=timeout,
                                          extra_qemu=extra_qemu, mem=mem)
    facts = {"guest_s": secs}
    thp = _read(os.path.join(out, "thp"))
    if thp:
        facts["thp"] = thp.strip()
    status = _read(os.path.join(out, "status"))
    log = _read(os.path.join(out, "kselftest.log"))
    rows = parse_kselftest(log or "")
    if hung:
        rows.append(("(guest)", "guest finished", "fail", hung))
    elif status is None:
        rows.append(("(guest)", "guest finished", "fail",
                     "the guest stopped before the selftests finished (see the console)"))
    elif status.strip() != "0" and not any(r[2] == "fail" for r in rows):
        rows.append(("(guest)", "make run_tests", "fail", f"exited {status.strip()}"))
    return rows, console_text, facts


def _read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def parse_kselftest(text):
    """Rows from make run_tests output: one per subtest, one per program, one
    for the runner when it failed (e.g. its timeout)."""
    root = ktap.parse(text, hash_nesting=True)
    rows = []
    if not root.children:
        return [("(kselftest)", "TAP output", "fail", "no kselftest TAP in the output")]
    for runner in root.children:            # "selftests: mm: run_vmtests.sh"
        programs = runner.children
        for prog in programs:
            pname = prog.name or "(unnamed)"
            for sub in prog.children:
                status = sub.status or "fail"
                reason = sub.reason if sub.status else "no result line (crashed or hung)"
                rows.append((pname, sub.name, status, reason))
            missing = ktap.check_plan(prog)
            if missing:
                rows.append((pname, "(incomplete)", "fail", missing))
            pstatus = prog.status or "fail"
            preason = prog.reason
            if pstatus == "skip":
                preason = prog.skip_reason or preason or "skipped"
            elif pstatus == "fail" and not preason:
                preason = "no result line (crashed or hung)" if not prog.status else "failed"
            rows.append((pname, "(program)", pstatus, preason))
        if runner.status != "pass" and not (runner.status == "skip" and programs):
            rows.append((runner.name or "(runner)", "(runner)", runner.status or "fail",
                         runner.reason or "the runner did not finish"))
        missing = ktap.check_plan(runner)
        if missing and not programs:
            rows.append((runner.name or "(runner)", "(incomplete)", "fail", missing))
    return rows
