"""Shared test helpers: import path for tools/gatelib, fixtures, running the tools."""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
TOOLS = os.path.join(REPO, "tools")
sys.path.insert(0, TOOLS)

from gatelib import tree  # noqa: E402
from gatelib.cache import Cache  # noqa: E402
from gatelib.trees import DEFAULT_TREE  # noqa: E402


def fixture(name):
    with open(os.path.join(HERE, "fixtures", name), errors="replace") as f:
        return f.read()


def distro_tree(name=DEFAULT_TREE):
    """The cache's unpacked distro tree (a Source), its package installed
    first as root when missing: what a test needs before it touches the tree."""
    return tree.prepare(Cache(), tree.find_tarball(tree_name=name))


def run_tool(args, env=None, timeout=1800, user=None):
    """Run a tool from tools/; returns CompletedProcess with text stdout/stderr."""
    cmd = [os.path.join(TOOLS, args[0]), *args[1:]]
    if user:
        cmd = ["runuser", "-u", user, "--", *cmd]
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run(cmd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)
