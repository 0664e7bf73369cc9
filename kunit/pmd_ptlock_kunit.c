// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the split PMD page-table lock.
 *
 * With CONFIG_SPLIT_PMD_PTLOCKS every PMD table of a user mm carries its own
 * spinlock (ptdesc->ptl) and its own queue of PTE tables deposited for THP
 * (ptdesc->pmd_huge_pte); without it both are per mm (mm->page_table_lock,
 * mm->pmd_huge_pte). The cases build real page tables in a real mm through
 * the kernel's own allocation path and check lock identity, the deposit
 * queue and the PMD table constructor/destructor, asserting whichever of the
 * two designs the configuration selects.
 */

#include <kunit/test.h>
#include <kunit/test-bug.h>
#include <linux/debug_locks.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/fault-inject.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/pgtable.h>
#include <linux/rcupdate.h>
#include <linux/sched/mm.h>
#include <linux/sizes.h>
#include <linux/spinlock.h>
#include <linux/vmstat.h>
#include <asm/pgalloc.h>
#include <asm/tlb.h>

#include "../internal.h"
#include "../slab.h"

/*
 * User addresses 1 GiB (PUD_SIZE) apart are mapped by different PMD tables;
 * every case stays inside [PT_FIRST, PT_END), which the cleanup frees.
 */
#define PT_FIRST	SZ_1G
#define PT_SECOND	(2UL * SZ_1G)
#define PT_END		(4UL * SZ_1G)

/*
 * Page tables a fresh mm builds above its PUD tables that NR_PAGETABLE
 * counts: a P4D table, where five-level paging makes it a level of its own
 * (pagetable_p4d_ctor()). pgtables_bytes charges no P4D table.
 */
#define PT_P4D_COUNTED(mm)	(mm_p4d_folded(mm) ? 0 : 1)

/* What a freshly allocated page may hold where pmd_huge_pte lives. */
#define PT_GARBAGE	((pgtable_t)0xdead4ead00000000UL)

static const bool split_pmd = IS_ENABLED(CONFIG_SPLIT_PMD_PTLOCKS);
static const bool thp = IS_ENABLED(CONFIG_TRANSPARENT_HUGEPAGE);

/*
 * A table's own lock (ptlock_ptr()) exists only with split PTE locks: every
 * configuration compiles every case, each asserting what its configuration
 * guarantees.
 */
#ifdef CONFIG_SPLIT_PTE_PTLOCKS
#define PT_TABLE_LOCK(ptdesc)	ptlock_ptr(ptdesc)
#else
#define PT_TABLE_LOCK(ptdesc)	((void)(ptdesc), (spinlock_t *)NULL)
#endif

#ifdef CONFIG_TRANSPARENT_HUGEPAGE
/*
 * A PMD table must be freed with an empty deposit queue: each THP mapped
 * through it withdrew its PTE table as it went, or that table is lost. The
 * free path does not look at the queue, so check every PMD table the case
 * built (walking down, allocating nothing) before the tables go.
 */
static void pt_expect_no_deposit_left(struct mm_struct *mm)
{
	struct kunit *test = kunit_get_current_test();
	unsigned long addr;

	if (!test)
		return;
	for (addr = PT_FIRST; addr < PT_END; addr += PUD_SIZE) {
		pgd_t *pgd = pgd_offset(mm, addr);
		p4d_t *p4d;
		pud_t *pud;

		if (pgd_none(*pgd))
			continue;
		p4d = p4d_offset(pgd, addr);
		if (p4d_none(*p4d))
			continue;
		pud = pud_offset(p4d, addr);
		if (pud_none(*pud))
			continue;
		/* No PTE table is left deposited in a PMD table being freed. */
		KUNIT_EXPECT_NULL_MSG(test, pmd_huge_pte(mm, pmd_offset(pud, addr)),
				      "deposit left in the PMD table at %#lx",
				      addr);
	}
}
#else
static void pt_expect_no_deposit_left(struct mm_struct *mm) { }
#endif

static void pt_mm_release(void *data)
{
	struct mm_struct *mm = data;
	struct mmu_gather tlb;

	pt_expect_no_deposit_left(mm);
	/*
	 * exit_mmap() skips free_pgtables() for an mm without VMAs: free the
	 * tables the case built, or check_mm() reports non-zero pgtables_bytes.
	 */
	tlb_gather_mmu(&tlb, mm);
	free_pgd_range(&tlb, PT_FIRST, PT_END, FIRST_USER_ADDRESS,
		       USER_PGTABLES_CEILING);
	tlb_finish_mmu(&tlb);
	mmput(mm);
	/*
	 * Page tables go back after a grace period (MMU_GATHER_RCU_TABLE_FREE):
	 * wait for them, so that no later case sees NR_PAGETABLE move under it.
	 */
	rcu_barrier();
}

/* A real mm from fork's own constructor, torn down when the case ends. */
static struct mm_struct *pt_mm_alloc(struct kunit *test)
{
	struct mm_struct *mm = mm_alloc();

	KUNIT_ASSERT_NOT_NULL(test, mm);
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, pt_mm_release, mm));
	return mm;
}

/* The PMD entry mapping @addr, allocating missing tables like a fault does. */
static pmd_t *pt_pmd_alloc(struct kunit *test, struct mm_struct *mm,
			   unsigned long addr)
{
	p4d_t *p4d;
	pud_t *pud;
	pmd_t *pmd;

	p4d = p4d_alloc(mm, pgd_offset(mm, addr), addr);
	KUNIT_ASSERT_NOT_NULL(test, p4d);
	pud = pud_alloc(mm, p4d, addr);
	KUNIT_ASSERT_NOT_NULL(test, pud);
	pmd = pmd_alloc(mm, pud, addr);
	KUNIT_ASSERT_NOT_NULL(test, pmd);
	return pmd;
}

/* First entry of the PMD table holding @pmd, the entry mapping @addr. */
static pmd_t *pt_table_of(pmd_t *pmd, unsigned long addr)
{
	return pmd - pmd_index(addr);
}

/*
 * NR_PAGETABLE exactly: the node counters plus every CPU's unfolded delta,
 * read until two reads agree so a concurrent vmstat fold is not half-seen.
 */
static long pt_nr_pagetable(void)
{
	long sum = LONG_MIN, prev;
	int tries = 0;

	do {
		struct pglist_data *pgdat;
		int cpu;

		prev = sum;
		sum = 0;
		for_each_online_pgdat(pgdat) {
			sum += atomic_long_read(&pgdat->vm_stat[NR_PAGETABLE]);
			for_each_possible_cpu(cpu)
				sum += per_cpu_ptr(pgdat->per_cpu_nodestats, cpu)
					->vm_node_stat_diff[NR_PAGETABLE];
		}
	} while (sum != prev && ++tries < 10);
	return sum;
}

/*
 * NR_PAGETABLE counts every page table in the system, so a table another
 * task allocates or frees on another CPU inside a case's window moves it
 * too (measured: with the suites run again from userspace, a process
 * starting meanwhile moved it by 2 in the middle of a case). A case that
 * compares it measures its window again, on fresh tables, up to PT_TRIES
 * times, and judges the first window whose every change was the expected
 * one, else the last. Before another window it waits PT_PAUSE_MS, for what
 * moved the count to be over: a task starting or ending builds or frees
 * its tables over tens of milliseconds on a slow guest, which measured
 * back to back covered two windows in a row. An accounting bug is off by
 * its own tables in every window; other tasks' tables would have to land
 * in PT_TRIES windows spread over a second.
 */
#define PT_TRIES	3
#define PT_PAUSE_MS	500

