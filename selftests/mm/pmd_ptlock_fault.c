// SPDX-License-Identifier: GPL-2.0
/*
 * Concurrent THP fault hammer for the split PMD page-table lock.
 *
 * T threads (default 4 per CPU) each own one 2 MiB chunk and, round after
 * round, fault it in as a THP (__do_huge_pmd_anonymous_page() deposits a
 * page table under the PMD lock), walk it with MADV_POPULATE_READ and
 * mincore() (pmd_trans_huge_lock() on every call), check it, and zap it with
 * MADV_DONTNEED or munmap() (zap_huge_pmd() withdraws the deposit), while
 * the others do the same. Two layouts: every chunk inside one 1 GiB region
 * (one PMD table, one lock for all threads) and each chunk in its own 1 GiB
 * region (a PMD table and a lock each).
 *
 * Catches: deposits or withdraws that race on a table's queue (lost or
 * doubled page tables: PageTables not back to baseline, list corruption),
 * faults that land in the wrong table or map the wrong page (data), THP
 * faults that fall back to small pages or split under contention (huge:
 * PAGEMAP_SCAN must report each chunk mapped by one huge PMD), a zap that
 * leaves an entry behind (gone), counters that lie (thp_fault_alloc), and
 * a fault or zap that deposits or withdraws a page table without counting
 * it in the mm's pgtables_bytes (VmPTE).
 */
#define _GNU_SOURCE
#include "pmd_ptlock.h"

enum zap { ZAP_DONTNEED, ZAP_MUNMAP };

struct layout {
	const char *name;
	bool spread;		/* one 1 GiB region (PMD table) per chunk */
	enum zap zap;
};

static const struct layout layouts[] = {
	{ "one PMD table, zap by MADV_DONTNEED", false, ZAP_DONTNEED },
	{ "one PMD table, zap by munmap", false, ZAP_MUNMAP },
	{ "a PMD table per thread, zap by MADV_DONTNEED", true, ZAP_DONTNEED },
	{ "a PMD table per thread, zap by munmap", true, ZAP_MUNMAP },
};

enum { C_DATA, C_HUGE, C_ZAPPED, C_COUNTER, C_VMPTE };
static const char *const checks[] = {
	[C_DATA] = "every chunk holds its own data",
	[C_HUGE] = "every faulted chunk is a THP mapped by a huge PMD",
	[C_ZAPPED] = "a zapped chunk has nothing left mapped",
	[C_COUNTER] = "thp_fault_alloc rises at least once per THP fault (a system-wide count)",
	[C_VMPTE] = "VmPTE counts the page table each THP deposits",
	NULL
};

static int nr_threads, rounds = 8;
#define WALKS	32

struct worker {
	pthread_t tid;
	int id;
	char *chunk;
	const struct layout *layout;
	struct pt_report *r;
	pthread_barrier_t *barrier;
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	char *p = w->chunk;
	int round, k;

