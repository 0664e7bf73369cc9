// SPDX-License-Identifier: GPL-2.0
/*
 * Every path that deposits or withdraws a THP's page table, or changes a
 * huge PMD under its PMD table's lock, driven on its own: once with all
 * THPs in one PMD table (one 1 GiB region) and once with each THP in its
 * own PMD table (its own 1 GiB region).
 *
 * An anonymous huge PMD (a THP or the huge zero page) always has one PTE
 * table deposited in its PMD table's queue (pgtable_trans_huge_deposit()
 * under pmd_lock(); pmd_huge_pte() is per table with split PMD locks),
 * counted in the mm's pgtables_bytes, which /proc/self/status shows as
 * VmPTE. Each case runs in a fresh child and checks, step by step, what
 * 6.12 and 7.x guarantee: how each 2 MiB chunk is mapped (PAGEMAP_SCAN reports
 * PAGE_IS_HUGE only for a huge PMD), its data, and VmPTE moving by exactly
 * one page per THP where a table is deposited or freed, and not at all
 * where a deposit moves between tables or becomes the PTE table of a split
 * PMD. Once the child is gone, no page table may stay charged to the
 * case's memory cgroup (a table leaked from a queue stays counted there), and a
 * withdraw from an empty queue (a deposit lost or left in another table)
 * is a NULL dereference in the kernel, which kills the child or the
 * machine. Every PMD table a case uses exists before it starts (a small
 * page is kept mapped at the start of each 1 GiB region), so page tables
 * counted in VmPTE come and go only with the THPs.
 *
 * One result per case; a failure prints what was found.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <sys/utsname.h>
#include "pmd_ptlock.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif

#define NR_THP		4	/* THPs per case (the layouts' names say 4) */
#define WITHIN_SLOT	64	/* mremap destinations within a region */
#define HOLE_PAGE	100	/* the page a partial operation hits */

struct layout {
	const char *name;
	bool spread;		/* each THP in its own PMD table */
};

static const struct layout layouts[] = {
	{ "4 chunks in one PMD table", false },
	{ "4 chunks in 4 PMD tables", true },
};

/* What a case found, in memory shared with the parent. */
#define KEPT	6
struct verdict {
	int failures;
	char msg[KEPT][200];
};

struct ctx {
	struct verdict *v;
	char *chunk[NR_THP];	/* 2 MiB-aligned, one THP each */
	char *within[NR_THP];	/* mremap destination in the same table */
	char *across[NR_THP];	/* mremap destination in another table */
	long vmpte;		/* VmPTE in kB when last checked */
};

static size_t pagesize;
static bool zero_page;
static bool collapse;	/* MADV_COLLAPSE exists (6.1 and later) */

static void expect(struct ctx *c, bool ok, const char *fmt, ...)
{
	va_list ap;

	if (ok)
		return;
	if (c->v->failures < KEPT) {
		va_start(ap, fmt);
		vsnprintf(c->v->msg[c->v->failures], sizeof(c->v->msg[0]), fmt, ap);
		va_end(ap);
	}
	c->v->failures++;
}

/* One word per page, different in every page of every chunk. */
static uint64_t seed_of(int i, int gen)
{
	return 0x5eed000000000000ULL | (uint64_t)gen << 40 | (uint64_t)i << 32;
}

static void fill(char *p, uint64_t seed)
{
	size_t off;

	for (off = 0; off < pmdsize; off += pagesize)
		*(uint64_t *)(p + off) = seed | off;
}

/* Offset of the first page not holding fill()'s word (hole skipped), or -1. */
static long verify(const char *p, uint64_t seed, long hole)
{
	size_t off;

	for (off = 0; off < pmdsize; off += pagesize)
		if ((long)off != hole && *(const uint64_t *)(p + off) != (seed | off))
			return off;
	return -1;
}

