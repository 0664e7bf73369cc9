// SPDX-License-Identifier: GPL-2.0
/*
 * fork() of a process mapping THPs and huge zero pages, while its other
 * threads fault THPs in the same and in another PMD table.
 *
 * copy_huge_pmd() takes the child's and the parent's PMD table locks
 * (nested), deposits a freshly allocated page table in the child's table
 * for every huge PMD it copies (THP or huge zero page), and write-protects
 * both sides so the first write copies. Each child checks, on its own page
 * tables, that every chunk is mapped by a huge PMD holding the parent's
 * data; then the parent writes its side and the child checks none of it
 * shows, writes its own data into every chunk and checks it; after the
 * child is gone the parent checks its own data. After every process is
 * gone, no page table may stay charged to the case's memory cgroup.
 *
 * What overlaps a fork: dup_mmap() holds the parent's mmap_lock for write
 * and write-locks each VMA just before copying it, so nothing of the
 * parent that needs mmap_lock (the traffic's MADV_POPULATE_READ and
 * MADV_DONTNEED, khugepaged, another process's GUP or process_vm_readv())
 * runs during the copy, and no fault can run in a VMA already copied. A
 * THP fault in a VMA dup_mmap() has not reached yet does run, under that
 * VMA's own lock: the traffic chunks sit in VMAs of their own
 * (pt_own_vmas()) above the forked ones, in the same PMD table (and in
 * another), so their faults take the very PMD table lock copy_huge_pmd()
 * takes as the source lock and deposit into that table's queue while it
 * copies. How many completed while fork() ran is printed. (Rmap walkers,
 * reclaim or migration, can also reach the parent's PMDs without
 * mmap_lock; nothing here drives them.)
 *
 * Catches: a copy that skips the deposit or deposits in the wrong table
 * (the child's zap withdraws from an empty queue, or a page table leaks),
 * a copy that falls back to PTEs (PAGEMAP_SCAN in the child), a copy that
 * is not write-protected (one side's write shows in the other), a child
 * that sees the wrong page, and a copy racing the faults that deposit
 * into the parent's table (lost data, corrupted queues).
 */
#define _GNU_SOURCE
#include "pmd_ptlock.h"

struct variant {
	const char *name;
	bool traffic_other_table;	/* traffic in another PMD table too */
};

static const struct variant variants[] = {
	{ "fork with THP faults in later VMAs of the same PMD table", false },
	{ "fork with THP faults in later VMAs of the same and another PMD table", true },
};

enum { C_PARENT_HUGE, C_CHILD_SEES, C_CHILD_HUGE, C_COW, C_PARENT_KEEPS, C_TRAFFIC };
static const char *const checks[] = {
	[C_PARENT_HUGE] = "parent maps THPs and huge zero pages by huge PMDs before fork",
	[C_CHILD_SEES] = "child sees the parent's data and zeroes",
	[C_CHILD_HUGE] = "child's copies are mapped by huge PMDs in its own page tables",
	[C_COW] = "writes after fork stay on their own side (COW)",
	[C_PARENT_KEEPS] = "parent's data survives every child",
	[C_TRAFFIC] =
		"traffic in later VMAs (its faults can overlap the copy, its zaps cannot) sees its data",
	NULL
};

#define NR_CHUNKS	8	/* even: written THPs, odd: huge zero pages */
#define TRAFFIC_SLOT	128

static int nr_threads, rounds = 8;
/* 1 with the huge zero page, 2 without: the odd chunks are left out. */
static int chunk_step = 1;

struct traffic_layout {
	char *base;
	bool other_table;
};

