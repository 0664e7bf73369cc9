/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the split PMD page-table lock selftests: proving that
 * THP is really in use, finding out whether a range is mapped by a huge
 * PMD (a THP or the huge zero page) or by PTEs, laying chunks out in one
 * or in several PMD tables, and running a workload in a child process
 * whose checks the parent reports as kselftest results once the child
 * (and its page tables) are gone.
 */
#ifndef __PMD_PTLOCK_H__
#define __PMD_PTLOCK_H__

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>		/* PAGEMAP_SCAN */

#include "../kselftest.h"
#include "vm_util.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ	22
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE	0x100000
#endif

/* One PMD table maps 1 GiB on x86-64: chunks 1 GiB apart use different tables. */
#define PT_GIB		(1UL << 30)

/* /proc/kpageflags bits (include/uapi/linux/kernel-page-flags.h). */
#define PT_KPF_THP	(1ULL << 22)
#define PT_KPF_ZERO	(1ULL << 24)

static size_t pmdsize;

/* A line "name value" of a /proc file, or -1. */
static inline long pt_proc_value(const char *path, const char *name)
{
	char line[256];
	size_t len = strlen(name);
	long val = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, name, len) &&
		    (line[len] == ' ' || line[len] == ':')) {
			val = strtol(line + len + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return val;
}

static inline long pt_vmstat(const char *name)
{
	return pt_proc_value("/proc/vmstat", name);
}

/* PageTables in kB with every CPU's pending counter deltas folded in. */
static inline long pt_pagetables_kb(void)
{
	int fd = open("/proc/sys/vm/stat_refresh", O_WRONLY);

	if (fd >= 0) {
		/* Not root: the figure may lag by a few pages. */
		if (write(fd, "1", 1) < 0)
			errno = 0;
		close(fd);
	}
	return pt_proc_value("/proc/meminfo", "PageTables");
}

/*
 * The number after "<key>" in a file (key starting with "\n" matches at
 * the start of any line, the first included), or -1. Read into a stack
 * buffer so that reading it allocates nothing (no heap, no page table) in
 * the process whose page tables are being counted.
 */
static inline long pt_file_number(const char *path, const char *key)
{
	char buf[8192], *v;
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -1;
	n = read(fd, buf + 1, sizeof(buf) - 2);
	close(fd);
	if (n <= 0)
		return -1;
	buf[0] = '\n';
	buf[n + 1] = 0;
	v = strstr(buf, key);
	return v ? strtol(v + strlen(key), NULL, 10) : -1;
}

/* The "<field>: <n> kB" line of a /proc file in kB, or -1. */
static inline long pt_proc_kb(const char *path, const char *field)
{
	char key[64];

	snprintf(key, sizeof(key), "\n%s:", field);
	return pt_file_number(path, key);
}

/*
 * VmPTE of /proc/self/status in kB: the mm's pgtables_bytes, which counts
 * every page table the mm holds, deposited ones included.
 */
static inline long pt_vmpte_kb(void)
{
	return pt_proc_kb("/proc/self/status", "VmPTE");
}

/*
 * The PFN mapped at addr (root only), or -1UL. Worker threads call this
 * concurrently and a forked child must read its own page tables, so each
 * call opens /proc/self/pagemap afresh instead of sharing a descriptor.
 */
static inline unsigned long pt_pfn(void *addr)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	unsigned long pfn;

	if (fd < 0)
		return -1UL;
	pfn = pagemap_get_pfn(fd, addr);
	close(fd);
	return pfn;
}

/* kpageflags of the page mapped at addr, or 0 when none or unreadable. */
static inline uint64_t pt_page_flags(void *addr)
{
	unsigned long pfn = pt_pfn(addr);
	uint64_t flags;
	ssize_t got;
	int fd;

	if (pfn == -1UL)
		return 0;
	fd = open("/proc/kpageflags", O_RDONLY);
	if (fd < 0)
		return 0;
	got = pread(fd, &flags, sizeof(flags), pfn * sizeof(flags));
	close(fd);
	return got == sizeof(flags) ? flags : 0;
}

/*
 * The page at addr belongs to a large anonymous folio (KPF_THP, not the
 * huge zero page). fs/proc/page.c (6.12 and 7.x) sets KPF_THP for any large
 * rmappable folio, PMD-mapped or not, so this says THP is in use, never
 * that a range is mapped by a huge PMD: that is pt_map_of()'s job.
 */
static inline bool pt_is_thp(void *addr)
{
	uint64_t f = pt_page_flags(addr);

	return (f & PT_KPF_THP) && !(f & PT_KPF_ZERO);
}

/*
 * What PAGEMAP_SCAN on /proc/self/pagemap (this process's own page
 * tables) reports for [addr, addr + len): bytes present, bytes of them
 * mapped by a huge PMD, bytes of them mapping the (huge) zero page. In
 * fs/proc/task_mmu.c, PAGE_IS_HUGE is set for anonymous memory only by
 * pagemap_thp_category(), which pagemap_scan_thp_entry() calls under
 * pmd_trans_huge_lock() for a huge PMD (a THP, or the huge zero page with
 * PAGE_IS_PFNZERO); pagemap_page_category() never sets it, so the PTEs of
 * a THP whose PMD was split do not count as huge. kpageflags cannot tell:
 * it sets KPF_THP for any large anonymous folio, however it is mapped.
 * Returns 0, or -1 with errno set (no PAGEMAP_SCAN before 6.7: ENOTTY),
 * which every caller turns into a failed check, never a pass.
 */
