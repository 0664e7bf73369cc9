// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the split PMD page-table lock.
 *
 * With CONFIG_SPLIT_PMD_PTLOCKS every PMD table carries its own spinlock
 * (ptdesc->ptl) and its own queue of PTE tables deposited for THP
 * (ptdesc->pmd_huge_pte); without it both are per mm (mm->page_table_lock,
 * mm->pmd_huge_pte). The cases build real page tables in a real mm through
 * the kernel's own allocation path and check lock identity, the deposit
 * queue and the PMD table constructor/destructor, asserting whichever of the
 * two designs the configuration selects.
 */

#include <kunit/test.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/pgtable.h>
#include <linux/sched/mm.h>
#include <linux/sizes.h>
#include <linux/spinlock.h>
#include <asm/pgalloc.h>
#include <asm/tlb.h>

/*
 * User addresses 1 GiB (PUD_SIZE) apart are mapped by different PMD tables;
 * every case stays inside [PT_FIRST, PT_END), which the cleanup frees.
 */
#define PT_FIRST	SZ_1G
#define PT_SECOND	(2UL * SZ_1G)
#define PT_END		(4UL * SZ_1G)

/* What a freshly allocated page may hold where pmd_huge_pte lives. */
#define PT_GARBAGE	((pgtable_t)0xdead4ead00000000UL)

static const bool split_pmd = IS_ENABLED(CONFIG_SPLIT_PMD_PTLOCKS);

/*
 * The per-mm deposit queue exists only without split PMD locks, a table's
 * own lock (ptlock_ptr()) only with split PTE locks: both configurations
 * compile every case, each asserting what its configuration guarantees.
 */
#ifdef CONFIG_SPLIT_PMD_PTLOCKS
#define PT_MM_QUEUE(mm)		((void)(mm), (pgtable_t *)NULL)
#else
#define PT_MM_QUEUE(mm)		(&(mm)->pmd_huge_pte)
#endif
#ifdef CONFIG_SPLIT_PTE_PTLOCKS
#define PT_TABLE_LOCK(ptdesc)	ptlock_ptr(ptdesc)
#else
#define PT_TABLE_LOCK(ptdesc)	((void)(ptdesc), (spinlock_t *)NULL)
#endif

