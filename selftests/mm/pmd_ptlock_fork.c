// SPDX-License-Identifier: GPL-2.0
/*
 * fork() of a process mapping THPs and huge zero pages, while its other
 * threads fault and zap THPs in the same and in another PMD table.
 *
 * copy_huge_pmd() takes the child's and the parent's PMD table locks
 * (nested), deposits a freshly allocated page table in the child's table
 * for every huge PMD it copies (THP or huge zero page), and write-protects
 * both sides so the first write copies. Each child checks every chunk is a
 * huge PMD holding the parent's data; then the parent writes its side and
 * the child checks none of it shows, writes its own data into every chunk
 * and checks it; after the child is gone the parent checks its own data.
 * After every process is gone, PageTables in /proc/meminfo must be back
 * where it was.
 *
 * Catches: a copy that skips the deposit or deposits in the wrong table
 * (the child's zap withdraws from an empty queue, or a page table leaks),
 * a copy that is not write-protected (one side's write shows in the
 * other), a child that sees the wrong page, and races between the copy and
 * concurrent faults or zaps (lost data, corrupted queues).
 */
#define _GNU_SOURCE
#include "pmd_ptlock.h"

struct variant {
	const char *name;
	bool traffic_other_table;	/* traffic in another PMD table too */
};

static const struct variant variants[] = {
	{ "fork under traffic in the same PMD table", false },
	{ "fork under traffic in the same and another PMD table", true },
};

enum { C_PARENT_HUGE, C_CHILD_SEES, C_CHILD_HUGE, C_COW, C_PARENT_KEEPS, C_TRAFFIC };
static const char *const checks[] = {
	[C_PARENT_HUGE] = "parent maps THPs and huge zero pages before fork",
	[C_CHILD_SEES] = "child sees the parent's data and zeroes",
	[C_CHILD_HUGE] = "child's copies are huge PMDs",
	[C_COW] = "writes after fork stay on their own side (COW)",
	[C_PARENT_KEEPS] = "parent's data survives every child",
	[C_TRAFFIC] = "concurrent faults and zaps see their data",
	NULL
};

#define NR_CHUNKS	8	/* even: written THPs, odd: huge zero pages */
#define TRAFFIC_SLOT	128

static int nr_threads, rounds = 8;

struct traffic_layout {
	char *base;
	bool other_table;
};

/* Traffic chunk i: past the forked chunks, in another table for odd i if asked. */
static char *traffic_chunk(int i, void *arg)
{
	struct traffic_layout *l = arg;
	bool other = l->other_table && i % 2;

	return l->base + other * PT_GIB + (TRAFFIC_SLOT + i) * pmdsize;
}

/* What the parent's THP chunk i holds after round r (r = -1: before any fork). */
static uint64_t parent_seed(int chunk, int round)
{
	return 0x5eed000000ULL | (uint64_t)(round + 1) << 8 | chunk;
}

static uint64_t child_seed(int chunk, int round)
{
	return 0xc0ffee0000ULL | (uint64_t)round << 8 | chunk;
}

/*
 * In the child: check what fork() copied, let the parent write to its side
 * of every THP, check none of that shows here, then write to every chunk.
 */
static int child_side(char *base, struct pt_report *r, int round, int to_parent,
		      int from_parent)
{
	char token = 'c';
	int i;

	for (i = 0; i < NR_CHUNKS; i++) {
		char *c = base + i * pmdsize;
		bool zero = i % 2;

		pt_check(r, C_CHILD_HUGE, zero ? pt_is_huge_zero(c) : pt_is_thp(c),
			 "round %d: the copy of chunk %d is not a huge %s", round, i,
			 zero ? "zero page" : "THP");
		pt_check(r, C_CHILD_SEES, zero ? pt_all_zero(c, pmdsize) :
			 pt_verify(c, pmdsize, parent_seed(i, round - 1)) < 0,
			 "round %d: the copy of chunk %d differs from the parent's", round, i);
	}
	if (write(to_parent, &token, 1) != 1 || read(from_parent, &token, 1) != 1)
		return 3;
	for (i = 0; i < NR_CHUNKS; i += 2)
		pt_check(r, C_COW, pt_verify(base + i * pmdsize, pmdsize,
					     parent_seed(i, round - 1)) < 0,
			 "round %d: the parent's write to chunk %d shows in the child", round, i);
	for (i = 0; i < NR_CHUNKS; i++)
		pt_fill(base + i * pmdsize, pmdsize, child_seed(i, round));
	for (i = 0; i < NR_CHUNKS; i++)
		pt_check(r, C_COW, pt_verify(base + i * pmdsize, pmdsize,
					     child_seed(i, round)) < 0,
			 "round %d: the child's write to chunk %d did not stick", round, i);
	return 0;
}