struct pt_scan {
	size_t present;
	size_t huge;
	size_t zero;
};

static inline int pt_scan(void *addr, size_t len, struct pt_scan *s)
{
	struct page_region reg[32];
	struct pm_scan_arg arg = {
		.size = sizeof(arg),
		.start = (uintptr_t)addr,
		.end = (uintptr_t)addr + len,
		.vec = (uintptr_t)reg,
		.vec_len = ARRAY_SIZE(reg),
		.return_mask = PAGE_IS_PRESENT | PAGE_IS_HUGE | PAGE_IS_PFNZERO,
	};
	long n, i;
	int fd, err;

	memset(s, 0, sizeof(*s));
	fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0)
		return -1;
	n = ioctl(fd, PAGEMAP_SCAN, &arg);
	err = errno;
	close(fd);
	if (n < 0) {
		errno = err;
		return -1;
	}
	if (arg.walk_end != arg.end) {
		errno = EOVERFLOW;	/* more regions than reg[] holds */
		return -1;
	}
	for (i = 0; i < n; i++) {
		size_t bytes = reg[i].end - reg[i].start;

		if (!(reg[i].categories & PAGE_IS_PRESENT))
			continue;
		s->present += bytes;
		if (reg[i].categories & PAGE_IS_HUGE)
			s->huge += bytes;
		if (reg[i].categories & PAGE_IS_PFNZERO)
			s->zero += bytes;
	}
	return 0;
}

/* How a range is mapped, from pt_scan(). */
enum pt_map {
	PT_MAP_ERROR,		/* PAGEMAP_SCAN failed */
	PT_MAP_NONE,		/* nothing present */
	PT_MAP_PTE,		/* every page present, none by a huge PMD */
	PT_MAP_PTE_PARTLY,	/* some pages present, none by a huge PMD */
	PT_MAP_THP,		/* all of it by huge PMDs mapping THPs */
	PT_MAP_HUGE_ZERO,	/* all of it by huge PMDs of the huge zero page */
	PT_MAP_MIXED,		/* anything else */
};

static const char *const pt_map_names[] = {
	[PT_MAP_ERROR] = "unknown (PAGEMAP_SCAN failed)",
	[PT_MAP_NONE] = "not mapped",
	[PT_MAP_PTE] = "mapped by PTEs",
	[PT_MAP_PTE_PARTLY] = "partly mapped by PTEs",
	[PT_MAP_THP] = "a THP mapped by a huge PMD",
	[PT_MAP_HUGE_ZERO] = "the huge zero page mapped by a huge PMD",
	[PT_MAP_MIXED] = "partly mapped by a huge PMD",
};

static inline enum pt_map pt_map_of(void *addr, size_t len)
{
	struct pt_scan s;

	if (pt_scan(addr, len, &s))
		return PT_MAP_ERROR;
	if (!s.present)
		return PT_MAP_NONE;
	if (!s.huge)
		return s.present == len ? PT_MAP_PTE : PT_MAP_PTE_PARTLY;
	if (s.huge == len && !s.zero)
		return PT_MAP_THP;
	if (s.huge == len && s.zero == len)
		return PT_MAP_HUGE_ZERO;
	return PT_MAP_MIXED;
}

/* pt_map_names[m], with the reason when PAGEMAP_SCAN itself failed. */
static inline const char *pt_map_name(enum pt_map m)
{
	static __thread char why[80];

	if (m != PT_MAP_ERROR)
		return pt_map_names[m];
	snprintf(why, sizeof(why), "unknown (PAGEMAP_SCAN: %s)", strerror(errno));
	return why;
}

/* Is any page of [addr, addr + len) resident? (false once zapped) */
static inline bool pt_resident(void *addr, size_t len)
{
	unsigned char vec[512];
	size_t i, n = len / getpagesize();

	if (n > sizeof(vec) || mincore(addr, len, vec))
		return false;
	for (i = 0; i < n; i++)
		if (vec[i] & 1)
			return true;
	return false;
}

/* Is [addr, addr + len) unmapped? (mincore() fails with ENOMEM) */
static inline bool pt_unmapped(void *addr, size_t len)
{
	unsigned char vec[512];

	return mincore(addr, len > sizeof(vec) * getpagesize() ?
		       sizeof(vec) * getpagesize() : len, vec) && errno == ENOMEM;
}

/*
 * A read-write anonymous mapping of len bytes aligned to align, with THP
 * asked for (or refused, hugepage == false).
 */