static void pt_mm_release(void *data)
{
	struct mm_struct *mm = data;
	struct mmu_gather tlb;

	/*
	 * exit_mmap() skips free_pgtables() for an mm without VMAs: free the
	 * tables the case built, or check_mm() reports non-zero pgtables_bytes.
	 */
	tlb_gather_mmu(&tlb, mm);
	free_pgd_range(&tlb, PT_FIRST, PT_END, FIRST_USER_ADDRESS,
		       USER_PGTABLES_CEILING);
	tlb_finish_mmu(&tlb);
	mmput(mm);
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
 * scaling), or not sharing the mm lock without them (no mutual exclusion).
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

	KUNIT_ASSERT_EQ(test, 0, pte_alloc(mm, pmd));
	KUNIT_ASSERT_TRUE(test, pmd_present(*pmd));
	if (split_pmd) {
		/* Two tables, two locks: the PMD table's and the PTE table's. */
		KUNIT_EXPECT_PTR_NE(test, pmd_lockptr(mm, pmd),
				    pte_lockptr(mm, pmd));
		KUNIT_EXPECT_PTR_EQ(test, pte_lockptr(mm, pmd),
				    PT_TABLE_LOCK(page_ptdesc(pmd_page(*pmd))));
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

/* Catches: pmd_lock() taking or returning another lock than pmd_lockptr(). */
static void pmd_lock_returns_the_lockptr_held(struct kunit *test)
{
	struct mm_struct *mm = pt_mm_alloc(test);
	pmd_t *pmd = pt_pmd_alloc(test, mm, PT_FIRST);
	spinlock_t *want = pmd_lockptr(mm, pmd);
	spinlock_t *ptl;	/* what pmd_lock() returns */

	KUNIT_ASSERT_FALSE(test, spin_is_locked(want));
	ptl = pmd_lock(mm, pmd);
	/* The lock returned is the one pmd_lockptr() names... */
	KUNIT_EXPECT_PTR_EQ(test, ptl, want);
	/* ...and it is held on return. */
	KUNIT_EXPECT_TRUE(test, spin_is_locked(want));
	spin_unlock(ptl);
	KUNIT_EXPECT_FALSE(test, spin_is_locked(want));
}

static struct kunit_case pmd_ptlock_lockptr_cases[] = {
	KUNIT_CASE(pmd_lockptr_is_the_same_for_every_entry_of_a_table),
	KUNIT_CASE(pmd_lockptr_is_the_tables_ptlock_or_the_mm_lock),
	KUNIT_CASE(pmd_lockptr_of_tables_a_gigabyte_apart_differ_only_when_split),
	KUNIT_CASE(pmd_lockptr_differs_between_two_mms),
	KUNIT_CASE(pmd_lock_differs_from_the_pte_lock_of_a_table_below),
	KUNIT_CASE(pmd_lock_returns_the_lockptr_held),
	{}
};

static struct kunit_suite pmd_ptlock_lockptr_suite = {
	.name = "pmd_ptlock_lockptr",
	.test_cases = pmd_ptlock_lockptr_cases,
};

/* ---- Deposit / withdraw ----------------------------------------------- */

#define PT_MAX_DEPOSITS	8

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
 * Catches: pmd_huge_pte() reaching the wrong queue (another table's, or
 * the mm's under split locks), so one table's zap frees another's deposit.
 */
static void deposits_come_back_only_from_their_own_table(struct kunit *test)
{
	struct mm_struct *mm = pt_mm_alloc(test);
	pmd_t *p1 = pt_pmd_alloc(test, mm, PT_FIRST);
	pmd_t *p1b = pt_pmd_alloc(test, mm, PT_FIRST + 5 * PMD_SIZE);
	pmd_t *p2 = pt_pmd_alloc(test, mm, PT_SECOND);
	pgtable_t a1 = pt_pgtable_alloc(test, mm);
	pgtable_t b1 = pt_pgtable_alloc(test, mm);
	pgtable_t a2 = pt_pgtable_alloc(test, mm);
	pgtable_t got[3];
	int i;

	pt_deposit(mm, p1, a1);
	pt_deposit(mm, p1b, b1);	/* another entry of the same table */
	pt_deposit(mm, p2, a2);

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
		/* Without split locks the queue is the mm's: one queue for all. */
		KUNIT_EXPECT_PTR_EQ(test, &pmd_huge_pte(mm, p1),
				    PT_MM_QUEUE(mm));
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
 * Catches: a queue keyed by entry rather than by table (zap_huge_pmd()
 * withdraws through the entry it zaps, which mremap may have changed).
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

static const int pt_deposit_counts[] = { 1, 2, 3, 4, PT_MAX_DEPOSITS };

static void pt_deposit_count_desc(const int *n, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%d deposits", *n);
}

KUNIT_ARRAY_PARAM(pt_deposit_count, pt_deposit_counts, pt_deposit_count_desc);

/*
 * The generic queue is commented "FIFO" but is not: deposit links each new
 * table after the previous head and makes it the head, withdraw takes the
 * head and moves to the head's successor, so N deposits come back as the
 * newest first, then the rest oldest first. Deposited tables are
 * interchangeable, so no caller needs an order; pinning it pins the list
 * discipline, so a change that drops, repeats or misorders an entry (or
 * turns the queue into a true FIFO or LIFO) is caught and must be reviewed.
 */
static void withdraw_order_is_newest_then_oldest_onward(struct kunit *test)
{
	const int n = *(const int *)test->param_value;
	struct mm_struct *mm = pt_mm_alloc(test);
	pmd_t *pmd = pt_pmd_alloc(test, mm, PT_FIRST);
	pgtable_t dep[PT_MAX_DEPOSITS], got[PT_MAX_DEPOSITS];
	int i;

	for (i = 0; i < n; i++)
		dep[i] = pt_pgtable_alloc(test, mm);
	for (i = 0; i < n; i++)
		pt_deposit(mm, pmd, dep[i]);
	for (i = 0; i < n; i++)
		got[i] = pt_withdraw(mm, pmd);
	KUNIT_EXPECT_NULL(test, pmd_huge_pte(mm, pmd));

	/* Newest first... */
	KUNIT_EXPECT_PTR_EQ(test, got[0], dep[n - 1]);
	/* ...then the others in the order they were deposited. */
	for (i = 1; i < n; i++)
		KUNIT_EXPECT_PTR_EQ_MSG(test, got[i], dep[i - 1],
					"withdraw %d of %d", i + 1, n);
	for (i = 0; i < n; i++)
		pt_pgtable_free(mm, got[i]);
}

static struct kunit_case pmd_ptlock_deposit_cases[] = {
	KUNIT_CASE(withdraw_returns_the_deposit_and_empties_the_queue),
	KUNIT_CASE(deposits_come_back_only_from_their_own_table),
	KUNIT_CASE(deposit_and_withdraw_through_different_entries_share_a_queue),
	KUNIT_CASE_PARAM(withdraw_order_is_newest_then_oldest_onward,
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
	struct ptdesc *ptdesc = pt_ptdesc_alloc(test);

	KUNIT_ASSERT_FALSE(test, folio_test_pgtable(ptdesc_folio(ptdesc)));
	KUNIT_ASSERT_TRUE(test, pagetable_pmd_ctor(ptdesc));
	KUNIT_EXPECT_TRUE(test, folio_test_pgtable(ptdesc_folio(ptdesc)));
	pagetable_pmd_dtor(ptdesc);
}

/*
 * Catches: a ctor that does not reset pmd_huge_pte, so the first THP
 * deposit on a recycled page links into a stale list.
 */
static void pmd_ctor_resets_a_garbage_deposit_queue(struct kunit *test)
{
	struct ptdesc *ptdesc = pt_ptdesc_alloc(test);

	/* The field overlays page->lru, which the page allocator leaves dirty. */
	ptdesc->pmd_huge_pte = PT_GARBAGE;
	KUNIT_ASSERT_TRUE(test, pagetable_pmd_ctor(ptdesc));
	if (split_pmd) {
		KUNIT_EXPECT_NULL(test, ptdesc->pmd_huge_pte);
	} else {
		/* The queue is the mm's: the ctor need not, and does not, touch it. */
		KUNIT_EXPECT_PTR_EQ(test, ptdesc->pmd_huge_pte, PT_GARBAGE);
		ptdesc->pmd_huge_pte = NULL;
	}
	pagetable_pmd_dtor(ptdesc);
}

/*
 * Catches: a ctor that skips ptlock_init() (an uninitialised or, with
 * ALLOC_SPLIT_PTLOCKS, unallocated lock) under split locks.
 */
static void pmd_ctor_initialises_a_usable_ptlock(struct kunit *test)
{
	struct ptdesc *ptdesc = pt_ptdesc_alloc(test);
	pmd_t *table = ptdesc_address(ptdesc);
	spinlock_t *ptl;	/* the lock the ctor set up */

	KUNIT_ASSERT_TRUE(test, pagetable_pmd_ctor(ptdesc));
	if (split_pmd) {
		ptl = PT_TABLE_LOCK(ptdesc);
		KUNIT_ASSERT_NOT_NULL(test, ptl);
		/* Initialised unlocked: it can be taken, and released. */
		KUNIT_EXPECT_FALSE(test, spin_is_locked(ptl));
		KUNIT_EXPECT_TRUE(test, spin_trylock(ptl));
		KUNIT_EXPECT_TRUE(test, spin_is_locked(ptl));
		spin_unlock(ptl);
		/* pmd_lockptr() of any entry of this page finds this lock. */
		KUNIT_EXPECT_PTR_EQ(test, pmd_lockptr(NULL, table + 7), ptl);
	} else {
		struct mm_struct *mm = pt_mm_alloc(test);

		/* No per-table lock to set up: the mm's lock serves the table. */
		KUNIT_EXPECT_PTR_EQ(test, pmd_lockptr(mm, table + 7),
				    &mm->page_table_lock);
	}
	pagetable_pmd_dtor(ptdesc);
}

/* Catches: a ctor/dtor pair that does not keep NR_PAGETABLE balanced. */
static void pmd_ctor_and_dtor_each_move_nr_pagetable_by_one(struct kunit *test)
{
	struct ptdesc *ptdesc = pt_ptdesc_alloc(test);
	long before = pt_nr_pagetable();

	KUNIT_ASSERT_TRUE(test, pagetable_pmd_ctor(ptdesc));
	/* One order-0 table page more... */
	KUNIT_EXPECT_EQ(test, pt_nr_pagetable(), before + 1);
	pagetable_pmd_dtor(ptdesc);
	/* ...and exactly back after the dtor. */
	KUNIT_EXPECT_EQ(test, pt_nr_pagetable(), before);
}

/* Catches: a dtor that leaves PageTable() set on a page about to be freed. */
static void pmd_dtor_clears_the_page_table_mark(struct kunit *test)
{
	struct ptdesc *ptdesc = pt_ptdesc_alloc(test);

	KUNIT_ASSERT_TRUE(test, pagetable_pmd_ctor(ptdesc));
	pagetable_pmd_dtor(ptdesc);
	KUNIT_EXPECT_FALSE(test, folio_test_pgtable(ptdesc_folio(ptdesc)));
}

/*
 * Catches: __pmd_alloc() accounting a PMD table twice or not at all, and a
 * second pmd_alloc() in the same table allocating a table again.
 */
static void pmd_alloc_accounts_one_table_per_gigabyte(struct kunit *test)
{
	struct mm_struct *mm = pt_mm_alloc(test);
	unsigned long bytes;
	long nr;

	/* The PUD level exists first, so only PMD tables are counted below. */
	pt_pmd_alloc(test, mm, PT_FIRST);
	bytes = mm_pgtables_bytes(mm);
	nr = pt_nr_pagetable();

	pt_pmd_alloc(test, mm, PT_SECOND);
	KUNIT_EXPECT_EQ(test, mm_pgtables_bytes(mm),
			bytes + PTRS_PER_PMD * sizeof(pmd_t));
	KUNIT_EXPECT_EQ(test, pt_nr_pagetable(), nr + 1);

	/* Another entry of an existing table allocates nothing. */
	pt_pmd_alloc(test, mm, PT_SECOND + 17 * PMD_SIZE);
	KUNIT_EXPECT_EQ(test, mm_pgtables_bytes(mm),
			bytes + PTRS_PER_PMD * sizeof(pmd_t));
	KUNIT_EXPECT_EQ(test, pt_nr_pagetable(), nr + 1);
}

/*
 * Catches: a dtor or free path that leaks the accounting of PMD tables (or
 * the PTE tables under them) when an mm's page tables are torn down.
 */
static void torn_down_tables_return_pgtables_bytes_and_nr_pagetable(struct kunit *test)
{
	struct mm_struct *mm = pt_mm_alloc(test);
	unsigned long bytes = mm_pgtables_bytes(mm);
	long nr = pt_nr_pagetable();
	struct mmu_gather tlb;
	unsigned long addr;

	for (addr = PT_FIRST; addr < PT_END; addr += PUD_SIZE / 4) {
		pmd_t *pmd = pt_pmd_alloc(test, mm, addr);

		KUNIT_ASSERT_EQ(test, 0, pte_alloc(mm, pmd));
	}
	/* One PUD table, three PMD tables and twelve PTE tables were built. */
	KUNIT_EXPECT_EQ(test, mm_pgtables_bytes(mm),
			bytes + PTRS_PER_PUD * sizeof(pud_t) +
			3 * PTRS_PER_PMD * sizeof(pmd_t) +
			12 * PTRS_PER_PTE * sizeof(pte_t));
	KUNIT_EXPECT_EQ(test, pt_nr_pagetable(), nr + 1 + 3 + 12);

	/* What exit_mmap() does for an mm with VMAs. */
	tlb_gather_mmu(&tlb, mm);
	free_pgd_range(&tlb, PT_FIRST, PT_END, FIRST_USER_ADDRESS,
		       USER_PGTABLES_CEILING);
	tlb_finish_mmu(&tlb);
	KUNIT_EXPECT_EQ(test, mm_pgtables_bytes(mm), bytes);
	KUNIT_EXPECT_EQ(test, pt_nr_pagetable(), nr);
}

static struct kunit_case pmd_ptlock_ctor_cases[] = {
	KUNIT_CASE(pmd_ctor_marks_the_page_a_page_table),
	KUNIT_CASE(pmd_ctor_resets_a_garbage_deposit_queue),
	KUNIT_CASE(pmd_ctor_initialises_a_usable_ptlock),
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

kunit_test_suites(&pmd_ptlock_lockptr_suite, &pmd_ptlock_deposit_suite,
		  &pmd_ptlock_ctor_suite);

MODULE_DESCRIPTION("KUnit tests for the split PMD page-table lock");
MODULE_LICENSE("GPL");