static void expect_data(struct ctx *c, int i, const char *p, uint64_t seed,
			long hole, const char *when)
{
	long bad = verify(p, seed, hole);

	expect(c, bad < 0, "%s: chunk %d holds the wrong data at +%#lx", when, i, bad);
}

static void expect_mapped(struct ctx *c, int i, char *p, enum pt_map want,
			  const char *when)
{
	enum pt_map m = pt_map_of(p, pmdsize);

	expect(c, m == want, "%s: chunk %d is %s, want %s", when, i,
	       pt_map_name(m), pt_map_names[want]);
}

/* After a split: no huge PMD, every page but the hole present by PTEs. */
static void expect_split(struct ctx *c, int i, char *p, bool hole_mapped,
			 bool zero, const char *when)
{
	size_t want = pmdsize - (hole_mapped ? 0 : pagesize);
	struct pt_scan s;

	if (pt_scan(p, pmdsize, &s)) {
		expect(c, false, "%s: chunk %d: PAGEMAP_SCAN: %s", when, i, strerror(errno));
		return;
	}
	expect(c, !s.huge && s.present == want && s.zero == (zero ? want : 0),
	       "%s: chunk %d has %zu kB mapped by a huge PMD, %zu kB present (%zu kB zero page), want 0, %zu kB (%zu kB)",
	       when, i, s.huge >> 10, s.present >> 10, s.zero >> 10, want >> 10,
	       zero ? want >> 10 : 0);
}

/* VmPTE must have moved by exactly pages page tables since the last look. */
static void expect_vmpte(struct ctx *c, long pages, const char *when)
{
	long now = pt_vmpte_kb(), want = pages * (long)(pagesize >> 10);

	expect(c, c->vmpte >= 0 && now >= 0 && now - c->vmpte == want,
	       "%s: VmPTE moved by %+ld kB, want %+ld kB", when, now - c->vmpte, want);
	c->vmpte = now;
}

static void madvise_each(struct ctx *c, char **at, size_t off, size_t len,
			 int advice, const char *what)
{
	int i;

	for (i = 0; i < NR_THP; i++)
		expect(c, !madvise(at[i] + off, len, advice), "%s of chunk %d: %s",
		       what, i, strerror(errno));
}

static void unmap_chunks(struct ctx *c, char **at)
{
	int i;

	for (i = 0; i < NR_THP; i++)
		expect(c, !munmap(at[i], pmdsize), "munmap of chunk %d: %s", i,
		       strerror(errno));
}

/*
 * Write every chunk: one THP fault each. __do_huge_pmd_anonymous_page()
 * deposits the PTE table it preallocated under pmd_lock() and counts it
 * (mm_inc_nr_ptes()).
 */
static void fault_thps(struct ctx *c)
{
	int i;

	for (i = 0; i < NR_THP; i++)
		fill(c->chunk[i], seed_of(i, 0));
	/* Each THP fault deposits one page table: VmPTE up one page per THP. */
	expect_vmpte(c, NR_THP, "after the THP write faults");
	/* Each chunk is one huge PMD (PAGE_IS_HUGE) holding what was written. */
	for (i = 0; i < NR_THP; i++) {
		expect_mapped(c, i, c->chunk[i], PT_MAP_THP, "after the write fault");
		expect_data(c, i, c->chunk[i], seed_of(i, 0), -1, "after the write fault");
	}
}

/*
 * Read every chunk: do_huge_pmd_anonymous_page() maps the huge zero page
 * and set_huge_zero_folio() deposits a page table and counts it.
 */
static void fault_zero(struct ctx *c)
{
	bool zero[NR_THP];
	int i;

	/* Reading a chunk faults it in. */
	for (i = 0; i < NR_THP; i++)
		zero[i] = pt_all_zero(c->chunk[i], pmdsize);
	/* Each huge zero PMD deposits one page table: VmPTE up one page each. */
	expect_vmpte(c, NR_THP, "after the read faults");
	/* Each chunk is one huge PMD of the huge zero page (PAGE_IS_PFNZERO). */
	for (i = 0; i < NR_THP; i++) {
		expect_mapped(c, i, c->chunk[i], PT_MAP_HUGE_ZERO, "after the read fault");
		expect(c, zero[i], "after the read fault: chunk %d is not zeroes", i);
	}
}