static inline char *pt_map_aligned(size_t len, size_t align, bool hugepage)
{
	char *raw, *p;

	raw = mmap(NULL, len + align, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	p = (char *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
	if (p > raw)
		munmap(raw, p - raw);
	munmap(p + len, raw + len + align - (p + len));
	if (mmap(p, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
		 -1, 0) == MAP_FAILED)
		return NULL;
	if (madvise(p, len, hugepage ? MADV_HUGEPAGE : MADV_NOHUGEPAGE))
		return NULL;
	return p;
}

static inline void pt_fill(char *p, size_t len, uint64_t seed)
{
	uint64_t *w = (uint64_t *)p;
	size_t i;

	for (i = 0; i < len / sizeof(*w); i++)
		w[i] = seed ^ (i * 0x9e3779b97f4a7c15ULL);
}

/* Index of the first word that differs from pt_fill(seed), or -1. */
static inline long pt_verify(const char *p, size_t len, uint64_t seed)
{
	const uint64_t *w = (const uint64_t *)p;
	size_t i;

	for (i = 0; i < len / sizeof(*w); i++)
		if (w[i] != (seed ^ (i * 0x9e3779b97f4a7c15ULL)))
			return i;
	return -1;
}

static inline bool pt_all_zero(const char *p, size_t len)
{
	const uint64_t *w = (const uint64_t *)p;
	size_t i;

	for (i = 0; i < len / sizeof(*w); i++)
		if (w[i])
			return false;
	return true;
}

/*
 * Prove at the page-table level that nothing maps [addr, addr + len) any
 * more (after a move or an unmap). mincore() fails with ENOMEM from its
 * VMA lookup before it reads a page table, so it only proves the VMA is
 * gone; here a new anonymous mapping is placed exactly there
 * (MAP_FIXED_NOREPLACE: refused while any VMA is left) and, before any
 * access, must have nothing present (PAGEMAP_SCAN reads the PMD and PTE
 * entries under the new VMA), then read zeros. A PMD entry or PTE table
 * left behind shows there as present, with the old data. The mapping is
 * removed again. Returns NULL, or what was found.
 */
static inline const char *pt_range_left_empty(void *addr, size_t len)
{
	static __thread char why[160];
	struct pt_scan s;
	char *p;

	p = mmap(addr, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
		 -1, 0);
	if (p == MAP_FAILED) {
		snprintf(why, sizeof(why), "a new mapping at %p: %s", addr,
			 strerror(errno));
		return why;
	}
	why[0] = 0;
	if (p != addr)
		snprintf(why, sizeof(why), "a new mapping asked at %p landed at %p",
			 addr, p);
	else if (pt_scan(p, len, &s))
		snprintf(why, sizeof(why), "PAGEMAP_SCAN at %p: %s", p, strerror(errno));
	else if (s.present)
		snprintf(why, sizeof(why),
			 "a new mapping at %p has %zu kB present before any access",
			 p, s.present >> 10);
	else if (!pt_all_zero(p, len))
		snprintf(why, sizeof(why), "a new mapping at %p reads old data", p);
	munmap(p, len);
	return why[0] ? why : NULL;
}

/* Whether THP faults that only read may map the huge zero page. */
static inline bool pt_use_zero_page(void)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/use_zero_page", "r");
	int zp = -1;

	if (f) {
		if (fscanf(f, "%d", &zp) != 1)
			zp = -1;
		fclose(f);
	}
	return zp == 1;
}

#define PT_PTES_NONE "/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none"
static char pt_ptes_none_saved[16];

static inline void pt_ptes_none_restore(void)
{
	/* open/write/close only: it also runs from a signal handler. */
	int fd = open(PT_PTES_NONE, O_WRONLY);

	if (fd >= 0) {
		ssize_t n = write(fd, pt_ptes_none_saved, strlen(pt_ptes_none_saved));

		close(fd);
		(void)n;	/* best effort: nothing more to do on failure */
	}
}

/* A runner's timeout (SIGTERM) or ^C must not leave max_ptes_none at 0. */
static inline void pt_ptes_none_on_signal(int sig)
{
	pt_ptes_none_restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

/*
 * khugepaged collapses a range with up to max_ptes_none empty entries
 * (511 of 512 by default) back into a THP whenever its scan comes by, so a
 * check that a one-page zap left the rest mapped by PTEs could find a huge
 * PMD again, filled by khugepaged, not left by the zap. For the rest of
 * the run it must leave holes alone (max_ptes_none 0; MADV_COLLAPSE
 * ignores the setting); the old value is put back at exit.
 */
static inline void pt_khugepaged_leave_holes(void)
{
	FILE *f = fopen(PT_PTES_NONE, "r");

	if (!f)
		return;			/* no khugepaged: nothing refills */
	if (!fgets(pt_ptes_none_saved, sizeof(pt_ptes_none_saved), f))
		pt_ptes_none_saved[0] = '\0';
	fclose(f);
	f = fopen(PT_PTES_NONE, "w");
	if (!f || fputs("0", f) < 0 || fclose(f))
		ksft_exit_fail_msg("cannot set %s to 0: %s\n", PT_PTES_NONE,
				   strerror(errno));
	if (pt_ptes_none_saved[0]) {
		atexit(pt_ptes_none_restore);
		signal(SIGTERM, pt_ptes_none_on_signal);
		signal(SIGINT, pt_ptes_none_on_signal);
	}
}

/*
 * Prove THP is in use before testing anything: a 2 MiB-aligned
 * MADV_HUGEPAGE chunk, written once, must be a THP in kpageflags, be mapped
 * by a huge PMD (PAGEMAP_SCAN), and move thp_fault_alloc. Returns NULL or
 * why not. (No vm_util.h helper whose signature differs between trees:
 * check_huge_anon() gained a length argument after 6.12.)
 */
static inline const char *pt_thp_unavailable(void)
{
	static char why[160];
	char mode[128] = "";
	long before, after;
	FILE *f;
	char *p;

	f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (!f)
		return "no /sys/kernel/mm/transparent_hugepage (CONFIG_TRANSPARENT_HUGEPAGE off)";
	if (!fgets(mode, sizeof(mode), f))
		mode[0] = 0;
	fclose(f);
	if (strstr(mode, "[never]"))
		return "THP disabled: transparent_hugepage/enabled is [never]";
	pmdsize = read_pmd_pagesize();
	if (!pmdsize)
		return "cannot read transparent_hugepage/hpage_pmd_size";
	if (access("/proc/kpageflags", R_OK))
		return "/proc/kpageflags not readable (needs root and CONFIG_PROC_PAGE_MONITOR)";
	before = pt_vmstat("thp_fault_alloc");
	if (before < 0)
		return "no thp_fault_alloc in /proc/vmstat (CONFIG_VM_EVENT_COUNTERS off)";
	p = pt_map_aligned(pmdsize, pmdsize, true);
	if (!p)
		return "cannot map a 2 MiB-aligned MADV_HUGEPAGE chunk";
	pt_fill(p, pmdsize, 1);
	after = pt_vmstat("thp_fault_alloc");
	if (!pt_is_thp(p))
		snprintf(why, sizeof(why),
			 "a written MADV_HUGEPAGE chunk is not a THP (kpageflags)");
	else if (pt_map_of(p, pmdsize) != PT_MAP_THP)
		snprintf(why, sizeof(why),
			 "PAGEMAP_SCAN does not show the THP mapped by a huge PMD");
	else if (after <= before)
		snprintf(why, sizeof(why), "thp_fault_alloc did not move (%ld -> %ld)",
			 before, after);
	else
		why[0] = 0;
	munmap(p, pmdsize);
	return why[0] ? why : NULL;
}

/*
 * Every program's precondition, after its TAP header: skip, saying why,
 * where THP cannot be tested or, with @need_pfns, PFNs cannot be read.
 */
static inline void pt_skip_unless_thp(bool need_pfns)
{
	const char *why = pt_thp_unavailable();

	if (why)
		ksft_exit_skip("%s\n", why);
	if (need_pfns && getuid())
		ksft_exit_skip("needs root to read PFNs from /proc/self/pagemap\n");
}

/*
 * Checks made in a workload child, counted in memory shared with the
 * parent, which reports each as one kselftest result after the child exits.
 */
#define PT_MAX_CHECKS	8

struct pt_check {
	const char *name;
	int failures;
	int first_taken;
	char first[200];
};

struct pt_report {
	struct pt_check check[PT_MAX_CHECKS];
	int nr;
	char note[200];		/* printed with the results, if set */
};

static inline struct pt_report *pt_report_new(const char *const *names)
{
	struct pt_report *r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (r == MAP_FAILED)
		ksft_exit_fail_msg("mmap of the shared report: %s\n", strerror(errno));
	memset(r, 0, sizeof(*r));
	while (names[r->nr] && r->nr < PT_MAX_CHECKS) {
		r->check[r->nr].name = names[r->nr];
		r->nr++;
	}
	return r;
}

/* Record the outcome of check i; the first failure's message is kept. */
static inline void pt_check(struct pt_report *r, int i, bool ok, const char *fmt, ...)
{
	struct pt_check *c = &r->check[i];
	va_list ap;

	if (ok)
		return;
	__atomic_add_fetch(&c->failures, 1, __ATOMIC_RELAXED);
	if (__atomic_exchange_n(&c->first_taken, 1, __ATOMIC_ACQ_REL))
		return;
	va_start(ap, fmt);
	vsnprintf(c->first, sizeof(c->first), fmt, ap);
	va_end(ap);
}

/* A note the parent prints with the results (not a check). */
static inline void pt_note(struct pt_report *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->note, sizeof(r->note), fmt, ap);
	va_end(ap);
}

/*
 * The case's page tables, counted once the child is gone. PageTables
 * (NR_PAGETABLE) is the whole machine's: any process can move it while the
 * case runs, and so can the kernel's own tables (PMD and PUD tables in
 * 6.12; every level in 7.x, vmalloc's PTE tables included, never freed).
 * So the workload runs in a memory cgroup made for the case: a user page
 * table is charged to the memory cgroup of the task allocating it
 * (GFP_PGTABLE_USER has __GFP_ACCOUNT) and uncounted from it when freed,
 * so the cgroup's memory.stat "pagetables" is what the case's own tasks
 * allocated and did not free, deposited or not; no other process and no
 * kernel table is charged there. (A table a kernel thread allocates in
 * the child's mm would be charged elsewhere: our workloads are anonymous,
 * where khugepaged only re-deposits a table the workload allocated.)
 * Without cgroup2's memory controller there is no verdict: a leaked table
 * cannot be told from another process's, so that result is a skip.
 */
#define PT_NO_CG_WHY \
	"no cgroup2 memory controller: a leaked page table cannot be told from other processes' tables"
struct pt_tables {
	bool cgroup;		/* the case ran in a memory cgroup of its own */
	long before, after;	/* PageTables in kB around the case (reported only) */
	long running;		/* kB charged to the cgroup as the child ended */
	long charged;		/* kB still charged to it once the child is gone */
};

/* Write s to path with no stdio (no heap, no page table); 0 or -1. */
static inline int pt_write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	int ret;

	if (fd < 0)
		return -1;
	ret = write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
	close(fd);
	return ret;
}