/* Whether to measure the window again: it was off, and tries are left. */
static bool pt_again(bool off, int *try)
{
	if (!off || ++*try >= PT_TRIES)
		return false;
	msleep(PT_PAUSE_MS);
	return true;
}

/* Say when a case measured its window more than once, and why. */
static void pt_note_tries(struct kunit *test, int try)
{
	if (try >= PT_TRIES)
		kunit_info(test, "NR_PAGETABLE off in all %d windows\n",
			   PT_TRIES);
	else if (try)
		kunit_info(test, "other tasks moved NR_PAGETABLE: window %d judged\n",
			   try + 1);
}

/* ---- Lock identity ---------------------------------------------------- */

/*
 * Catches: pmd_lockptr() deriving the table from anything but the entry's
 * own page (a wrong mask in pmd_pgtable_page(), a per-entry lock).
 */
static void pmd_lockptr_is_the_same_for_every_entry_of_a_table(struct kunit *test)
{
	struct mm_struct *mm = pt_mm_alloc(test);
	pmd_t *table = pt_table_of(pt_pmd_alloc(test, mm, PT_FIRST), PT_FIRST);
	spinlock_t *ptl = pmd_lockptr(mm, table);
	int i;

	for (i = 0; i < PTRS_PER_PMD; i++)
		KUNIT_EXPECT_PTR_EQ_MSG(test, pmd_lockptr(mm, table + i), ptl,
					"entry %d of the table", i);
}

/*
 * Catches: split mode falling back to the mm-wide lock (the 2013 series
 * undone), or split-off mode using a table lock that was never initialised.
 */
static void pmd_lockptr_is_the_tables_ptlock_or_the_mm_lock(struct kunit *test)
{
	struct mm_struct *mm = pt_mm_alloc(test);
	pmd_t *pmd = pt_pmd_alloc(test, mm, PT_FIRST);
	pmd_t *table = pt_table_of(pmd, PT_FIRST);

	if (split_pmd) {
		/* The lock lives in the PMD table's own ptdesc... */
		KUNIT_EXPECT_PTR_EQ(test, pmd_lockptr(mm, pmd),
				    PT_TABLE_LOCK(virt_to_ptdesc(table)));
		/* ...and is not the lock every other table of the mm shares. */
		KUNIT_EXPECT_PTR_NE(test, pmd_lockptr(mm, pmd),
				    &mm->page_table_lock);
	} else {
		/* Without split locks every PMD table takes the mm's lock. */
		KUNIT_EXPECT_PTR_EQ(test, pmd_lockptr(mm, pmd),
				    &mm->page_table_lock);
	}
}

/*
 * Catches: two PMD tables of one mm sharing a lock under split locks (no
 * scaling). Without split locks both must take the mm's one lock, which
 * pmd_lockptr_is_the_tables_ptlock_or_the_mm_lock pins.
 */
static void pmd_lockptr_of_tables_a_gigabyte_apart_differ_only_when_split(struct kunit *test)
{
	struct mm_struct *mm = pt_mm_alloc(test);
	pmd_t *a = pt_pmd_alloc(test, mm, PT_FIRST);
	pmd_t *b = pt_pmd_alloc(test, mm, PT_SECOND);

	/* 1 GiB apart is always two different PMD tables... */
	KUNIT_ASSERT_PTR_NE(test, pt_table_of(a, PT_FIRST),
			    pt_table_of(b, PT_SECOND));
	/* ...which lock independently exactly when the locks are split. */
	if (split_pmd)
		KUNIT_EXPECT_PTR_NE(test, pmd_lockptr(mm, a), pmd_lockptr(mm, b));
	else
		KUNIT_EXPECT_PTR_EQ(test, pmd_lockptr(mm, a), pmd_lockptr(mm, b));
}

/* Catches: a lock shared across processes (a global or static lock). */
static void pmd_lockptr_differs_between_two_mms(struct kunit *test)
{
	struct mm_struct *mm1 = pt_mm_alloc(test);
	struct mm_struct *mm2 = pt_mm_alloc(test);
	pmd_t *p1 = pt_pmd_alloc(test, mm1, PT_FIRST);
	pmd_t *p2 = pt_pmd_alloc(test, mm2, PT_FIRST);

	/* Same address, different mms: never the same lock, in any mode. */
	KUNIT_EXPECT_PTR_NE(test, pmd_lockptr(mm1, p1), pmd_lockptr(mm2, p2));
}

/*
 * Catches: the PMD lock aliasing the lock of a PTE table below it, which
 * would self-deadlock pte_offset_map_lock() under pmd_lock() (and vice versa).
 */
static void pmd_lock_differs_from_the_pte_lock_of_a_table_below(struct kunit *test)
{
	struct mm_struct *mm = pt_mm_alloc(test);
	pmd_t *pmd = pt_pmd_alloc(test, mm, PT_FIRST);
	pgtable_t pte = pte_alloc_one(mm);	/* the PTE table, ours */
	struct ptdesc *pte_ptdesc;

	KUNIT_ASSERT_NOT_NULL(test, pte);
	pte_ptdesc = page_ptdesc(pte);
	/* Installed as a fault installs it (accounted, freed with the mm). */
	pmd_install(mm, pmd, &pte);
	KUNIT_ASSERT_NULL_MSG(test, pte, "the PMD entry was not empty");
	KUNIT_ASSERT_TRUE(test, pmd_present(*pmd));
	if (split_pmd) {
		/* Two tables, two locks: the PMD table's and the PTE table's. */
		KUNIT_EXPECT_PTR_NE(test, pmd_lockptr(mm, pmd),
				    pte_lockptr(mm, pmd));
		/* The PTE lock is the one in the page the case installed. */
		KUNIT_EXPECT_PTR_EQ(test, pte_lockptr(mm, pmd),
				    PT_TABLE_LOCK(pte_ptdesc));
	} else if (!IS_ENABLED(CONFIG_SPLIT_PTE_PTLOCKS)) {
		/* Nothing split: both levels take the mm's one lock. */
		KUNIT_EXPECT_PTR_EQ(test, pte_lockptr(mm, pmd),
				    pmd_lockptr(mm, pmd));
	} else {
		/* Split PTE locks only: the PTE table's lock, not the mm's. */
		KUNIT_EXPECT_PTR_NE(test, pte_lockptr(mm, pmd),
				    pmd_lockptr(mm, pmd));
	}
}

/*
 * Nothing is checked while a lock is held: a failed expectation allocates
 * its report (GFP_KERNEL) and a failed assertion ends the case with the
 * lock still held. The cases note what they saw and check after unlocking.
 */

/* Catches: pmd_lock() taking or returning another lock than pmd_lockptr(). */
static void pmd_lock_returns_the_lockptr_held(struct kunit *test)
{
	struct mm_struct *mm = pt_mm_alloc(test);
	pmd_t *pmd = pt_pmd_alloc(test, mm, PT_FIRST);
	spinlock_t *want = pmd_lockptr(mm, pmd);
	spinlock_t *ptl;	/* what pmd_lock() returns */
	bool held;		/* whether @want was held on return */

	KUNIT_ASSERT_FALSE(test, spin_is_locked(want));
	ptl = pmd_lock(mm, pmd);
	held = spin_is_locked(want);
	spin_unlock(ptl);
	/* The lock returned is the one pmd_lockptr() names... */
	KUNIT_EXPECT_PTR_EQ(test, ptl, want);
	/* ...and it was held on return... */
	KUNIT_EXPECT_TRUE(test, held);
	/* ...until the caller unlocked it. */
	KUNIT_EXPECT_FALSE(test, spin_is_locked(want));
}

/*
 * Lockdep sees every ptlock as one class (one spin_lock_init() site), so a
 * path holding two table locks at once must annotate the second one.
 * Returns whether lockdep is watching, failing the case when an earlier
 * report already turned it off (it could not see this case's locking).
 */
