"""A gate run in KernelCI's KCIDB report format (schema version 4): one
checkout (the tree plus the series), one build per configuration, one test
per result. Written from KCIDB's submitter guide: every object carries its
id (prefixed by the origin and a colon), its parent's id and the origin;
test statuses are PASS, FAIL, SKIP, ERROR or DONE; a test's path is
dot-separated."""

from __future__ import annotations

import hashlib
import re
from typing import Any, Dict, List, Sequence

ORIGIN = "pmd_ptlock_gate"
VERSION = {"major": 4, "minor": 1}
STATUS = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP"}


def patchset_hash(patches: Sequence[str]) -> str:
    """sha256 over the newline-terminated sha256 of each patch, in order of
    application (KCIDB's definition); "" for no patches."""
    if not patches:
        return ""
    lines = []
    for p in patches:
        with open(p, "rb") as f:
            lines.append(hashlib.sha256(f.read()).hexdigest() + "\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def _part(name: str) -> str:
    """One component of a test path: no dots (they separate components)."""
    return re.sub(r"[^A-Za-z0-9_()+,:=-]+", "_", name).strip("_") or "_"


def _id(*parts: str) -> str:
    return f"{ORIGIN}:" + hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def report(run: Dict[str, Any], patches: Sequence[str], tree_id: str = "") -> Dict[str, Any]:
    """The KCIDB report of a gate run's JSON (tools/gate --json)."""
    ps_hash = patchset_hash(patches)
    checkout_id = _id("checkout", run["tree"], tree_id, ps_hash)
    checkout = {"id": checkout_id, "origin": ORIGIN, "valid": True,
                "tree_name": f"linux-source-{run['tree']}", "patchset_hash": ps_hash,
                "misc": {"kernel_version": run["tree"], "pristine_tree": tree_id}}
    builds: List[Dict[str, Any]] = []
    tests: List[Dict[str, Any]] = []
    configs = list(dict.fromkeys(list(run.get("configs", {})) +
                                 [r["config"] for r in run["results"]]))
    for cfg in configs:
        build_id = _id("build", checkout_id, cfg)
        broken = any(r["config"] == cfg and r["suite"] == "(gate)" and r["name"] == "kernel build"
                     and r["status"] == "fail" for r in run["results"])
        builds.append({"id": build_id, "checkout_id": checkout_id, "origin": ORIGIN,
                       "architecture": "x86_64", "config_name": cfg, "valid": not broken,
                       "misc": run.get("configs", {}).get(cfg, {})})
        for n, r in enumerate(x for x in run["results"] if x["config"] == cfg):
            path = ".".join(["pmd_ptlock", _part(r["kind"]), _part(r["suite"]), _part(r["name"])])
            tests.append({"id": _id("test", build_id, path, str(n)), "build_id": build_id,
                          "origin": ORIGIN, "path": path, "status": STATUS[r["status"]],
                          "misc": {"name": r["name"], "reason": r.get("reason", "")}})
    return {"version": VERSION, "checkouts": [checkout], "builds": builds, "tests": tests}