/* The cgroup2 mount, "" when there is none. */
static char pt_cg_root[256];
/* cgroup.procs of the cgroup we run in, to come back to after a fork. */
static char pt_cg_home[512];
/* The case's cgroup, "" when the case has none. */
static char pt_cg_case[512];

/*
 * Pages this process has written, so that fork() copies their PTEs: a
 * child dirtying them copies each on write (see pt_cg_flush()).
 */
static char *pt_cg_flush_buf;
static size_t pt_cg_flush_pages;
/* Shared with the child: kB charged to the case's cgroup as it ended. */
static long *pt_cg_running;

/* Find cgroup2, turn its memory controller on for children, note home. */
static inline bool pt_cg_setup(void)
{
	char line[512], dev[64], dir[256], type[64], path[256];
	size_t i, pg = getpagesize();
	pid_t pid;
	FILE *f;

	if (pt_cg_flush_buf)
		return true;
	f = fopen("/proc/self/mounts", "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %255s %63s", dev, dir, type) == 3 &&
		    !strcmp(type, "cgroup2")) {
			snprintf(pt_cg_root, sizeof(pt_cg_root), "%s", dir);
			break;
		}
	fclose(f);
	if (!pt_cg_root[0])
		return false;
	f = fopen("/proc/self/cgroup", "r");
	if (!f)
		return false;
	path[0] = '\0';
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3) &&
		    sscanf(line + 3, "%255s", path) == 1)
			break;
	fclose(f);
	if (path[0] != '/')
		return false;
	snprintf(pt_cg_home, sizeof(pt_cg_home), "%s%s/cgroup.procs",
		 pt_cg_root, strcmp(path, "/") ? path : "");
	/* Already on (a systemd machine) or turned on here; checked per case. */
	snprintf(line, sizeof(line), "%s/cgroup.subtree_control", pt_cg_root);
	pt_write_file(line, "+memory");

	pt_cg_running = mmap(NULL, sizeof(*pt_cg_running),
			     PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			     -1, 0);
	if (pt_cg_running == MAP_FAILED)
		return false;
	/* Enough for pt_cg_flush() on any number of CPUs (256 on 2). */
	pt_cg_flush_pages = 64 * sysconf(_SC_NPROCESSORS_ONLN);
	if (pt_cg_flush_pages < 256)
		pt_cg_flush_pages = 256;
	pt_cg_flush_buf = mmap(NULL, pt_cg_flush_pages * pg,
			       PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pt_cg_flush_buf == MAP_FAILED) {
		pt_cg_flush_buf = NULL;
		return false;
	}
	/* 4 kB pages, so that no THP split or COW needs a new PTE table. */
	madvise(pt_cg_flush_buf, pt_cg_flush_pages * pg, MADV_NOHUGEPAGE);
	for (i = 0; i < pt_cg_flush_pages; i++)
		pt_cg_flush_buf[i * pg] = 1;
	/*
	 * A fork here, in our own cgroup, so that the first fork from inside
	 * a case's cgroup finds fork's code mapped: a page table our process
	 * allocates while it is in there would stay charged to the case.
	 */
	pid = fork();
	if (!pid)
		_exit(0);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return true;
}