static bool pt_lockdep_watching(struct kunit *test)
{
	if (!IS_ENABLED(CONFIG_PROVE_LOCKING))
		return false;
	KUNIT_ASSERT_TRUE_MSG(test, debug_locks,
			      "lockdep was already off before this case");
	return true;
}

/* What was true of two locks while both were held, checked after. */
struct pt_held {
	bool a, b;		/* spin_is_locked() */
	bool dep_a, dep_b;	/* lockdep_is_held(), true without lockdep */
};

/* Note, under both locks, whether each is held and known to lockdep as held. */
static void pt_note_held(struct pt_held *h, spinlock_t *a, spinlock_t *b)
{
	h->a = spin_is_locked(a);
	h->b = spin_is_locked(b);
#ifdef CONFIG_LOCKDEP
	h->dep_a = lockdep_is_held(a);
	h->dep_b = lockdep_is_held(b);
#else
	h->dep_a = h->dep_b = true;
#endif
}

static void pt_expect_held(struct kunit *test, const struct pt_held *h)
{
	KUNIT_EXPECT_TRUE(test, h->a);
	KUNIT_EXPECT_TRUE(test, h->b);
	KUNIT_EXPECT_TRUE(test, h->dep_a);
	KUNIT_EXPECT_TRUE(test, h->dep_b);
}

/*
 * move_huge_pmd() locks the old PMD table, then the new one nested
 * (SINGLE_DEPTH_NESTING) when it differs. Catches: table locks lockdep
 * reports as recursive or inverted despite the annotation (a lock class or
 * subclass change in the ctor or pmd_lock()), and two tables sharing a lock
 * under split locks, which would self-deadlock here.
 */
static void pmd_locks_of_two_tables_nest_as_move_huge_pmd_takes_them(struct kunit *test)
{
	struct mm_struct *mm = pt_mm_alloc(test);
	pmd_t *old_pmd = pt_pmd_alloc(test, mm, PT_FIRST);
	pmd_t *new_pmd = pt_pmd_alloc(test, mm, PT_SECOND);
	bool watching = pt_lockdep_watching(test);
	spinlock_t *old_ptl, *new_ptl;
	struct pt_held held;

	/* Split: two tables, two locks; otherwise the mm's lock, taken once. */
	KUNIT_ASSERT_TRUE(test, split_pmd ?
			  pmd_lockptr(mm, new_pmd) != pmd_lockptr(mm, old_pmd) :
			  pmd_lockptr(mm, new_pmd) == pmd_lockptr(mm, old_pmd));
	old_ptl = pmd_lock(mm, old_pmd);
	new_ptl = pmd_lockptr(mm, new_pmd);
	if (new_ptl != old_ptl)
		spin_lock_nested(new_ptl, SINGLE_DEPTH_NESTING);
	pt_note_held(&held, old_ptl, new_ptl);
	if (new_ptl != old_ptl)
		spin_unlock(new_ptl);
	spin_unlock(old_ptl);
	pt_expect_held(test, &held);
	/* A lockdep report (recursive locking, inversion) turns it off. */
	if (watching)
		KUNIT_EXPECT_TRUE_MSG(test, debug_locks,
				      "lockdep reported the nested table locks");
}

/*
 * copy_huge_pmd() locks the child's (dst) PMD table, then the parent's
 * (src) nested. Catches what the move case does, across two mms, where the
 * locks differ in every configuration (split-off: two mms' page_table_lock).
 */
static void pmd_locks_of_two_mms_nest_as_copy_huge_pmd_takes_them(struct kunit *test)
{
	struct mm_struct *src_mm = pt_mm_alloc(test);
	struct mm_struct *dst_mm = pt_mm_alloc(test);
	pmd_t *src_pmd = pt_pmd_alloc(test, src_mm, PT_FIRST);
	pmd_t *dst_pmd = pt_pmd_alloc(test, dst_mm, PT_FIRST);
	bool watching = pt_lockdep_watching(test);
	spinlock_t *src_ptl = pmd_lockptr(src_mm, src_pmd);
	spinlock_t *dst_ptl;
	struct pt_held held;

	/* Two mms never share a PMD lock: taking both must not self-deadlock. */
	KUNIT_ASSERT_PTR_NE(test, src_ptl, pmd_lockptr(dst_mm, dst_pmd));
	dst_ptl = pmd_lock(dst_mm, dst_pmd);
	spin_lock_nested(src_ptl, SINGLE_DEPTH_NESTING);
	pt_note_held(&held, dst_ptl, src_ptl);
	spin_unlock(src_ptl);
	spin_unlock(dst_ptl);
	pt_expect_held(test, &held);
	if (watching)
		KUNIT_EXPECT_TRUE_MSG(test, debug_locks,
				      "lockdep reported the nested table locks");
}

static struct kunit_case pmd_ptlock_lockptr_cases[] = {
	KUNIT_CASE(pmd_lockptr_is_the_same_for_every_entry_of_a_table),
	KUNIT_CASE(pmd_lockptr_is_the_tables_ptlock_or_the_mm_lock),
	KUNIT_CASE(pmd_lockptr_of_tables_a_gigabyte_apart_differ_only_when_split),
	KUNIT_CASE(pmd_lockptr_differs_between_two_mms),
	KUNIT_CASE(pmd_lock_differs_from_the_pte_lock_of_a_table_below),
	KUNIT_CASE(pmd_lock_returns_the_lockptr_held),
	KUNIT_CASE(pmd_locks_of_two_tables_nest_as_move_huge_pmd_takes_them),
	KUNIT_CASE(pmd_locks_of_two_mms_nest_as_copy_huge_pmd_takes_them),
	{}
};

static struct kunit_suite pmd_ptlock_lockptr_suite = {
	.name = "pmd_ptlock_lockptr",
	.test_cases = pmd_ptlock_lockptr_cases,
};

/* ---- Deposit / withdraw ----------------------------------------------- */

#define PT_MAX_DEPOSITS	8

static const int pt_deposit_counts[] = { 1, 2, 3, 4, PT_MAX_DEPOSITS };

static void pt_deposit_count_desc(const int *n, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%d deposits", *n);
}

KUNIT_ARRAY_PARAM(pt_deposit_count, pt_deposit_counts, pt_deposit_count_desc);

#ifdef CONFIG_TRANSPARENT_HUGEPAGE

/* A real PTE table, as __do_huge_pmd_anonymous_page() preallocates one. */
static pgtable_t pt_pgtable_alloc(struct kunit *test, struct mm_struct *mm)
{
	pgtable_t pgtable = pte_alloc_one(mm);

	KUNIT_ASSERT_NOT_NULL(test, pgtable);
	return pgtable;
}

/* Deposit under the PMD table's lock, as the THP paths do. */
static void pt_deposit(struct mm_struct *mm, pmd_t *pmd, pgtable_t pgtable)
{
	spinlock_t *ptl = pmd_lock(mm, pmd);

	pgtable_trans_huge_deposit(mm, pmd, pgtable);
	spin_unlock(ptl);
}

static pgtable_t pt_withdraw(struct mm_struct *mm, pmd_t *pmd)
{
	spinlock_t *ptl = pmd_lock(mm, pmd);
	pgtable_t pgtable = pgtable_trans_huge_withdraw(mm, pmd);

	spin_unlock(ptl);
	return pgtable;
}

static void pt_pgtable_free(struct mm_struct *mm, pgtable_t pgtable)
{
	if (pgtable)
		pte_free(mm, pgtable);
}

