"""DRAFT for tools/gatelib/series.py: where the series puts things, per tree.

Only data differs between trees; the edit helpers (_insert_after, a new
_insert_before) stay as they are. Every anchor below was checked to exist
exactly once in Debian's linux-source-6.12 (6.12.118) and linux-source-7.3
(7.3.4); see /work/notes-7.3.md section 2.15.
"""

SELFTESTS = ["pmd_ptlock_fault", "pmd_ptlock_mremap", "pmd_ptlock_fork", "pmd_ptlock_paths"]
ST = "tools/testing/selftests/mm"

COMMON = {
    # mm/tests/ exists upstream in 7.3 (lazy_mmu_mode_kunit.c); creating it on
    # 6.12 keeps the #include "../internal.h" lines identical in both trees.
    "kunit_path": "mm/tests/pmd_ptlock_kunit.c",
    # Both trees: the KUnit entry goes right before the DAMON menu at the end
    # of mm/Kconfig (7.x: just after LAZY_MMU_MODE_KUNIT_TEST, the one mm
    # KUnit entry there).
    "kconfig": ("mm/Kconfig", "before", 'source "mm/damon/Kconfig"'),
    "makefile": ("mm/Makefile", "after", "obj-$(CONFIG_TMPFS_QUOTA) += shmem_quota.o"),
    "makefile_line": "obj-$(CONFIG_PMD_PTLOCK_KUNIT_TEST) += tests/pmd_ptlock_kunit.o\n",
    "usage_anchor": "\ttest transparent huge pages",
}

TREES = {
    "6.12": dict(COMMON, **{
        "backport": "kunit/backport-6.12.patch",       # applied to the canonical source
        "khugepaged_fix": True,                         # patch 0001
        "st_makefile_after": "TEST_GEN_FILES += pagemap_ioctl",
        "gitignore_after": "madv_populate",             # an explicit list in 6.12
        "run_vmtests_after": 'CATEGORY="thp" run_test ./transhuge-stress -d 20',
        "wrapper": None,                                # no ksft_*.sh wrappers in 6.12
        "kselftest_target": "mm:run_vmtests.sh",        # + VM_SELFTEST_ITEMS
    }),
    "7": dict(COMMON, **{
        "backport": None,                               # the canonical source is 7.x
        "khugepaged_fix": False,                        # vm_util.h includes kselftest.h
        "st_makefile_after": "TEST_GEN_FILES += pfnmap",
        "gitignore_after": None,                        # .gitignore is a whitelist ('*', '!*.c', ...)
        "run_vmtests_after": 'CATEGORY="thp" run_test ./folio_split_race_test',
        "wrapper": ("ksft_pmd_ptlock.sh", "TEST_PROGS += ksft_pkey.sh"),
        "kselftest_target": "mm:ksft_pmd_ptlock.sh",    # run_vmtests.sh is TEST_FILES only
    }),
}


def tree_key(version):
    """'6.12.118' -> '6.12'; '7.3.4' -> '7'."""
    major, minor = (int(x) for x in version.split(".")[:2])
    if (major, minor) == (6, 12):
        return "6.12"
    if major >= 7:
        return "7"
    raise ValueError(f"no series layout for {version}")


def khugepaged_needs_fix(show):
    """Fixed upstream by vm_util.h including kselftest.h (7.x), not only by
    khugepaged.c including it: check both."""
    src = show(f"{ST}/khugepaged.c")
    util = show(f"{ST}/vm_util.h")
    return "KSFT_SKIP" in src and "kselftest.h" not in src and "kselftest.h" not in util