/*
 * Fill the parent's THP chunks for round r as fresh THPs, so the next fork
 * copies huge PMDs again: a COW-split chunk keeps its PTE table through
 * MADV_DONTNEED, so unmap it (which frees that table) and map it anew.
 */
static void parent_fill(char *base, struct pt_report *r, int round)
{
	int i;

	for (i = 0; i < NR_CHUNKS; i += 2) {
		char *c = base + i * pmdsize;

		if (munmap(c, pmdsize) ||
		    mmap(c, pmdsize, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED ||
		    madvise(c, pmdsize, MADV_HUGEPAGE))
			pt_check(r, C_PARENT_HUGE, false, "round %d: remap chunk %d: %s",
				 round, i, strerror(errno));
		pt_fill(c, pmdsize, parent_seed(i, round));
		pt_check(r, C_PARENT_HUGE, pt_is_thp(c), "round %d: chunk %d is not a THP",
			 round, i);
	}
}

static int fork_case(void *arg, struct pt_report *r)
{
	const struct variant *v = arg;
	struct traffic_layout layout;
	struct pt_traffic *t;
	int i, round, status;
	int stop = 0;
	char *base;

	base = pt_map_aligned(2 * PT_GIB, PT_GIB, true);
	if (!base)
		return 2;
	parent_fill(base, r, -1);
	for (i = 1; i < NR_CHUNKS; i += 2) {
		char *c = base + i * pmdsize;

		/* A read fault maps the huge zero page. */
		pt_check(r, C_PARENT_HUGE, pt_all_zero(c, pmdsize) && pt_is_huge_zero(c),
			 "chunk %d is not the huge zero page", i);
	}
	layout.base = base;
	layout.other_table = v->traffic_other_table;
	t = pt_traffic_start(nr_threads, traffic_chunk, &layout, C_TRAFFIC, r, &stop);
	if (!t)
		return 2;

	for (round = 0; round < rounds; round++) {
		int to_child[2], to_parent[2];
		char token = 'p';
		pid_t pid;

		if (pipe(to_child) || pipe(to_parent))
			return 2;
		pid = fork();
		if (pid < 0)
			return 2;
		if (!pid)
			_exit(child_side(base, r, round, to_parent[1], to_child[0]));
		/* Once the child has checked its copies, write to the parent's side. */
		if (read(to_parent[0], &token, 1) == 1) {
			for (i = 0; i < NR_CHUNKS; i += 2)
				pt_fill(base + i * pmdsize, pmdsize, parent_seed(i, round));
			if (write(to_child[1], &token, 1) != 1)
				pt_check(r, C_COW, false, "round %d: cannot signal the child",
					 round);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			pt_check(r, C_CHILD_SEES, false, "round %d: child died (status %#x)",
				 round, status);
		close(to_child[0]);
		close(to_child[1]);
		close(to_parent[0]);
		close(to_parent[1]);
		for (i = 0; i < NR_CHUNKS; i++) {
			char *c = base + i * pmdsize;

			pt_check(r, C_PARENT_KEEPS, i % 2 ? pt_all_zero(c, pmdsize) :
				 pt_verify(c, pmdsize, parent_seed(i, round)) < 0,
				 "round %d: the parent's chunk %d does not hold its own data",
				 round, i);
		}
		parent_fill(base, r, round);
	}

	pt_traffic_stop(t, nr_threads, &stop);
	munmap(base, 2 * PT_GIB);
	return 0;
}

int main(int argc, char **argv)
{
	const char *why;
	size_t i;
	FILE *f;
	int zp = -1;

	ksft_print_header();
	nr_threads = pt_threads(argc, argv, &rounds);
	why = pt_thp_unavailable();
	if (why)
		ksft_exit_skip("%s\n", why);
	f = fopen("/sys/kernel/mm/transparent_hugepage/use_zero_page", "r");
	if (f) {
		if (fscanf(f, "%d", &zp) != 1)
			zp = -1;
		fclose(f);
	}
	if (zp != 1)
		ksft_exit_skip("huge zero page off (transparent_hugepage/use_zero_page != 1)\n");
	ksft_set_plan(ARRAY_SIZE(variants) * pt_case_results(checks));
	ksft_print_msg("%d traffic threads, %d forks per case\n", nr_threads, rounds);
	for (i = 0; i < ARRAY_SIZE(variants); i++)
		pt_run_case(variants[i].name, checks, fork_case, (void *)&variants[i]);
	ksft_finished();
}