/* The case ends here: exit_mmap() zaps the THPs and frees the deposits. */
static void path_thp_fault(struct ctx *c)
{
	fault_thps(c);
}

static void path_zero_fault(struct ctx *c)
{
	fault_zero(c);
}

static void zap_dontneed(struct ctx *c, bool zero)
{
	int i;

	if (zero)
		fault_zero(c);
	else
		fault_thps(c);
	madvise_each(c, c->chunk, 0, pmdsize, MADV_DONTNEED, "MADV_DONTNEED");
	/* zap_huge_pmd() withdraws each deposit and frees it: down one page each. */
	expect_vmpte(c, -NR_THP, "after MADV_DONTNEED");
	/* The huge PMD is cleared: nothing is left mapped. */
	for (i = 0; i < NR_THP; i++)
		expect_mapped(c, i, c->chunk[i], PT_MAP_NONE, "after MADV_DONTNEED");
}

static void path_thp_dontneed(struct ctx *c)
{
	zap_dontneed(c, false);
}

static void path_zero_dontneed(struct ctx *c)
{
	zap_dontneed(c, true);
}

static void path_thp_munmap(struct ctx *c)
{
	const char *left;
	int i;

	fault_thps(c);
	unmap_chunks(c, c->chunk);
	/*
	 * zap_huge_pmd() withdraws each deposit and frees it; free_pgtables()
	 * frees nothing more (the PMD table has other users): down one page each.
	 */
	expect_vmpte(c, -NR_THP, "after munmap");
	/* The huge PMD is cleared, not only the VMA gone. */
	for (i = 0; i < NR_THP; i++) {
		left = pt_range_left_empty(c->chunk[i], pmdsize);
		expect(c, !left, "after munmap of chunk %d: %s", i, left);
	}
}

/*
 * In the child of a fork: copy_huge_pmd() mapped each chunk by a huge PMD
 * in this process's own page tables, with a page table deposited in this
 * process's PMD table; zapping the copies withdraws and frees those.
 */
static int fork_child(struct ctx *c, bool zero)
{
	int i;

	c->vmpte = pt_vmpte_kb();
	/* Each copy is a huge PMD of this process, with the parent's data. */
	for (i = 0; i < NR_THP; i++) {
		expect_mapped(c, i, c->chunk[i], zero ? PT_MAP_HUGE_ZERO : PT_MAP_THP,
			      "in the child");
		if (zero)
			expect(c, pt_all_zero(c->chunk[i], pmdsize),
			       "in the child: chunk %d is not zeroes", i);
		else
			expect_data(c, i, c->chunk[i], seed_of(i, 0), -1, "in the child");
	}
	madvise_each(c, c->chunk, 0, pmdsize, MADV_DONTNEED, "MADV_DONTNEED in the child");
	/* Each copy had its own deposit in the child: down one page each. */
	expect_vmpte(c, -NR_THP, "in the child, after MADV_DONTNEED of the copies");
	return 0;
}

static void fork_huge(struct ctx *c, bool zero)
{
	int i, status = 0;
	pid_t pid;

	if (zero)
		fault_zero(c);
	else
		fault_thps(c);
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		expect(c, false, "fork: %s", strerror(errno));
		return;
	}
	if (!pid)
		_exit(fork_child(c, zero));
	expect(c, waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       !WEXITSTATUS(status), "the child of fork died (status %#x)", status);
	/* copy_huge_pmd() deposits in the child's table only: parent unchanged. */
	expect_vmpte(c, 0, "in the parent, after fork");
	/* The parent keeps its huge PMDs (write-protected now) and its data. */
	for (i = 0; i < NR_THP; i++) {
		expect_mapped(c, i, c->chunk[i], zero ? PT_MAP_HUGE_ZERO : PT_MAP_THP,
			      "in the parent, after fork");
		if (!zero)
			expect_data(c, i, c->chunk[i], seed_of(i, 0), -1,
				    "in the parent, after fork");
	}
	madvise_each(c, c->chunk, 0, pmdsize, MADV_DONTNEED, "MADV_DONTNEED in the parent");
	/* The parent's own deposits are still in its table: down one page each. */
	expect_vmpte(c, -NR_THP, "in the parent, after MADV_DONTNEED");
}