/* Catches: a withdraw that loses the table or leaves a stale queue head. */
static void withdraw_returns_the_deposit_and_empties_the_queue(struct kunit *test)
{
	struct mm_struct *mm = pt_mm_alloc(test);
	pmd_t *pmd = pt_pmd_alloc(test, mm, PT_FIRST);
	pgtable_t pgtable = pt_pgtable_alloc(test, mm);
	pgtable_t got;

	KUNIT_EXPECT_NULL(test, pmd_huge_pte(mm, pmd));
	pt_deposit(mm, pmd, pgtable);
	/* The queue head is the table just deposited. */
	KUNIT_EXPECT_PTR_EQ(test, pmd_huge_pte(mm, pmd), pgtable);
	got = pt_withdraw(mm, pmd);
	KUNIT_EXPECT_PTR_EQ(test, got, pgtable);
	/* Empty again: a later zap must not withdraw a freed table. */
	KUNIT_EXPECT_NULL(test, pmd_huge_pte(mm, pmd));
	pt_pgtable_free(mm, got);
}

/*
 * Catches: pmd_huge_pte() reaching the wrong queue (another table's, the
 * mm's under split locks, or one shared by every mm without them), so one
 * table's zap frees another's deposit.
 */
static void deposits_come_back_only_from_their_own_table(struct kunit *test)
{
	struct mm_struct *mm = pt_mm_alloc(test);
	struct mm_struct *other = pt_mm_alloc(test);
	pmd_t *p1 = pt_pmd_alloc(test, mm, PT_FIRST);
	pmd_t *p1b = pt_pmd_alloc(test, mm, PT_FIRST + 5 * PMD_SIZE);
	pmd_t *p2 = pt_pmd_alloc(test, mm, PT_SECOND);
	/* Unused by pmd_huge_pte() without split locks: the mm's queue. */
	pmd_t *p3 __maybe_unused = pt_pmd_alloc(test, other, PT_FIRST);
	pgtable_t a1 = pt_pgtable_alloc(test, mm);
	pgtable_t b1 = pt_pgtable_alloc(test, mm);
	pgtable_t a2 = pt_pgtable_alloc(test, mm);
	pgtable_t got[3];
	int i;

	pt_deposit(mm, p1, a1);
	pt_deposit(mm, p1b, b1);	/* another entry of the same table */
	pt_deposit(mm, p2, a2);

	/* Another mm's table at P1's address sees none of them, split or not. */
	KUNIT_EXPECT_NULL(test, pmd_huge_pte(other, p3));

	if (split_pmd) {
		/* P2's queue holds only its own deposit. */
		got[0] = pt_withdraw(mm, p2);
		KUNIT_EXPECT_PTR_EQ(test, got[0], a2);
		KUNIT_EXPECT_NULL(test, pmd_huge_pte(mm, p2));
		/* P1 still holds both of its deposits, untouched by P2's. */
		KUNIT_EXPECT_NOT_NULL(test, pmd_huge_pte(mm, p1));
		got[1] = pt_withdraw(mm, p1);
		got[2] = pt_withdraw(mm, p1);
		KUNIT_EXPECT_NULL(test, pmd_huge_pte(mm, p1));
		/* Each of P1's deposits exactly once, in whatever order. */
		KUNIT_EXPECT_TRUE(test, (got[1] == a1 && got[2] == b1) ||
				  (got[1] == b1 && got[2] == a1));
	} else {
		/*
		 * Without split locks the queue is the mm's: the deposit just
		 * made through P2, a table 1 GiB away, heads P1's queue too.
		 */
		KUNIT_EXPECT_PTR_EQ(test, pmd_huge_pte(mm, p1), a2);
		for (i = 0; i < 3; i++)
			got[i] = pt_withdraw(mm, i ? p1 : p2);
		KUNIT_EXPECT_NULL(test, pmd_huge_pte(mm, p2));
		for (i = 0; i < 3; i++)
			KUNIT_EXPECT_TRUE(test, got[i] == a1 || got[i] == b1 ||
					  got[i] == a2);
		KUNIT_EXPECT_TRUE(test, got[0] != got[1] && got[1] != got[2] &&
				  got[0] != got[2]);
	}
	for (i = 0; i < 3; i++)
		pt_pgtable_free(mm, got[i]);
}

/*
 * Every entry of a PMD table reaches the table's one queue: zap_huge_pmd()
 * withdraws through the entry it zaps, which mremap may have changed. (On
 * x86 the table is one page, so no one-line change keys the queue by
 * entry.) Catches: a withdraw that leaves the queue's head in place, seen
 * through another entry of the table.
 */
static void deposit_and_withdraw_through_different_entries_share_a_queue(struct kunit *test)
{
	struct mm_struct *mm = pt_mm_alloc(test);
	pmd_t *table = pt_table_of(pt_pmd_alloc(test, mm, PT_FIRST), PT_FIRST);
	pgtable_t pgtable = pt_pgtable_alloc(test, mm);
	pgtable_t got;

	pt_deposit(mm, table + 3, pgtable);
	/* Every entry of the table sees the same queue head... */
	KUNIT_EXPECT_PTR_EQ(test, pmd_huge_pte(mm, table + PTRS_PER_PMD - 1),
			    pgtable);
	/* ...and a withdraw through another entry takes the deposit back. */
	got = pt_withdraw(mm, table + PTRS_PER_PMD - 1);
	KUNIT_EXPECT_PTR_EQ(test, got, pgtable);
	KUNIT_EXPECT_NULL(test, pmd_huge_pte(mm, table + 3));
	pt_pgtable_free(mm, got);
}

/*
 * Deposited tables are interchangeable (each an empty PTE table, withdrawn
 * only to be freed, to become a split PMD's PTE table, or to be deposited
 * again), so the kernel guarantees no order, only that N deposits come back
 * as N withdraws, each table exactly once, leaving the queue empty.
 * Catches: a withdraw that does not unlink the head (a table handed out
 * twice, a queue that never empties), a deposit that drops or overwrites an
 * earlier one.
 */
static void withdraws_return_every_deposit_exactly_once(struct kunit *test)
{
	const int n = *(const int *)test->param_value;
	struct mm_struct *mm = pt_mm_alloc(test);
	pmd_t *pmd = pt_pmd_alloc(test, mm, PT_FIRST);
	pgtable_t dep[PT_MAX_DEPOSITS], got[PT_MAX_DEPOSITS];
	int i, j, times;

	for (i = 0; i < n; i++)
		dep[i] = pt_pgtable_alloc(test, mm);
	for (i = 0; i < n; i++)
		pt_deposit(mm, pmd, dep[i]);
	for (i = 0; i < n; i++)
		got[i] = pt_withdraw(mm, pmd);
	/* N withdraws empty a queue of N deposits. */
	KUNIT_EXPECT_NULL(test, pmd_huge_pte(mm, pmd));
	/* Each deposited table came back, and exactly once. */
	for (i = 0; i < n; i++) {
		for (times = 0, j = 0; j < n; j++)
			times += got[j] == dep[i];
		KUNIT_EXPECT_EQ_MSG(test, times, 1, "deposit %d of %d", i + 1, n);
	}
	/* Free what was deposited (a withdraw may have repeated one). */
	for (i = 0; i < n; i++)
		pt_pgtable_free(mm, dep[i]);
}

#else /* !CONFIG_TRANSPARENT_HUGEPAGE */

/*
 * The deposit queue exists only for THP, which is not offered with
 * PREEMPT_RT: the cases are there, and say why they cannot run.
 */
static void pt_skip_without_thp(struct kunit *test)
{
	kunit_skip(test, "no THP in this kernel (TRANSPARENT_HUGEPAGE=n%s): no deposit queue",
		   IS_ENABLED(CONFIG_PREEMPT_RT) ? ", it depends on !PREEMPT_RT" : "");
}