/* A new cgroup for one case under the cgroup2 root; false if none. */
static inline bool pt_cg_new(void)
{
	static int seq;
	char stat[600];

	pt_cg_case[0] = '\0';
	if (!pt_cg_setup())
		return false;
	snprintf(pt_cg_case, sizeof(pt_cg_case), "%s/pmd_ptlock.%d.%d",
		 pt_cg_root, getpid(), seq++);
	snprintf(stat, sizeof(stat), "%s/memory.stat", pt_cg_case);
	if (mkdir(pt_cg_case, 0755) || access(stat, R_OK)) {
		rmdir(pt_cg_case);
		pt_cg_case[0] = '\0';
		return false;
	}
	return true;
}

/* Move this process into the case's cgroup ("0": the writer itself). */
static inline int pt_cg_enter(void)
{
	char procs[600];

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", pt_cg_case);
	return pt_write_file(procs, "0");
}

/*
 * Bring the case's cgroup's statistics up to date. They are per-CPU
 * deltas that a memory.stat read folds in only once more than 64
 * (MEMCG_CHARGE_BATCH) per online CPU have piled up, and otherwise every
 * 2 s. A child that joins the cgroup and dirties pt_cg_flush_pages
 * copy-on-write pages makes about five updates a page there (a fault
 * event, an rmap and an LRU count, and their undoing at exit), well past
 * that. Called from inside the case only: the child's own page tables are
 * charged to the case too, which there only adds to the count.
 */