static void path_fork_thp(struct ctx *c)
{
	fork_huge(c, false);
}

static void path_fork_zero(struct ctx *c)
{
	fork_huge(c, true);
}

static void move(struct ctx *c, char **to, const char *where)
{
	unsigned long pfn[NR_THP];
	const char *left;
	char when[64];
	int i;

	fault_thps(c);
	for (i = 0; i < NR_THP; i++)
		pfn[i] = pt_pfn(c->chunk[i]);
	for (i = 0; i < NR_THP; i++)
		expect(c, mremap(c->chunk[i], pmdsize, pmdsize,
				 MREMAP_MAYMOVE | MREMAP_FIXED, to[i]) == to[i],
		       "mremap of chunk %d %s: %s", i, where, strerror(errno));
	snprintf(when, sizeof(when), "after mremap %s", where);
	/*
	 * move_huge_pmd() moves the huge PMD and, between two tables, the
	 * deposit from the old table's queue to the new one's: nothing is
	 * allocated or freed, VmPTE unchanged.
	 */
	expect_vmpte(c, 0, when);
	/* Same THP (PFN) and data under one huge PMD; nothing at the old address. */
	for (i = 0; i < NR_THP; i++) {
		unsigned long now = pt_pfn(to[i]);

		expect_mapped(c, i, to[i], PT_MAP_THP, when);
		expect(c, now == pfn[i], "%s: chunk %d pfn %lx -> %lx (copied)", when,
		       i, pfn[i], now);
		expect_data(c, i, to[i], seed_of(i, 0), -1, when);
		left = pt_range_left_empty(c->chunk[i], pmdsize);
		expect(c, !left, "%s: at the old address of chunk %d, %s", when, i, left);
	}
	unmap_chunks(c, to);
	/*
	 * zap_huge_pmd() withdraws from the new table's queue: a deposit left
	 * in the old table makes that an empty queue (NULL dereference).
	 */
	expect_vmpte(c, -NR_THP, "after munmap of the moved THPs");
}

static void path_mremap_within(struct ctx *c)
{
	move(c, c->within, "within the PMD table");
}

static void path_mremap_across(struct ctx *c)
{
	move(c, c->across, "to another PMD table");
}

enum partial { P_MUNMAP, P_MPROTECT, P_DONTNEED };

/*
 * Split each huge PMD by an operation on one page of it: the VMA split of
 * munmap() and mprotect() (vma_adjust_trans_huge()) and the partial zap of
 * MADV_DONTNEED (zap_pmd_range()) call __split_huge_pmd(), which under
 * pmd_lock() withdraws the deposit and makes it the PTE table mapping the
 * THP's pages (or the zero page) one by one.
 */