static void withdraw_returns_the_deposit_and_empties_the_queue(struct kunit *test)
{
	pt_skip_without_thp(test);
}

static void deposits_come_back_only_from_their_own_table(struct kunit *test)
{
	pt_skip_without_thp(test);
}

static void deposit_and_withdraw_through_different_entries_share_a_queue(struct kunit *test)
{
	pt_skip_without_thp(test);
}

static void withdraws_return_every_deposit_exactly_once(struct kunit *test)
{
	pt_skip_without_thp(test);
}

#endif /* CONFIG_TRANSPARENT_HUGEPAGE */

static struct kunit_case pmd_ptlock_deposit_cases[] = {
	KUNIT_CASE(withdraw_returns_the_deposit_and_empties_the_queue),
	KUNIT_CASE(deposits_come_back_only_from_their_own_table),
	KUNIT_CASE(deposit_and_withdraw_through_different_entries_share_a_queue),
	KUNIT_CASE_PARAM(withdraws_return_every_deposit_exactly_once,
			 pt_deposit_count_gen_params),
	{}
};

static struct kunit_suite pmd_ptlock_deposit_suite = {
	.name = "pmd_ptlock_deposit",
	.test_cases = pmd_ptlock_deposit_cases,
};

/* ---- Constructor / destructor ------------------------------------------ */

static void pt_ptdesc_free(void *data)
{
	pagetable_free(data);
}

/* A page as the PMD allocator gets it, before pagetable_pmd_ctor(). */
static struct ptdesc *pt_ptdesc_alloc(struct kunit *test)
{
	struct ptdesc *ptdesc = pagetable_alloc(GFP_KERNEL | __GFP_ZERO, 0);

	KUNIT_ASSERT_NOT_NULL(test, ptdesc);
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, pt_ptdesc_free, ptdesc));
	return ptdesc;
}

/* Catches: a ctor that leaves the page untyped (PageTable() false). */
static void pmd_ctor_marks_the_page_a_page_table(struct kunit *test)
{
	struct mm_struct *mm = pt_mm_alloc(test);
	struct ptdesc *ptdesc = pt_ptdesc_alloc(test);

	/* A page fresh from the allocator is not typed a page table. */
	KUNIT_ASSERT_FALSE(test, folio_test_pgtable(ptdesc_folio(ptdesc)));
	/* Constructing a user PMD table succeeds with memory to spare. */
	KUNIT_ASSERT_TRUE(test, pagetable_pmd_ctor(mm, ptdesc));
	/* The ctor types the page a page table. */
	KUNIT_EXPECT_TRUE(test, folio_test_pgtable(ptdesc_folio(ptdesc)));
	pagetable_dtor(ptdesc);
}

/*
 * Catches: a ctor that does not reset pmd_huge_pte, so the first THP
 * deposit on a recycled page links into a stale list.
 */
static void pmd_ctor_resets_a_garbage_deposit_queue(struct kunit *test)
{
	struct mm_struct *mm = pt_mm_alloc(test);
	struct ptdesc *ptdesc = pt_ptdesc_alloc(test);

	/* The field overlays page->lru, which the page allocator leaves dirty. */
	ptdesc->pmd_huge_pte = PT_GARBAGE;
	/* Constructing a user PMD table succeeds with memory to spare. */
	KUNIT_ASSERT_TRUE(test, pagetable_pmd_ctor(mm, ptdesc));
	if (split_pmd && thp) {
		/* The table's own deposit queue starts empty. */
		KUNIT_EXPECT_NULL(test, ptdesc->pmd_huge_pte);
	} else {
		/*
		 * The queue is the mm's, or there is none without THP: the
		 * ctor need not, and does not, touch the field.
		 */
		KUNIT_EXPECT_PTR_EQ(test, ptdesc->pmd_huge_pte, PT_GARBAGE);
		ptdesc->pmd_huge_pte = NULL;
	}
	pagetable_dtor(ptdesc);
}

/*
 * Catches: a ctor that skips ptlock_init() (an uninitialised or, with
 * ALLOC_SPLIT_PTLOCKS, unallocated lock) under split locks.
 */
static void pmd_ctor_initialises_a_usable_ptlock(struct kunit *test)
{
	struct mm_struct *mm = pt_mm_alloc(test);
	struct ptdesc *ptdesc = pt_ptdesc_alloc(test);
	pmd_t *table = ptdesc_address(ptdesc);
	spinlock_t *ptl;	/* the lock the ctor set up */
	bool taken, held;	/* checked once it is released again */

	/* Constructing a user PMD table succeeds with memory to spare. */
	KUNIT_ASSERT_TRUE(test, pagetable_pmd_ctor(mm, ptdesc));
	if (split_pmd) {
		ptl = PT_TABLE_LOCK(ptdesc);
		/* A user PMD table has a lock of its own... */
		KUNIT_ASSERT_NOT_NULL(test, ptl);
		/* ...initialised unlocked... */
		KUNIT_EXPECT_FALSE(test, spin_is_locked(ptl));
		taken = spin_trylock(ptl);
		held = spin_is_locked(ptl);
		if (taken)
			spin_unlock(ptl);
		/* ...which can be taken... */
		KUNIT_EXPECT_TRUE(test, taken);
		/* ...and is then held. */
		KUNIT_EXPECT_TRUE(test, held);
		/* pmd_lockptr() of any entry of this page finds this lock. */
		KUNIT_EXPECT_PTR_EQ(test, pmd_lockptr(NULL, table + 7), ptl);
	} else {
		/* No per-table lock to set up: the mm's lock serves the table. */
		KUNIT_EXPECT_PTR_EQ(test, pmd_lockptr(mm, table + 7),
				    &mm->page_table_lock);
	}
	pagetable_dtor(ptdesc);
}

/* What a page-table page's lock word might hold before construction. */
#define PT_PTL_POISON	0x5a5a5a5a5a5a5a5aUL

/*
 * Kernel page tables are serialised by init_mm.page_table_lock, never by
 * pmd_lock(): pagetable_pmd_ctor() sets up no split lock for init_mm's
 * PMD tables (nothing to allocate, so constructing one cannot fail), yet
 * types and counts them like any other. Catches: a ctor that initialises
 * or allocates a lock for a kernel PMD table again, or that skips typing
 * or counting it.
 */
static void pmd_ctor_gives_a_kernel_table_no_lock(struct kunit *test)
{
	unsigned long seen;	/* the lock word after the ctor */
	long built, undone;	/* NR_PAGETABLE moved by ctor, then dtor */
	bool typed;		/* the page typed a page table by the ctor */
	int try = 0;

	do {
		struct ptdesc *ptdesc = pt_ptdesc_alloc(test);
		unsigned long *ptl_word = (unsigned long *)&ptdesc->ptl;
		long nr = pt_nr_pagetable();
		bool ok;

		*ptl_word = PT_PTL_POISON;
		ok = pagetable_pmd_ctor(&init_mm, ptdesc);
		built = pt_nr_pagetable() - nr;
		seen = *ptl_word;
		/* Leave the dtor only what the ctor may have allocated. */
		*ptl_word = seen == PT_PTL_POISON ? 0 : seen;
		/* A kernel PMD table's construction cannot fail. */
		KUNIT_ASSERT_TRUE(test, ok);
		typed = folio_test_pgtable(ptdesc_folio(ptdesc));
		pagetable_dtor(ptdesc);
		undone = pt_nr_pagetable() - nr;
	} while (pt_again(built != 1 || undone, &try));
	pt_note_tries(test, try);
	/* No lock is initialised or allocated for a kernel PMD table... */
	KUNIT_EXPECT_EQ_MSG(test, seen, PT_PTL_POISON,
			    "the ctor set up a lock for a kernel PMD table");
	/* ...yet the page is typed a page table like any other... */
	KUNIT_EXPECT_TRUE(test, typed);
	/* ...and counted in NR_PAGETABLE... */
	KUNIT_EXPECT_EQ(test, built, 1);
	/* ...until the dtor uncounts it. */
	KUNIT_EXPECT_EQ(test, undone, 0);
}