/*
 * Traffic chunk i: past the forked chunks, in VMAs of their own (above
 * them: dup_mmap() copies VMAs in address order), in another table for
 * odd i if asked.
 */
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

	for (i = 0; i < NR_CHUNKS; i += chunk_step) {
		char *c = base + i * pmdsize;
		bool zero = i % 2;
		/* This process's own page tables: the copy, not the parent's. */
		enum pt_map m = pt_map_of(c, pmdsize);

		pt_check(r, C_CHILD_HUGE, m == (zero ? PT_MAP_HUGE_ZERO : PT_MAP_THP),
			 "round %d: the copy of chunk %d is %s", round, i, pt_map_name(m));
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
	for (i = 0; i < NR_CHUNKS; i += chunk_step)
		pt_fill(base + i * pmdsize, pmdsize, child_seed(i, round));
	for (i = 0; i < NR_CHUNKS; i += chunk_step)
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
		enum pt_map m;

		if (munmap(c, pmdsize) ||
		    mmap(c, pmdsize, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED ||
		    madvise(c, pmdsize, MADV_HUGEPAGE))
			pt_check(r, C_PARENT_HUGE, false, "round %d: remap chunk %d: %s",
				 round, i, strerror(errno));
		pt_fill(c, pmdsize, parent_seed(i, round));
		m = pt_map_of(c, pmdsize);
		pt_check(r, C_PARENT_HUGE, m == PT_MAP_THP, "round %d: chunk %d is %s",
			 round, i, pt_map_name(m));
	}
}

static int fork_case(void *arg, struct pt_report *r)
{
	const struct variant *v = arg;
	struct traffic_layout layout;
	struct pt_traffic *t;
	int i, round, status;
	long during = 0;
	int stop = 0;
	char *base;

	base = pt_map_aligned(2 * PT_GIB, PT_GIB, true);
	if (!base)
		return 2;
	if (pt_own_vmas(base + TRAFFIC_SLOT * pmdsize, PT_GIB - TRAFFIC_SLOT * pmdsize) ||
	    pt_own_vmas(base + PT_GIB + TRAFFIC_SLOT * pmdsize,
			PT_GIB - TRAFFIC_SLOT * pmdsize))
		return 2;
	parent_fill(base, r, -1);
	for (i = 1; i < NR_CHUNKS && chunk_step == 1; i += 2) {
		char *c = base + i * pmdsize;
		/* A read fault maps the huge zero page. */
		bool zero = pt_all_zero(c, pmdsize);
		enum pt_map m = pt_map_of(c, pmdsize);

		pt_check(r, C_PARENT_HUGE, zero && m == PT_MAP_HUGE_ZERO,
			 "chunk %d is %s%s", i, pt_map_name(m), zero ? "" : ", not zeroes");
	}
	layout.base = base;
	layout.other_table = v->traffic_other_table;
	t = pt_traffic_start(nr_threads, traffic_chunk, &layout, C_TRAFFIC, r, &stop);
	if (!t)
		return 2;

	for (round = 0; round < rounds; round++) {
		int to_child[2], to_parent[2];
		char token = 'p';
		long done;
		pid_t pid;

		if (pipe(to_child) || pipe(to_parent))
			return 2;
		done = pt_traffic_done();
		pid = fork();
		if (pid < 0)
			return 2;
		if (!pid)
			_exit(child_side(base, r, round, to_parent[1], to_child[0]));
		during += pt_traffic_done() - done;
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
		for (i = 0; i < NR_CHUNKS; i += chunk_step) {
			char *c = base + i * pmdsize;

			pt_check(r, C_PARENT_KEEPS, i % 2 ? pt_all_zero(c, pmdsize) :
				 pt_verify(c, pmdsize, parent_seed(i, round)) < 0,
				 "round %d: the parent's chunk %d does not hold its own data",
				 round, i);
		}
		parent_fill(base, r, round);
	}

	pt_traffic_stop(t, nr_threads, &stop);
	pt_note(r, "%ld traffic THP faults completed while fork() ran", during);
	munmap(base, 2 * PT_GIB);
	return 0;
}

int main(int argc, char **argv)
{
	size_t i;

	ksft_print_header();
	nr_threads = pt_threads(argc, argv, &rounds);
	pt_skip_unless_thp(false);
	if (!pt_use_zero_page()) {
		ksft_print_msg("the huge zero page is off (use_zero_page is not 1): only the THP chunks are forked\n");
		chunk_step = 2;
	}
	ksft_set_plan(ARRAY_SIZE(variants) * pt_case_results(checks));
	ksft_print_msg("%d traffic threads, %d forks per case\n", nr_threads, rounds);
	for (i = 0; i < ARRAY_SIZE(variants); i++)
		pt_run_case(variants[i].name, checks, fork_case, (void *)&variants[i]);
	ksft_finished();
}