static void split_chunks(struct ctx *c, enum partial how, bool zero)
{
	static const char *const what[] = {
		[P_MUNMAP] = "munmap", [P_MPROTECT] = "mprotect",
		[P_DONTNEED] = "MADV_DONTNEED",
	};
	long hole = HOLE_PAGE * pagesize;
	char when[64];
	int i;

	if (zero)
		fault_zero(c);
	else
		fault_thps(c);
	for (i = 0; i < NR_THP; i++) {
		char *p = c->chunk[i] + hole;
		int ret = how == P_MUNMAP ? munmap(p, pagesize) :
			  how == P_MPROTECT ? mprotect(p, pagesize, PROT_READ) :
			  madvise(p, pagesize, MADV_DONTNEED);

		expect(c, !ret, "%s of one page of chunk %d: %s", what[how], i,
		       strerror(errno));
	}
	snprintf(when, sizeof(when), "after %s of one page", what[how]);
	/* The deposit became the PTE table: nothing allocated, VmPTE unchanged. */
	expect_vmpte(c, 0, when);
	/* No huge PMD: every page present by a PTE but the one removed; data kept. */
	for (i = 0; i < NR_THP; i++) {
		expect_split(c, i, c->chunk[i], how == P_MPROTECT, zero, when);
		if (zero)
			expect(c, pt_all_zero(c->chunk[i], hole) &&
			       pt_all_zero(c->chunk[i] + hole + pagesize,
					   pmdsize - hole - pagesize),
			       "%s: chunk %d is not zeroes", when, i);
		else
			expect_data(c, i, c->chunk[i], seed_of(i, 0),
				    how == P_MPROTECT ? -1 : hole, when);
		if (how == P_DONTNEED)
			expect(c, pt_all_zero(c->chunk[i] + hole, pagesize),
			       "%s: the zapped page of chunk %d is not zeroes", when, i);
	}
	/* Reading faults into the existing PTE tables only. */
	expect_vmpte(c, 0, "after reading the split chunks");
	unmap_chunks(c, c->chunk);
	/* free_pgtables() frees the PTE tables the deposits became. */
	expect_vmpte(c, -NR_THP, "after munmap of the split chunks");
}

static void path_split_munmap(struct ctx *c)
{
	split_chunks(c, P_MUNMAP, false);
}

static void path_split_mprotect(struct ctx *c)
{
	split_chunks(c, P_MPROTECT, false);
}

static void path_split_dontneed(struct ctx *c)
{
	split_chunks(c, P_DONTNEED, false);
}

static void path_split_zero(struct ctx *c)
{
	split_chunks(c, P_DONTNEED, true);
}

/*
 * MADV_COLLAPSE of small pages: collapse_huge_page() copies them into a
 * new THP and, under pmd_lock(), deposits the old PTE table (emptied) in
 * the PMD table's queue, without counting it again.
 */
static void path_collapse(struct ctx *c)
{
	int i, tries, ret;

	madvise_each(c, c->chunk, 0, pmdsize, MADV_NOHUGEPAGE, "MADV_NOHUGEPAGE");
	for (i = 0; i < NR_THP; i++)
		fill(c->chunk[i], seed_of(i, 0));
	/* 512 small page faults each, in one new PTE table each. */
	expect_vmpte(c, NR_THP, "after faulting small pages");
	/* MADV_NOHUGEPAGE: small pages, mapped by PTEs. */
	for (i = 0; i < NR_THP; i++)
		expect_mapped(c, i, c->chunk[i], PT_MAP_PTE, "after faulting small pages");
	madvise_each(c, c->chunk, 0, pmdsize, MADV_HUGEPAGE, "MADV_HUGEPAGE");
	for (i = 0; i < NR_THP; i++) {
		for (tries = 0; tries < 5; tries++) {
			ret = madvise(c->chunk[i], pmdsize, MADV_COLLAPSE);
			if (!ret || errno != EAGAIN)
				break;
			usleep(10 * 1000);
		}
		expect(c, !ret, "MADV_COLLAPSE of chunk %d: %s", i, strerror(errno));
	}
	/* The old PTE table is now the deposit: VmPTE unchanged. */
	expect_vmpte(c, 0, "after MADV_COLLAPSE");
	/* One huge PMD per chunk now, holding the small pages' data. */
	for (i = 0; i < NR_THP; i++) {
		expect_mapped(c, i, c->chunk[i], PT_MAP_THP, "after MADV_COLLAPSE");
		expect_data(c, i, c->chunk[i], seed_of(i, 0), -1, "after MADV_COLLAPSE");
	}
	madvise_each(c, c->chunk, 0, pmdsize, MADV_DONTNEED, "MADV_DONTNEED");
	/* zap_huge_pmd() withdraws the old PTE table and frees it. */
	expect_vmpte(c, -NR_THP, "after MADV_DONTNEED of the collapsed THPs");
	/* The huge PMD is cleared: nothing is left mapped. */
	for (i = 0; i < NR_THP; i++)
		expect_mapped(c, i, c->chunk[i], PT_MAP_NONE, "after MADV_DONTNEED");
}