/* Catches: a ctor/dtor pair that does not keep NR_PAGETABLE balanced. */
static void pmd_ctor_and_dtor_each_move_nr_pagetable_by_one(struct kunit *test)
{
	long built, undone;	/* NR_PAGETABLE moved by ctor, then dtor */
	int try = 0;

	do {
		struct mm_struct *mm = pt_mm_alloc(test);
		struct ptdesc *ptdesc = pt_ptdesc_alloc(test);
		long nr = pt_nr_pagetable();

		/* A user PMD table is built with memory to spare. */
		KUNIT_ASSERT_TRUE(test, pagetable_pmd_ctor(mm, ptdesc));
		built = pt_nr_pagetable() - nr;
		pagetable_dtor(ptdesc);
		undone = pt_nr_pagetable() - nr;
	} while (pt_again(built != 1 || undone, &try));
	pt_note_tries(test, try);
	/* One order-0 table page more... */
	KUNIT_EXPECT_EQ(test, built, 1);
	/* ...and exactly back after the dtor. */
	KUNIT_EXPECT_EQ(test, undone, 0);
}

/* Catches: a dtor that leaves PageTable() set on a page about to be freed. */
static void pmd_dtor_clears_the_page_table_mark(struct kunit *test)
{
	struct mm_struct *mm = pt_mm_alloc(test);
	struct ptdesc *ptdesc = pt_ptdesc_alloc(test);

	/* Constructing a user PMD table succeeds with memory to spare. */
	KUNIT_ASSERT_TRUE(test, pagetable_pmd_ctor(mm, ptdesc));
	pagetable_dtor(ptdesc);
	/* The dtor leaves the page untyped, ready for the page allocator. */
	KUNIT_EXPECT_FALSE(test, folio_test_pgtable(ptdesc_folio(ptdesc)));
}

/*
 * A new PMD table is charged to the mm and counted once; another entry of
 * it allocates nothing. Catches: a ctor that does not count the table.
 */
static void pmd_alloc_accounts_one_table_per_gigabyte(struct kunit *test)
{
	unsigned long charged, charged_again;	/* pgtables_bytes added */
	long counted, counted_again;		/* NR_PAGETABLE added */
	int try = 0;

	do {
		struct mm_struct *mm = pt_mm_alloc(test);
		unsigned long bytes;
		long nr;

		/* The PUD level exists first: only PMD tables count below. */
		pt_pmd_alloc(test, mm, PT_FIRST);
		bytes = mm_pgtables_bytes(mm);
		nr = pt_nr_pagetable();
		pt_pmd_alloc(test, mm, PT_SECOND);
		charged = mm_pgtables_bytes(mm) - bytes;
		counted = pt_nr_pagetable() - nr;
		pt_pmd_alloc(test, mm, PT_SECOND + 17 * PMD_SIZE);
		charged_again = mm_pgtables_bytes(mm) - bytes - charged;
		counted_again = pt_nr_pagetable() - nr - counted;
	} while (pt_again(counted != 1 || counted_again, &try));
	pt_note_tries(test, try);
	/* A new PMD table charges the mm for one table... */
	KUNIT_EXPECT_EQ(test, charged, PTRS_PER_PMD * sizeof(pmd_t));
	/* ...and counts one page in NR_PAGETABLE. */
	KUNIT_EXPECT_EQ(test, counted, 1);
	/* Another entry of an existing table allocates nothing: no charge... */
	KUNIT_EXPECT_EQ(test, charged_again, 0UL);
	/* ...and no page counted. */
	KUNIT_EXPECT_EQ(test, counted_again, 0);
}

/*
 * Catches: a free path that does not uncharge the mm for the PMD tables it
 * frees (free_pmd_range()), and a ctor that does not count a table, so
 * that building them does not move NR_PAGETABLE.
 */
static void torn_down_tables_return_pgtables_bytes_and_nr_pagetable(struct kunit *test)
{
	unsigned long charged, left;	/* pgtables_bytes built, then left */
	long counted, uncounted;	/* NR_PAGETABLE built, then left */
	int p4d = 0;			/* P4D tables counted (five levels) */
	int try = 0;

	do {
		struct mm_struct *mm = pt_mm_alloc(test);
		unsigned long bytes = mm_pgtables_bytes(mm);
		long nr = pt_nr_pagetable();
		struct mmu_gather tlb;
		unsigned long addr;

		p4d = PT_P4D_COUNTED(mm);
		for (addr = PT_FIRST; addr < PT_END; addr += PUD_SIZE / 4) {
			pmd_t *pmd = pt_pmd_alloc(test, mm, addr);

			/* A PTE table is built under an empty PMD entry. */
			KUNIT_ASSERT_EQ(test, 0, pte_alloc(mm, pmd));
		}
		charged = mm_pgtables_bytes(mm) - bytes;
		counted = pt_nr_pagetable() - nr;
		/* What exit_mmap() does for an mm with VMAs. */
		tlb_gather_mmu(&tlb, mm);
		free_pgd_range(&tlb, PT_FIRST, PT_END, FIRST_USER_ADDRESS,
			       USER_PGTABLES_CEILING);
		tlb_finish_mmu(&tlb);
		left = mm_pgtables_bytes(mm) - bytes;
		/*
		 * The tables themselves go back after a grace period
		 * (MMU_GATHER_RCU_TABLE_FREE): pagetable_dtor(), which
		 * uncounts them, runs from the RCU callback.
		 */
		rcu_barrier();
		uncounted = pt_nr_pagetable() - nr;
	} while (pt_again(counted != p4d + 1 + 3 + 12 || uncounted, &try));
	pt_note_tries(test, try);
	/*
	 * One PUD table, three PMD tables and twelve PTE tables were built:
	 * the mm is charged for each...
	 */
	KUNIT_EXPECT_EQ(test, charged,
			PTRS_PER_PUD * sizeof(pud_t) +
			3 * PTRS_PER_PMD * sizeof(pmd_t) +
			12 * PTRS_PER_PTE * sizeof(pte_t));
	/* ...and each is counted in NR_PAGETABLE (a P4D table too). */
	KUNIT_EXPECT_EQ(test, counted, p4d + 1 + 3 + 12);
	/* The mm's charge is returned at once, as the tables are unlinked... */
	KUNIT_EXPECT_EQ(test, left, 0UL);
	/* ...and every table is uncounted once it is freed. */
	KUNIT_EXPECT_EQ(test, uncounted, 0);
}

static struct kunit_case pmd_ptlock_ctor_cases[] = {
	KUNIT_CASE(pmd_ctor_marks_the_page_a_page_table),
	KUNIT_CASE(pmd_ctor_resets_a_garbage_deposit_queue),
	KUNIT_CASE(pmd_ctor_initialises_a_usable_ptlock),
	KUNIT_CASE(pmd_ctor_gives_a_kernel_table_no_lock),
	KUNIT_CASE(pmd_ctor_and_dtor_each_move_nr_pagetable_by_one),
	KUNIT_CASE(pmd_dtor_clears_the_page_table_mark),
	KUNIT_CASE(pmd_alloc_accounts_one_table_per_gigabyte),
	KUNIT_CASE(torn_down_tables_return_pgtables_bytes_and_nr_pagetable),
	{}
};

static struct kunit_suite pmd_ptlock_ctor_suite = {
	.name = "pmd_ptlock_ctor",
	.test_cases = pmd_ptlock_ctor_cases,
};