static inline void pt_cg_flush(void)
{
	size_t i, pg = getpagesize();
	pid_t pid = fork();

	if (pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (!pid) {
		if (pt_cg_enter())
			_exit(1);
		for (i = 0; i < pt_cg_flush_pages; i++)
			pt_cg_flush_buf[i * pg] = 2;
		_exit(0);
	}
	waitpid(pid, NULL, 0);
}

/* kB of page tables memory.stat shows for the case's cgroup, or -1. */
static inline long pt_cg_pagetables_kb(void)
{
	char stat[600];
	long bytes;

	if (!pt_cg_case[0])
		return -1;
	snprintf(stat, sizeof(stat), "%s/memory.stat", pt_cg_case);
	bytes = pt_file_number(stat, "\npagetables ");
	return bytes < 0 ? -1 : bytes >> 10;
}

/*
 * Run fn(arg) in a child process and wait for it; return its wait status
 * and count the page tables left (struct pt_tables). The child is forked
 * from inside the case's cgroup, so its whole mm (the tables fork copies,
 * and the pgd, which 7.x counts) is charged there, and we leave again
 * before anything else; what the child forks stays in it. Once fn is done
 * the child brings the cgroup's statistics up to date and reads them:
 * that reading (t->running) includes every table the workload allocated,
 * and must be above zero. From then on only frees happen, so a later
 * reading that lags can only be too high: polling the cgroup until it
 * reads zero cannot hide a leak, which stays charged after the child is
 * gone. Freed tables may be uncounted only after an RCU grace period (x86
 * in 7.x frees every table from an RCU callback; in 6.12 only a collapse's
 * retracted PTE table, through pte_free_defer()), which a slow guest (TCG)
 * can delay past waitpid(). So the reading is retried, each time with the
 * statistics brought up to date (pt_cg_flushed_kb()), while it is above
 * zero, for up to PT_SETTLE_MS: only the wait is longer, a table still
 * counted after it fails the check as before.
 */
#define PT_SETTLE_MS	10000
#define PT_POLL_MS	50

/*
 * Wake khugepaged for a pass now. A process that exits while khugepaged's
 * scan is parked on its mm leaves the mm (and, where it is counted in
 * NR_PAGETABLE, its pgd: x86 in 7.x) to khugepaged's next pass, up to
 * scan_sleep_millisecs (10 s) or alloc_sleep_millisecs (60 s) away.
 * Writing either setting its own value wakes khugepaged at once.
 */
static inline void pt_kick_khugepaged(void)
{
	static const char *const knobs[] = {
		"/sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs",
		"/sys/kernel/mm/transparent_hugepage/khugepaged/alloc_sleep_millisecs",
	};
	char val[32];
	size_t i;
	FILE *f;

	for (i = 0; i < ARRAY_SIZE(knobs); i++) {
		f = fopen(knobs[i], "r");
		if (!f)
			continue;
		if (!fgets(val, sizeof(val), f))
			val[0] = '\0';
		fclose(f);
		if (val[0])
			pt_write_file(knobs[i], val);
	}
}

/*
 * Run on every CPU we may run on, one after the other. A CPU that went idle
 * after running the child keeps the child's mm as its lazy TLB mm, and with
 * it the mm's pgd, until it switches to another user mm; where the pgd is
 * counted in NR_PAGETABLE (x86 in 7.x) that is 4 kB of PageTables held for
 * as long as the CPU idles. Running there ourselves makes it switch, so the
 * reading is not a lazy-TLB reference.
 */
static inline void pt_visit_every_cpu(void)
{
	cpu_set_t all, one;
	int cpu;

	if (sched_getaffinity(0, sizeof(all), &all))
		return;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &all))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (!sched_setaffinity(0, sizeof(one), &one))
			sched_yield();
	}
	sched_setaffinity(0, sizeof(all), &all);
}

/* Milliseconds on the monotonic clock. */
static inline long pt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The case's cgroup's page tables in kB, its statistics brought up to date
 * first: without that, a few frees show only at the next periodic flush,
 * up to 2 s later. pt_cg_flush()'s child is forked outside the case's
 * cgroup, so its own page tables are charged elsewhere.
 */
static inline long pt_cg_flushed_kb(void)
{
	pt_cg_flush();
	return pt_cg_pagetables_kb();
}

/*
 * Read *val until it is at most base, for up to PT_SETTLE_MS of wall time
 * (visiting every CPU takes a while itself on a slow guest).
 */
static inline void pt_settle(long *val, long (*read)(void), long base)
{
	long start = pt_now_ms(), kicked = start - 1000;

	for (;;) {
		pt_visit_every_cpu();
		*val = read();
		if (*val <= base || pt_now_ms() - start >= PT_SETTLE_MS)
			break;
		if (pt_now_ms() - kicked >= 1000) {
			pt_kick_khugepaged();
			kicked = pt_now_ms();
		}
		usleep(PT_POLL_MS * 1000);
	}
}