/*
 * MADV_FREE of a whole THP: madvise_free_huge_pmd(), under the PMD lock,
 * cleans the huge PMD and marks the THP lazy-free in place; its deposit
 * stays queued (the THP is dropped only by reclaim, later).
 */
static void path_free(struct ctx *c)
{
	long lazy = pt_proc_kb("/proc/self/smaps_rollup", "LazyFree"), now;
	int i;

	fault_thps(c);
	madvise_each(c, c->chunk, 0, pmdsize, MADV_FREE, "MADV_FREE");
	now = pt_proc_kb("/proc/self/smaps_rollup", "LazyFree");
	/* folio_mark_lazyfree() on a clean THP: all of it counts as LazyFree. */
	expect(c, lazy >= 0 && now - lazy == NR_THP * (long)(pmdsize >> 10),
	       "after MADV_FREE: LazyFree in smaps_rollup moved by %+ld kB, want %+ld kB",
	       now - lazy, NR_THP * (long)(pmdsize >> 10));
	/* No split, no zap: VmPTE unchanged. */
	expect_vmpte(c, 0, "after MADV_FREE");
	/* Still one huge PMD each. */
	for (i = 0; i < NR_THP; i++)
		expect_mapped(c, i, c->chunk[i], PT_MAP_THP, "after MADV_FREE");
	unmap_chunks(c, c->chunk);
	/* zap_huge_pmd() withdraws each deposit and frees it. */
	expect_vmpte(c, -NR_THP, "after munmap of the lazy-free THPs");
}

static sigjmp_buf segv_env;

static void on_segv(int sig)
{
	siglongjmp(segv_env, sig);
}

/* Does a write to p fault (SIGSEGV)? */
static bool write_faults(char *p)
{
	struct sigaction sa = { .sa_handler = on_segv }, old;

	sigaction(SIGSEGV, &sa, &old);
	if (sigsetjmp(segv_env, 1)) {
		sigaction(SIGSEGV, &old, NULL);
		return true;
	}
	__atomic_store_n(p, 1, __ATOMIC_SEQ_CST);
	sigaction(SIGSEGV, &old, NULL);
	return false;
}

/*
 * mprotect() of a whole THP: change_pmd_range() hands the huge PMD to
 * change_huge_pmd(), which rewrites it in place under the PMD lock: no
 * split, the deposit stays queued.
 */
static void path_mprotect(struct ctx *c)
{
	int i;

	fault_thps(c);
	for (i = 0; i < NR_THP; i++)
		expect(c, !mprotect(c->chunk[i], pmdsize, PROT_READ),
		       "mprotect(PROT_READ) of chunk %d: %s", i, strerror(errno));
	/* change_huge_pmd() allocates and frees nothing: VmPTE unchanged. */
	expect_vmpte(c, 0, "after mprotect(PROT_READ)");
	/* Still one huge PMD each, same data, and now read-only. */
	for (i = 0; i < NR_THP; i++) {
		expect_mapped(c, i, c->chunk[i], PT_MAP_THP, "after mprotect(PROT_READ)");
		expect_data(c, i, c->chunk[i], seed_of(i, 0), -1, "after mprotect(PROT_READ)");
		expect(c, write_faults(c->chunk[i] + HOLE_PAGE * pagesize),
		       "after mprotect(PROT_READ): a write to chunk %d went through", i);
	}
	for (i = 0; i < NR_THP; i++)
		expect(c, !mprotect(c->chunk[i], pmdsize, PROT_READ | PROT_WRITE),
		       "mprotect(PROT_READ | PROT_WRITE) of chunk %d: %s", i, strerror(errno));
	for (i = 0; i < NR_THP; i++)
		fill(c->chunk[i], seed_of(i, 1));
	/* Writable again in place (or on the write fault, reusing the THP). */
	expect_vmpte(c, 0, "after mprotect(PROT_READ | PROT_WRITE) and a write");
	for (i = 0; i < NR_THP; i++) {
		expect_mapped(c, i, c->chunk[i], PT_MAP_THP, "after writing it again");
		expect_data(c, i, c->chunk[i], seed_of(i, 1), -1, "after writing it again");
	}
	unmap_chunks(c, c->chunk);
	/* zap_huge_pmd() withdraws each deposit and frees it. */
	expect_vmpte(c, -NR_THP, "after munmap");
}

