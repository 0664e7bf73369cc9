"""Build and run the KUnit suite with the tree's own kunit.py under QEMU."""

import os
import re
import shlex
import time

from . import console, guest, ktap
from .common import StepStopped, StepTimeout, run_logged, say
from .result import row

HANG = re.compile(r"timed out after (\d+) seconds")


def qemu_args(accel, smp, extra):
    """QEMU arguments the gate adds to kunit.py's x86_64 defaults."""
    args = ["-smp", str(smp)] + guest.accel_args(accel)
    if accel == "kvm":
        args += ["-cpu", "host"]
    return args + shlex.split(extra or "")


def run(tree, build_dir, kunitconfig, log_dir, *, cache, filter_glob="", timeout=300, accel="tcg",
        smp=2, extra_qemu=""):
    """Boot an already built kernel (the configuration's one kernel, which
    holds everything .kunitconfig asks for) through kunit.py exec and parse
    its KTAP. Returns (kunit rows, console rows, facts)."""
    os.makedirs(log_dir, exist_ok=True)
    kunit_py = os.path.join(tree, "tools", "testing", "kunit", "kunit.py")
    env = cache.build_env()
    # kunit.py prints the console as it comes: unbuffered, so the watch sees
    # a fatal report when it is printed, not when a pipe buffer fills.
    env["PYTHONUNBUFFERED"] = "1"
    exec_log = os.path.join(log_dir, "kunit-exec.log")
    cmd = ["python3", kunit_py, "exec", "--arch=x86_64", f"--build_dir={build_dir}",
           f"--kunitconfig={kunitconfig}", "--raw_output=all", f"--timeout={timeout}",
           # A panic reboots, which ends QEMU (-no-reboot) and the run at once,
           # rather than waiting out the bound.
           "--kernel_args=panic=-1"]
    for a in qemu_args(accel, smp, extra_qemu):
        cmd.append(f"--qemu_args={a}")
    if filter_glob:
        cmd.append(filter_glob)
    say(f"kunit: booting under QEMU ({accel}, -smp {smp}, bound {timeout} s); log {exec_log}")
    t0 = time.monotonic()
    hung = None
    watch = console.QuietAfterFatal()
    try:
        run_logged(cmd, exec_log, "kunit boot", timeout + 60, cwd=tree, env=env, watch=watch)
    except StepStopped:
        hung = watch.stopped(timeout)
    except StepTimeout as e:
        hung = str(e)
    facts = {"kunit_exec_s": round(time.monotonic() - t0)}
    with open(exec_log, errors="replace") as f:
        out = f.read()
    m = HANG.search(out)
    if m and not hung:
        hung = f"guest hung: killed after {m.group(1)} s"
    log_path = os.path.join(build_dir, "test.log")
    text = ""
    if os.path.isfile(log_path) and os.path.getmtime(log_path) >= time.time() - facts["kunit_exec_s"] - 5:
        with open(log_path, errors="replace") as f:
            text = f.read()
    rows = ktap.kunit_rows(text)
    if hung:
        rows.append(row("(guest)", "boot finished", "fail", hung))
    cons = console.results(text, "kunit console")
    return rows, cons, facts