/* ---- Constructor failure ------------------------------------------- */

/*
 * With ALLOC_SPLIT_PTLOCKS (spinlock_t larger than a long: lockdep,
 * PREEMPT_RT) the ctor allocates the table's lock from the "page->ptl"
 * cache and construction can fail. The cases make exactly that allocation
 * fail with FAILSLAB, scoped to the test: the cache filter admits only the
 * ptlock's cache, reclaim-capable allocations are admitted, and the
 * failure is armed through this task's fail_nth, so no other task or cache
 * is affected. The knobs are failslab's own debugfs variables, reached
 * through their debugfs inodes (debugfs keeps the variable's address in
 * i_private) and restored when the case ends.
 */
#if ALLOC_SPLIT_PTLOCKS && defined(CONFIG_FAILSLAB) && \
	defined(CONFIG_FAULT_INJECTION_DEBUG_FS)
#define PT_CAN_INJECT	1

struct pt_inject {
	bool *ignore_reclaim;
	bool *cache_filter;
	unsigned long *verbose;
	bool old_ignore_reclaim;
	bool old_cache_filter;
	unsigned long old_verbose;
	struct kmem_cache *cache;
	slab_flags_t old_flags;
};

static void *pt_failslab_knob(struct dentry *dir, const char *name)
{
	struct dentry *d = debugfs_lookup(name, dir);
	void *knob;

	if (IS_ERR_OR_NULL(d))
		return NULL;
	knob = d_inode(d)->i_private;
	dput(d);
	return knob;
}

static void pt_inject_restore(void *data)
{
	struct pt_inject *inj = data;

	current->fail_nth = 0;
	inj->cache->flags = (inj->cache->flags & ~SLAB_FAILSLAB) |
			    (inj->old_flags & SLAB_FAILSLAB);
	*inj->cache_filter = inj->old_cache_filter;
	*inj->ignore_reclaim = inj->old_ignore_reclaim;
	*inj->verbose = inj->old_verbose;
}

/* Admit the ptlock's cache, and only it, to failslab for this case. */
static struct pt_inject *pt_inject_setup(struct kunit *test, struct mm_struct *mm)
{
	struct pt_inject *inj = kunit_kzalloc(test, sizeof(*inj), GFP_KERNEL);
	struct ptdesc *ptdesc;
	struct dentry *dir;

	KUNIT_ASSERT_NOT_NULL(test, inj);
	dir = debugfs_lookup("failslab", NULL);
	if (IS_ERR_OR_NULL(dir))
		kunit_skip(test, "no failslab directory in debugfs (debugfs off?)");
	inj->ignore_reclaim = pt_failslab_knob(dir, "ignore-gfp-wait");
	inj->cache_filter = pt_failslab_knob(dir, "cache-filter");
	inj->verbose = pt_failslab_knob(dir, "verbose");
	dput(dir);
	KUNIT_ASSERT_NOT_NULL(test, inj->ignore_reclaim);
	KUNIT_ASSERT_NOT_NULL(test, inj->cache_filter);
	KUNIT_ASSERT_NOT_NULL(test, inj->verbose);

	/* The ptlock cache, found through a lock the ctor allocates. */
	ptdesc = pagetable_alloc(GFP_KERNEL, 0);
	KUNIT_ASSERT_NOT_NULL(test, ptdesc);
	if (!pagetable_pmd_ctor(mm, ptdesc)) {
		pagetable_free(ptdesc);
		KUNIT_FAIL_AND_ABORT(test, "ctor failed without injection");
	}
	inj->cache = virt_to_slab(ptdesc->ptl)->slab_cache;
	pagetable_dtor(ptdesc);
	pagetable_free(ptdesc);

	inj->old_ignore_reclaim = *inj->ignore_reclaim;
	inj->old_cache_filter = *inj->cache_filter;
	inj->old_verbose = *inj->verbose;
	inj->old_flags = inj->cache->flags;
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test,
			pt_inject_restore, inj));
	*inj->ignore_reclaim = false;	/* ptlock_alloc() uses GFP_KERNEL */
	*inj->cache_filter = true;
	*inj->verbose = 1;		/* one line per injected failure */
	inj->cache->flags |= SLAB_FAILSLAB;
	return inj;
}

/* Make this task's next admitted slab allocation fail. */
static void pt_inject_arm(void)
{
	current->fail_nth = 1;
}

/* Whether the armed failure was consumed, i.e. the ptlock was asked for. */
static bool pt_inject_fired(void)
{
	bool fired = current->fail_nth == 0;

	current->fail_nth = 0;
	return fired;
}
#else
#define PT_CAN_INJECT	0
struct pt_inject;
static struct pt_inject *pt_inject_setup(struct kunit *test, struct mm_struct *mm)
{
	return NULL;
}

static void pt_inject_arm(void) { }
static bool pt_inject_fired(void) { return false; }
#endif

/* Skip, saying why, where a PMD table's construction cannot fail. */
static void pt_need_allocated_ptlock(struct kunit *test, bool pmd_level)
{
	if (pmd_level && !split_pmd)
		kunit_skip(test, "no split PMD locks: the PMD ctor allocates no lock");
	if (!IS_ENABLED(CONFIG_SPLIT_PTE_PTLOCKS))
		kunit_skip(test, "no split page-table locks: nothing to allocate");
	if (!ALLOC_SPLIT_PTLOCKS)
		kunit_skip(test,
			   "the ptlock is embedded in struct ptdesc (spinlock_t is %zu bytes, ALLOC_SPLIT_PTLOCKS=0): construction cannot fail",
			   sizeof(spinlock_t));
	if (!PT_CAN_INJECT)
		kunit_skip(test,
			   "needs CONFIG_FAILSLAB and CONFIG_FAULT_INJECTION_DEBUG_FS to fail the ptlock allocation");
}

/*
 * Pages this CPU allocated minus pages it freed, from the vm event
 * counters: a balanced window means whatever was allocated went back.
 */
static long pt_cpu_page_balance(void)
{
	/* The caller has disabled migration. */
	struct vm_event_state *ev = raw_cpu_ptr(&vm_event_states);
	long balance = -(long)READ_ONCE(ev->event[PGFREE]);
	int zid;

	for (zid = 0; zid < MAX_NR_ZONES; zid++)
		balance += READ_ONCE(ev->event[PGALLOC_NORMAL - ZONE_NORMAL + zid]);
	return balance;
}

/*
 * Catches: a failed ctor reported as success (a NULL lock used later), a
 * table page leaked or left marked and counted when the ctor fails, and a
 * ctor that stops allocating its lock where spinlock_t does not fit.
 */
static void pmd_alloc_one_returns_null_when_the_ptlock_allocation_fails(struct kunit *test)
{
	struct mm_struct *mm = pt_mm_alloc(test);
	long counted, balance;
	int try = 0;
	pmd_t *pmd;

	pt_need_allocated_ptlock(test, true);
	pt_inject_setup(test, mm);
	/*
	 * Interrupts on this CPU may allocate or free pages inside a window,
	 * as other tasks' page tables may move NR_PAGETABLE (see PT_TRIES),
	 * so the window is measured again (with the same mm: pmd_alloc_one()
	 * keeps nothing in it): a clean window proves the page went back; a
	 * leak never balances.
	 */
	do {
		long nr;

		migrate_disable();
		nr = pt_nr_pagetable();
		balance = pt_cpu_page_balance();
		pt_inject_arm();
		pmd = pmd_alloc_one(mm, PT_FIRST);
		balance = pt_cpu_page_balance() - balance;
		counted = pt_nr_pagetable() - nr;
		migrate_enable();
		/* The ctor asked for its lock, and the failure reached us. */
		KUNIT_ASSERT_TRUE(test, pt_inject_fired());
		KUNIT_ASSERT_NULL(test, pmd);
	} while (pt_again(counted || balance, &try));
	pt_note_tries(test, try);
	/* The table page never became a counted page table... */
	KUNIT_EXPECT_EQ(test, counted, 0);
	/* ...and went back to the page allocator. */
	KUNIT_EXPECT_EQ_MSG(test, balance, 0,
			    "pages allocated and not freed by the failed pmd_alloc_one()");
}