struct path {
	const char *name;
	void (*run)(struct ctx *c);
	bool zero;		/* needs the huge zero page */
	bool collapse;		/* needs MADV_COLLAPSE */
};

static const struct path paths[] = {
	{
		.run = path_thp_fault,
		.name =
			"a THP write fault maps a huge PMD and deposits a page table, which exit frees",
	},
	{
		.run = path_zero_fault,
		.zero = true,
		.name =
			"a read fault maps the huge zero page by a huge PMD and deposits a page table, which exit frees",
	},
	{
		.run = path_thp_dontneed,
		.name =
			"MADV_DONTNEED of a whole THP withdraws its deposit and frees it",
	},
	{
		.run = path_zero_dontneed,
		.zero = true,
		.name =
			"MADV_DONTNEED of a huge zero PMD withdraws its deposit and frees it",
	},
	{
		.run = path_thp_munmap,
		.name =
			"munmap of a whole THP withdraws its deposit and frees it, leaving no entry",
	},
	{
		.run = path_fork_thp,
		.name =
			"fork copies each THP by a huge PMD with a deposit of the child's own",
	},
	{
		.run = path_fork_zero,
		.zero = true,
		.name =
			"fork copies each huge zero PMD with a deposit of the child's own",
	},
	{
		.run = path_mremap_within,
		.name =
			"mremap within a PMD table moves each THP's huge PMD, its deposit staying in that table",
	},
	{
		.run = path_mremap_across,
		.name =
			"mremap to another PMD table moves each THP's huge PMD and its deposit to the new table",
	},
	{
		.run = path_split_munmap,
		.name =
			"munmap of one page splits each THP's huge PMD, its deposit becoming the PTE table",
	},
	{
		.run = path_split_mprotect,
		.name =
			"mprotect of one page splits each THP's huge PMD, its deposit becoming the PTE table",
	},
	{
		.run = path_split_dontneed,
		.name =
			"MADV_DONTNEED of one page splits each THP's huge PMD, its deposit becoming the PTE table",
	},
	{
		.run = path_split_zero,
		.zero = true,
		.name =
			"MADV_DONTNEED of one page splits each huge zero PMD, its deposit becoming a PTE table of zero pages",
	},
	{
		.run = path_collapse,
		.collapse = true,
		.name =
			"MADV_COLLAPSE of small pages deposits their old PTE table under the new THP's huge PMD",
	},
	{
		.run = path_free,
		.name =
			"MADV_FREE of a whole THP marks it lazy-free in place, its huge PMD and deposit staying",
	},
	{
		.run = path_mprotect,
		.name =
			"mprotect of a whole THP changes its huge PMD in place, no split, its deposit staying",
	},
};

/*
 * The address space of a case. One table: region A (1 GiB) holds the
 * chunks and the destinations within their table, region B the
 * destinations in another table. Spread: chunk i in region i, its
 * destination within its table in region i too, its destination in
 * another table in region NR_THP + i. A small page at the start of every
 * region keeps each PMD table (and the PUD above) in place throughout.
 */
