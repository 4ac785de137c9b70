/* seccomp/policy_ranges.c — the no-args part of a program as a binary
 * search over ranges of syscall numbers that share an action.
 *
 * Why: libseccomp compares every syscall the rules name (≈ 450
 * instructions for the default policy's ≈ 350 syscalls on x86_64). The
 * same decisions fall into ≈ 60 ranges here, so the program shrinks to
 * ≈ 70 instructions: the kernel checks, converts and JIT-compiles every
 * instruction at each sandbox's start (≈ 0.3 µs each, ≈ 0.15 ms for the
 * old program), and every system call inside walks ≈ 6 comparisons
 * instead of ≈ 10 and a chain.
 * Only for policies whose one architecture is x86_64, and the caller uses
 * this program only after policy_ranges_agree found it to decide exactly
 * like libseccomp's on every syscall number that exists and on the edges
 * of every range; otherwise libseccomp's program stays. */
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>

#include "seccomp/policy_internal.h"

/* x32 system calls come in on the x86_64 architecture with this bit. */
#define X32_BIT 0x40000000u
#define MAX_RUNS 200 /* keeps every jump within BPF's 255 */

struct run {
	uint32_t first; /* numbers first .. the next run's first - 1 */
	uint32_t action;
};

struct gen {
	struct sock_filter *p;
	size_t n;
	const struct run *runs;
	const uint32_t *acts; /* distinct actions, their RETs after the tree */
	size_t n_acts;
	size_t ret_at; /* index of the first RET */
};

static size_t act_index(const struct gen *g, uint32_t a)
{
	for (size_t i = 0; i < g->n_acts; i++)
		if (g->acts[i] == a)
			return i;
	return 0; /* not reached: every run's action is listed */
}

/* The runs [lo, hi] as a subtree at the next free instruction; returns
 * where a jump into it must land. A subtree of one run is no instruction
 * at all, only its action's RET. */
static size_t emit(struct gen *g, size_t lo, size_t hi)
{
	if (lo == hi)
		return g->ret_at + act_index(g, g->runs[lo].action);
	size_t mid = lo + (hi - lo + 1) / 2; /* [lo, mid-1] below, [mid, hi] at or above */
	size_t at = g->n++;
	size_t below = emit(g, lo, mid - 1);
	size_t above = emit(g, mid, hi);
	g->p[at] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, g->runs[mid].first,
						(uint8_t)(above - at - 1), (uint8_t)(below - at - 1));
	return at;
}

int policy_ranges_build(uint32_t def, const int *nrs, const uint32_t *acts_of, size_t n,
			struct policy_bpf *out)
{
	/* the number space: what the rules say, the default elsewhere, and
	 * x32's numbers killed as a foreign ABI (but -1, which a tracer uses
	 * to skip a call, gets the default, as libseccomp does) */
	struct run *runs = calloc(2 * n + 4, sizeof(*runs));
	uint32_t acts[MAX_RUNS];
	size_t nr_runs = 0, n_acts = 0;
	if (!runs)
		return -ENOMEM;
	uint32_t next = 0; /* first number not yet covered */
	for (size_t i = 0; i < n; i++) {
		if (nrs[i] < 0 || (uint32_t)nrs[i] >= X32_BIT || (i > 0 && nrs[i] <= nrs[i - 1])) {
			free(runs);
			return -EINVAL; /* sorted, distinct, native numbers only */
		}
		if ((uint32_t)nrs[i] > next)
			runs[nr_runs++] = (struct run){ next, def };
		runs[nr_runs++] = (struct run){ (uint32_t)nrs[i], acts_of[i] };
		next = (uint32_t)nrs[i] + 1;
	}
	if (next < X32_BIT)
		runs[nr_runs++] = (struct run){ next, def };
	runs[nr_runs++] = (struct run){ X32_BIT, SECCOMP_RET_KILL_PROCESS };
	runs[nr_runs++] = (struct run){ 0xffffffffu, def };
	/* neighbours with one action are one run */
	size_t k = 0;
	for (size_t i = 0; i < nr_runs; i++)
		if (k == 0 || runs[k - 1].action != runs[i].action)
			runs[k++] = runs[i];
	nr_runs = k;
	for (size_t i = 0; i < nr_runs; i++) {
		bool seen = false;
		for (size_t j = 0; j < n_acts && !seen; j++)
			seen = acts[j] == runs[i].action;
		if (!seen && n_acts < MAX_RUNS)
			acts[n_acts++] = runs[i].action;
	}
	/* every jump lands within 255 instructions: the farthest is the
	 * arch check's, to the last instruction */
	if (nr_runs > MAX_RUNS || nr_runs + n_acts > 250) {
		free(runs);
		return -E2BIG;
	}

	/* arch check, number load, tree (nr_runs - 1 comparisons), one RET
	 * per action, and the foreign-architecture kill */
	size_t total = 3 + (nr_runs - 1) + n_acts + 1;
	struct gen g = { .p = calloc(total, sizeof(*g.p)), .runs = runs, .acts = acts,
			 .n_acts = n_acts };
	if (!g.p) {
		free(runs);
		return -ENOMEM;
	}
	size_t kill_at = total - 1;
	g.p[g.n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	g.p[g.n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0,
						  (uint8_t)(kill_at - 1 - 1));
	g.p[g.n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	g.ret_at = 3 + (nr_runs - 1);
	/* the root lands right after the load (with one run, that is its RET) */
	(void)emit(&g, 0, nr_runs - 1);
	for (size_t i = 0; i < n_acts; i++)
		g.p[g.n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, acts[i]);
	g.p[g.n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	free(runs);
	if (g.n != total) {
		free(g.p);
		return -EPROTO;
	}
	out->insns = g.p;
	out->len = (unsigned short)total;
	return 0;
}

/* Numbers on which two programs must agree: every number up to 4096 (far
 * beyond the last syscall), the edges of the x32 range, the top of the
 * space; on x86_64 and on other architectures. */
bool policy_ranges_agree(const struct policy_bpf *a, const struct policy_bpf *b)
{
	static const uint32_t arches[] = { AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, AUDIT_ARCH_AARCH64, 0 };
	static const uint32_t edges[] = { 0x3fffffffu, X32_BIT, X32_BIT + 1, X32_BIT + 0x200,
					  0x7fffffffu, 0x80000000u, 0xfffffffeu, 0xffffffffu };
	for (size_t ai = 0; ai < sizeof(arches) / sizeof(arches[0]); ai++) {
		for (uint32_t i = 0; i < 4096 + sizeof(edges) / sizeof(edges[0]); i++) {
			struct seccomp_data d = { .arch = arches[ai] };
			d.nr = (int)(i < 4096 ? i : edges[i - 4096]);
			uint32_t ra, rb;
			if (policy_bpf_run(a, &d, &ra) < 0 || policy_bpf_run(b, &d, &rb) < 0 || ra != rb)
				return false;
		}
	}
	return true;
}