	for (round = 0; round < rounds; round++) {
		uint64_t seed = ((uint64_t)w->id << 32) | round;
		long bad;

		enum pt_map m;

		pthread_barrier_wait(w->barrier);
		pt_fill(p, pmdsize, seed);
		m = pt_map_of(p, pmdsize);
		pt_check(w->r, C_HUGE, m == PT_MAP_THP,
			 "thread %d round %d: chunk %p is %s", w->id, round, p,
			 pt_map_name(m));
		for (k = 0; k < WALKS; k++) {
			unsigned char vec[1];

			madvise(p, pmdsize, MADV_POPULATE_READ);
			mincore(p, getpagesize(), vec);
		}
		bad = pt_verify(p, pmdsize, seed);
		pt_check(w->r, C_DATA, bad < 0,
			 "thread %d round %d: word %ld of %p differs", w->id, round, bad, p);

		if (w->layout->zap == ZAP_DONTNEED) {
			/* mincore() reads the PMD: nothing resident once zapped. */
			pt_check(w->r, C_ZAPPED, !madvise(p, pmdsize, MADV_DONTNEED) &&
				 !pt_resident(p, pmdsize),
				 "thread %d round %d: chunk resident after MADV_DONTNEED",
				 w->id, round);
		} else {
			const char *left;

			pt_check(w->r, C_ZAPPED, !munmap(p, pmdsize) &&
				 pt_unmapped(p, pmdsize),
				 "thread %d round %d: chunk mapped after munmap", w->id, round);
			/* Gone from the page table too, not only the VMA. */
			left = pt_range_left_empty(p, pmdsize);
			pt_check(w->r, C_ZAPPED, !left, "thread %d round %d: after munmap, %s",
				 w->id, round, left);
			if (mmap(p, pmdsize, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED ||
			    madvise(p, pmdsize, MADV_HUGEPAGE))
				pt_check(w->r, C_ZAPPED, false, "thread %d: remap: %s",
					 w->id, strerror(errno));
		}
	}
	return NULL;
}

/*
 * With the workers gone and every chunk zapped (its PMD table stays),
 * fault each chunk once more from this thread alone: each fault adds
 * exactly one PTE table to the mm's pgtables_bytes, deposited under a THP
 * or, on a fallback to small pages, mapping them; MADV_DONTNEED then
 * withdraws and frees the deposited ones (a small-page table stays, or,
 * with CONFIG_PT_RECLAIM, is freed as well once empty).
 */
static void vmpte(struct worker *w, struct pt_report *r)
{
	long pte_kb = getpagesize() >> 10, before, faulted, zapped;
	int i, thp = 0;

	before = pt_vmpte_kb();
	for (i = 0; i < nr_threads; i++)
		w[i].chunk[0] = 1;
	faulted = pt_vmpte_kb();
	for (i = 0; i < nr_threads; i++)
		thp += pt_map_of(w[i].chunk, pmdsize) == PT_MAP_THP;
	pt_check(r, C_HUGE, thp == nr_threads,
		 "only %d of %d chunks faulted alone are THPs mapped by a huge PMD",
		 thp, nr_threads);
	for (i = 0; i < nr_threads; i++)
		madvise(w[i].chunk, pmdsize, MADV_DONTNEED);
	zapped = pt_vmpte_kb();
	pt_check(r, C_VMPTE, before >= 0 && faulted - before == nr_threads * pte_kb,
		 "VmPTE %ld kB -> %ld kB after %d THP faults, want +%ld kB",
		 before, faulted, nr_threads, nr_threads * pte_kb);
	pt_check(r, C_VMPTE, zapped >= 0 && faulted - zapped == thp * pte_kb,
		 "VmPTE %ld kB -> %ld kB after zapping %d THPs, want -%ld kB",
		 faulted, zapped, thp, thp * pte_kb);
}

static int hammer(void *arg, struct pt_report *r)
{
	const struct layout *layout = arg;
	size_t span = layout->spread ? nr_threads * PT_GIB : PT_GIB;
	struct worker *w = calloc(nr_threads, sizeof(*w));
	pthread_barrier_t barrier;
	long before, after;
	char *base;
	int i;

	base = pt_map_aligned(span, PT_GIB, true);
	if (!base || !w)
		return 2;
	pthread_barrier_init(&barrier, NULL, nr_threads);
	before = pt_vmstat("thp_fault_alloc");
	for (i = 0; i < nr_threads; i++) {
		w[i].id = i;
		/* Spread: chunk i in GiB i, at a varying offset inside it. */
		w[i].chunk = layout->spread ?
			base + i * PT_GIB + (i % 7 + 1) * pmdsize :
			base + i * pmdsize;
		w[i].layout = layout;
		w[i].r = r;
		w[i].barrier = &barrier;
		if (pthread_create(&w[i].tid, NULL, worker, &w[i]))
			return 2;
	}
	for (i = 0; i < nr_threads; i++)
		pthread_join(w[i].tid, NULL);
	after = pt_vmstat("thp_fault_alloc");
	/* Every chunk was faulted as a THP once per round. */
	pt_check(r, C_COUNTER, after - before >= (long)nr_threads * rounds,
		 "thp_fault_alloc moved by %ld, want >= %d", after - before,
		 nr_threads * rounds);
	vmpte(w, r);
	munmap(base, span);
	return 0;
}

int main(int argc, char **argv)
{
	size_t i;

	ksft_print_header();
	nr_threads = pt_threads(argc, argv, &rounds);
	pt_skip_unless_thp(false);
	ksft_set_plan(ARRAY_SIZE(layouts) * pt_case_results(checks));
	ksft_print_msg("%d threads, %d rounds, THP size %zu kB\n", nr_threads,
		       rounds, pmdsize >> 10);
	for (i = 0; i < ARRAY_SIZE(layouts); i++)
		pt_run_case(layouts[i].name, checks, hammer, (void *)&layouts[i]);
	ksft_finished();
}