/*
 * A failed construction reaches the fault as -ENOMEM with nothing changed:
 * the PUD entry stays empty, nothing is charged or counted, and the next
 * call builds the table. Catches: __pmd_alloc() charging the mm for a
 * table it failed to build, and a ctor that counts the table before its
 * lock allocation fails.
 */
static void pmd_alloc_fails_without_touching_the_pud_or_the_accounting(struct kunit *test)
{
	unsigned long charged, charged_after;	/* pgtables_bytes added */
	long counted, counted_after;		/* NR_PAGETABLE added */
	bool empty, built;		/* the PUD entry after each call */
	pmd_t *failed, *pmd;		/* what each call returned */
	int try = 0;

	pt_need_allocated_ptlock(test, true);
	pt_inject_setup(test, pt_mm_alloc(test));
	do {
		struct mm_struct *mm = pt_mm_alloc(test);
		unsigned long bytes;
		pud_t *pud;
		long nr;

		pud = pud_alloc(mm, p4d_alloc(mm, pgd_offset(mm, PT_FIRST),
					      PT_FIRST), PT_FIRST);
		KUNIT_ASSERT_NOT_NULL(test, pud);
		KUNIT_ASSERT_TRUE(test, pud_none(*pud));
		bytes = mm_pgtables_bytes(mm);
		nr = pt_nr_pagetable();

		pt_inject_arm();
		failed = pmd_alloc(mm, pud, PT_FIRST);
		KUNIT_ASSERT_TRUE(test, pt_inject_fired());
		empty = pud_none(*pud);
		charged = mm_pgtables_bytes(mm) - bytes;
		counted = pt_nr_pagetable() - nr;

		/* Without injection the same call builds the table. */
		pmd = pmd_alloc(mm, pud, PT_FIRST);
		built = !pud_none(*pud);
		charged_after = mm_pgtables_bytes(mm) - bytes;
		counted_after = pt_nr_pagetable() - nr;
	} while (pt_again(counted || counted_after != 1, &try));
	pt_note_tries(test, try);
	/* Failure reaches the caller as a NULL entry pointer (VM_FAULT_OOM)... */
	KUNIT_EXPECT_NULL(test, failed);
	/* ...with the PUD entry still empty and nothing accounted. */
	KUNIT_EXPECT_TRUE(test, empty);
	KUNIT_EXPECT_EQ(test, charged, 0UL);
	KUNIT_EXPECT_EQ(test, counted, 0);
	/* The next call, not armed, builds and accounts the table. */
	KUNIT_EXPECT_NOT_NULL(test, pmd);
	KUNIT_EXPECT_TRUE(test, built);
	KUNIT_EXPECT_EQ(test, charged_after, PTRS_PER_PMD * sizeof(pmd_t));
	KUNIT_EXPECT_EQ(test, counted_after, 1);
}

/*
 * The PTE level shares the allocated ptlock. Catches: __pte_alloc()
 * installing or accounting a PTE table whose ctor failed (a fault would
 * then map through a table with no lock).
 */
static void pte_alloc_fails_without_touching_the_pmd_or_the_accounting(struct kunit *test)
{
	unsigned long charged;		/* pgtables_bytes added by the failure */
	long counted, counted_after;	/* NR_PAGETABLE added */
	int err, err_after;		/* what each call returned */
	bool empty;			/* the PMD entry after the failure */
	int try = 0;

	pt_need_allocated_ptlock(test, false);
	pt_inject_setup(test, pt_mm_alloc(test));
	do {
		struct mm_struct *mm = pt_mm_alloc(test);
		pmd_t *pmd = pt_pmd_alloc(test, mm, PT_FIRST);
		unsigned long bytes = mm_pgtables_bytes(mm);
		long nr = pt_nr_pagetable();

		pt_inject_arm();
		err = __pte_alloc(mm, pmd);
		KUNIT_ASSERT_TRUE(test, pt_inject_fired());
		empty = pmd_none(*pmd);
		charged = mm_pgtables_bytes(mm) - bytes;
		counted = pt_nr_pagetable() - nr;

		err_after = pte_alloc(mm, pmd);
		counted_after = pt_nr_pagetable() - nr;
	} while (pt_again(counted || counted_after != 1, &try));
	pt_note_tries(test, try);
	/* What a fault turns into VM_FAULT_OOM... */
	KUNIT_EXPECT_EQ(test, err, -ENOMEM);
	/* ...with the PMD entry still empty and nothing accounted. */
	KUNIT_EXPECT_TRUE(test, empty);
	KUNIT_EXPECT_EQ(test, charged, 0UL);
	KUNIT_EXPECT_EQ(test, counted, 0);
	/* The next call, not armed, builds and counts the table. */
	KUNIT_EXPECT_EQ(test, err_after, 0);
	KUNIT_EXPECT_EQ(test, counted_after, 1);
}

/*
 * The allocator side of pmd_ctor_gives_a_kernel_table_no_lock(): with the
 * ptlock allocation set to fail, a kernel PMD table is still built, and
 * the failure is not consumed. Catches: pmd_alloc_one() for init_mm
 * depending on a lock allocation (a vmalloc or ioremap failing for want of
 * a lock it never takes).
 */
static void pmd_alloc_one_for_init_mm_allocates_no_ptlock(struct kunit *test)
{
	struct mm_struct *mm = pt_mm_alloc(test);
	bool fired;
	pmd_t *pmd;

	pt_need_allocated_ptlock(test, true);
	pt_inject_setup(test, mm);
	pt_inject_arm();
	pmd = pmd_alloc_one(&init_mm, PT_FIRST);
	fired = pt_inject_fired();
	/* Building a kernel PMD table never asks for a ptlock... */
	KUNIT_EXPECT_FALSE_MSG(test, fired,
			       "building a kernel PMD table asked for a ptlock");
	/* ...so it is built even while that allocation would fail... */
	KUNIT_ASSERT_NOT_NULL(test, pmd);
	/* ...and pmd_alloc_one() marks it a kernel page table. */
	KUNIT_EXPECT_TRUE(test, ptdesc_test_kernel(virt_to_ptdesc(pmd)));
	pmd_free(&init_mm, pmd);
}

static struct kunit_case pmd_ptlock_ctor_fail_cases[] = {
	KUNIT_CASE(pmd_alloc_one_returns_null_when_the_ptlock_allocation_fails),
	KUNIT_CASE(pmd_alloc_fails_without_touching_the_pud_or_the_accounting),
	KUNIT_CASE(pte_alloc_fails_without_touching_the_pmd_or_the_accounting),
	KUNIT_CASE(pmd_alloc_one_for_init_mm_allocates_no_ptlock),
	{}
};

static struct kunit_suite pmd_ptlock_ctor_fail_suite = {
	.name = "pmd_ptlock_ctor_fail",
	.test_cases = pmd_ptlock_ctor_fail_cases,
};

kunit_test_suites(&pmd_ptlock_lockptr_suite, &pmd_ptlock_deposit_suite,
		  &pmd_ptlock_ctor_suite, &pmd_ptlock_ctor_fail_suite);

MODULE_DESCRIPTION("KUnit tests for the split PMD page-table lock");
MODULE_LICENSE("GPL");