static int run(const struct path *p, const struct layout *l, struct verdict *v)
{
	size_t regions = l->spread ? 2 * NR_THP : 2, r;
	struct ctx c = { .v = v };
	char *base;
	int i;

	base = pt_map_aligned(regions * PT_GIB, PT_GIB, true);
	if (!base)
		return 2;
	for (r = 0; r < regions; r++) {
		char *anchor = base + r * PT_GIB;

		if (madvise(anchor, pagesize, MADV_NOHUGEPAGE))
			return 2;
		*anchor = 1;
	}
	for (i = 0; i < NR_THP; i++) {
		char *region = base + (l->spread ? i * PT_GIB : 0);

		c.chunk[i] = region + (1 + i) * pmdsize;
		c.within[i] = region + (WITHIN_SLOT + i) * pmdsize;
		c.across[i] = base + (l->spread ? NR_THP + i : 1) * PT_GIB +
			      (1 + i) * pmdsize;
	}
	c.vmpte = pt_vmpte_kb();
	p->run(&c);
	return 0;
}

struct run_call {
	const struct path *p;
	const struct layout *l;
	struct verdict *v;
};

static int run_call(void *data)
{
	struct run_call *c = data;

	return run(c->p, c->l, c->v);
}

static void run_case(const struct path *p, const struct layout *l)
{
	struct run_call call;
	struct verdict *v;
	struct pt_tables t;
	int i, status;
	char name[200];
	bool ok;

	snprintf(name, sizeof(name), "%s, %s", p->name, l->name);
	if (p->zero && !zero_page) {
		ksft_test_result_skip("%s: the huge zero page is off (use_zero_page is not 1)\n",
				      name);
		return;
	}
	if (p->collapse && !collapse) {
		ksft_test_result_skip("%s: no MADV_COLLAPSE before Linux 6.1\n", name);
		return;
	}
	v = mmap(NULL, sizeof(*v), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (v == MAP_FAILED)
		ksft_exit_fail_msg("mmap of the shared verdict: %s\n", strerror(errno));
	memset(v, 0, sizeof(*v));

	call.p = p;
	call.l = l;
	call.v = v;
	status = pt_fork_counted(run_call, &call, &t);

	for (i = 0; i < v->failures && i < KEPT; i++)
		ksft_print_msg("%s\n", v->msg[i]);
	if (v->failures > KEPT)
		ksft_print_msg("... and %d more failures\n", v->failures - KEPT);
	if (!WIFEXITED(status))
		ksft_print_msg("the case was killed by signal %d\n", WTERMSIG(status));
	else if (WEXITSTATUS(status))
		ksft_print_msg("the case could not set up (exit %d)\n", WEXITSTATUS(status));
	/* A table leaked, deposited or not, stays counted. */
	pt_tables_report(name, &t);
	ok = WIFEXITED(status) && !WEXITSTATUS(status) && !v->failures;
	if (ok && !t.cgroup)
		ksft_test_result_skip("%s: %s\n", name, PT_NO_CG_WHY);
	else
		ksft_test_result(ok && pt_tables_back(&t), "%s\n", name);
	munmap(v, sizeof(*v));
}

int main(void)
{
	int major, minor;
	struct utsname u;
	size_t i, j;

	ksft_print_header();
	pagesize = getpagesize();
	pt_skip_unless_thp(true);
	pt_khugepaged_leave_holes();
	zero_page = pt_use_zero_page();
	if (!uname(&u) && sscanf(u.release, "%d.%d", &major, &minor) == 2)
		collapse = major > 6 || (major == 6 && minor >= 1);
	ksft_set_plan(ARRAY_SIZE(paths) * ARRAY_SIZE(layouts));
	for (i = 0; i < ARRAY_SIZE(paths); i++)
		for (j = 0; j < ARRAY_SIZE(layouts); j++)
			run_case(&paths[i], &layouts[j]);
	ksft_finished();
}