static inline int pt_fork_counted(int (*fn)(void *arg), void *arg,
				  struct pt_tables *t)
{
	static bool said;
	bool cg = pt_cg_new();
	int status;
	pid_t pid;

	if (!said) {
		ksft_print_msg(cg ? "page tables counted in each case's own memory cgroup\n" :
			       "%s: leaks are not judged\n", PT_NO_CG_WHY);
		said = true;
	}

	fflush(stdout);
	t->cgroup = cg;
	t->running = -1;
	t->charged = -1;
	t->before = pt_pagetables_kb();
	if (cg) {
		*pt_cg_running = -1;
		if (pt_cg_enter())
			ksft_exit_fail_msg("cannot join the case's cgroup %s: %s\n",
					   pt_cg_case, strerror(errno));
	}
	pid = fork();
	if (pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (!pid) {
		status = fn(arg);
		/* The child's own tables, at least, are charged: see them. */
		if (cg) {
			pt_cg_flush();
			*pt_cg_running = pt_cg_pagetables_kb();
		}
		_exit(status);
	}
	if (cg && pt_write_file(pt_cg_home, "0"))
		ksft_exit_fail_msg("cannot leave the case's cgroup for %s: %s\n",
				   pt_cg_home, strerror(errno));
	if (waitpid(pid, &status, 0) != pid)
		ksft_exit_fail_msg("waitpid: %s\n", strerror(errno));
	if (cg) {
		t->running = *pt_cg_running;
		pt_settle(&t->charged, pt_cg_flushed_kb, 0);
		rmdir(pt_cg_case);
	}
	t->after = pt_pagetables_kb();
	return status;
}

/*
 * Whether the case, counted in its own cgroup, left no page table behind
 * (pt_tables_report() says why not); without one there is no verdict.
 */
static inline bool pt_tables_back(const struct pt_tables *t)
{
	return t->cgroup && t->running > 0 && t->charged == 0;
}

/* Say what the counts were when the case left a table behind. */
static inline void pt_tables_report(const char *what, const struct pt_tables *t)
{
	if (t->cgroup && t->running <= 0)
		ksft_print_msg("%s: the case's cgroup counted %ld kB of its child's page tables: it cannot see a leak\n",
			       what, t->running);
	else if (t->cgroup && t->charged)
		ksft_print_msg("%s: %ld kB of the case's page tables left (PageTables %ld kB before, %ld kB after)\n",
			       what, t->charged, t->before, t->after);
}

struct pt_case_call {
	int (*fn)(void *arg, struct pt_report *r);
	void *arg;
	struct pt_report *r;
};

static inline int pt_case_call(void *data)
{
	struct pt_case_call *c = data;

	return c->fn(c->arg, c->r);
}

/*
 * Run fn(arg, report) in a child; report its checks, whether it exited
 * cleanly, and whether PageTables came back to where it was before the
 * child ran (a deposited page table leaked by a zap, a move or a fork
 * stays counted there after the process is gone). One result each,
 * named "<what>: <check>".
 */
static inline void pt_run_case(const char *what, const char *const *names,
			       int (*fn)(void *arg, struct pt_report *r),
			       void *arg)
{
	struct pt_report *r = pt_report_new(names);
	struct pt_case_call call = { fn, arg, r };
	struct pt_tables t;
	int i, status;

	/* Every reading is taken before anything more is printed. */
	status = pt_fork_counted(pt_case_call, &call, &t);

	if (r->note[0])
		ksft_print_msg("%s: %s\n", what, r->note);
	for (i = 0; i < r->nr; i++) {
		struct pt_check *c = &r->check[i];

		if (c->failures)
			ksft_print_msg("%s: %s: %d failure(s), first: %s\n",
				       what, c->name, c->failures, c->first);
		ksft_test_result(!c->failures && WIFEXITED(status),
				 "%s: %s\n", what, c->name);
	}
	if (!WIFEXITED(status))
		ksft_print_msg("%s: workload killed by signal %d\n", what,
			       WTERMSIG(status));
	else if (WEXITSTATUS(status))
		ksft_print_msg("%s: workload setup failed (exit %d)\n", what,
			       WEXITSTATUS(status));
	ksft_test_result(WIFEXITED(status) && !WEXITSTATUS(status),
			 "%s: workload exited cleanly\n", what);

	pt_tables_report(what, &t);
	if (t.cgroup)
		ksft_test_result(pt_tables_back(&t),
				 "%s: PageTables back to its baseline\n", what);
	else
		ksft_test_result_skip("%s: PageTables back to its baseline: %s\n",
				      what, PT_NO_CG_WHY);
	munmap(r, sizeof(*r));
}

/* Report each result pt_run_case() would print for names as skipped, and why. */
static inline void pt_skip_case(const char *what, const char *const *names,
				const char *why)
{
	int i;

	for (i = 0; names[i]; i++)
		ksft_test_result_skip("%s: %s: %s\n", what, names[i], why);
	ksft_test_result_skip("%s: workload exited cleanly: %s\n", what, why);
	ksft_test_result_skip("%s: PageTables back to its baseline: %s\n", what, why);
}

/* Number of results pt_run_case() prints for names. */
static inline int pt_case_results(const char *const *names)
{
	int n = 0;

	while (names[n])
		n++;
	return n + 2;
}

/*
 * Background traffic: fault a THP in, walk it, check it and zap it, over
 * and over, until *stop; failures go to check number check of the report.
 * The first write is the THP fault, which runs under the VMA's own lock
 * when it can (lock_vma_under_rcu()); the walk and the zap (madvise())
 * take mmap_lock for read. pt_traffic_faults counts the faults done, so a
 * caller can tell how many completed while it held mmap_lock for write.
 */
static long pt_traffic_faults;

struct pt_traffic {
	pthread_t tid;
	char *chunk;
	int id;
	int check;
	struct pt_report *r;
	int *stop;
};

static inline void *pt_traffic(void *arg)
{
	struct pt_traffic *t = arg;
	uint64_t n = 0;

	while (!__atomic_load_n(t->stop, __ATOMIC_ACQUIRE)) {
		uint64_t seed = ((uint64_t)t->id << 40) | n++;
		long bad;

		__atomic_store_n(t->chunk, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&pt_traffic_faults, 1, __ATOMIC_RELAXED);
		pt_fill(t->chunk, pmdsize, seed);
		madvise(t->chunk, pmdsize, MADV_POPULATE_READ);
		bad = pt_verify(t->chunk, pmdsize, seed);
		pt_check(t->r, t->check, bad < 0, "traffic %d: word %ld differs",
			 t->id, bad);
		madvise(t->chunk, pmdsize, MADV_DONTNEED);
	}
	return NULL;
}

/* Traffic faults completed so far. */
static inline long pt_traffic_done(void)
{
	return __atomic_load_n(&pt_traffic_faults, __ATOMIC_RELAXED);
}

/*
 * Make [addr, addr + len) VMAs of their own that no neighbour merges with
 * (VM_DONTDUMP differs), so that an mremap() or a fork() working on the
 * neighbours does not write-lock them: their faults then run under their
 * own VMA lock while mmap_lock is held for write.
 */
static inline int pt_own_vmas(void *addr, size_t len)
{
	return madvise(addr, len, MADV_DONTDUMP);
}

/*
 * Traffic over two PMD tables at @base (1 GiB each), as the move tests lay
 * it out: chunk i in the first table for even i, in the second for odd i,
 * from chunk PT_TRAFFIC_SLOT of each table on.
 */
#define PT_TRAFFIC_SLOT	256

static inline char *pt_two_tables_traffic_chunk(int i, void *base)
{
	return (char *)base + (i % 2) * PT_GIB + (PT_TRAFFIC_SLOT + i) * pmdsize;
}

/* Both tables' traffic ranges made VMAs of their own (pt_own_vmas()). */
static inline int pt_two_tables_traffic_vmas(char *base)
{
	size_t len = PT_GIB - PT_TRAFFIC_SLOT * pmdsize;

	return pt_own_vmas(base + PT_TRAFFIC_SLOT * pmdsize, len) ||
	       pt_own_vmas(base + PT_GIB + PT_TRAFFIC_SLOT * pmdsize, len);
}

/* Start nr traffic threads on the chunks chunk(i); NULL on failure. */
static inline struct pt_traffic *pt_traffic_start(int nr, char *(*chunk)(int i, void *arg),
						  void *arg, int check,
						  struct pt_report *r,
						  int *stop)
{
	struct pt_traffic *t = calloc(nr, sizeof(*t));
	int i;

	if (!t)
		return NULL;
	for (i = 0; i < nr; i++) {
		t[i].id = i;
		t[i].chunk = chunk(i, arg);
		t[i].check = check;
		t[i].r = r;
		t[i].stop = stop;
		if (pthread_create(&t[i].tid, NULL, pt_traffic, &t[i]))
			return NULL;
	}
	return t;
}

static inline void pt_traffic_stop(struct pt_traffic *t, int nr, int *stop)
{
	int i;

	__atomic_store_n(stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < nr; i++)
		pthread_join(t[i].tid, NULL);
	free(t);
}

/* Threads: the -t argument, else 4 per online CPU (the seed's many faulters). */
static inline int pt_threads(int argc, char **argv, int *rounds)
{
	int opt, t = 4 * sysconf(_SC_NPROCESSORS_ONLN);

	while ((opt = getopt(argc, argv, "t:r:")) != -1) {
		switch (opt) {
		case 't':
			t = atoi(optarg);
			break;
		case 'r':
			*rounds = atoi(optarg);
			break;
		default:
			ksft_exit_fail_msg("usage: %s [-t threads] [-r rounds]\n", argv[0]);
		}
	}
	if (t < 2 || t > 64 || *rounds < 1)
		ksft_exit_fail_msg("threads must be 2..64 and rounds >= 1\n");
	return t;
}

#endif /* __PMD_PTLOCK_H__ */
