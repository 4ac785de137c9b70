/* The no-args part of a program as ranges (seccomp/policy_ranges.c):
 * every syscall number gets its table's action, the foreign ABIs are
 * killed, and the check against libseccomp's program notices any
 * difference. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>

#include "seccomp/policy.h"
#include "seccomp/policy_internal.h"

#define ALLOW SECCOMP_RET_ALLOW
#define EPERM_ (SECCOMP_RET_ERRNO | 1)
#define ENOSYS_ (SECCOMP_RET_ERRNO | 38)
#define KILL SECCOMP_RET_KILL_PROCESS

static uint32_t run(const struct policy_bpf *b, uint32_t arch, uint32_t nr)
{
	struct seccomp_data d = { .nr = (int)nr, .arch = arch };
	uint32_t ret = 0;
	cr_assert_eq(policy_bpf_run(b, &d, &ret), 0, "program rejected by the simulator");
	return ret;
}

/* the action the table gives nr (what the program must return on x86_64) */
static uint32_t want(const int *nrs, const uint32_t *acts, size_t n, uint32_t def, uint32_t nr)
{
	if (nr >= 0x40000000u && nr != 0xffffffffu)
		return KILL;
	for (size_t i = 0; i < n; i++)
		if ((uint32_t)nrs[i] == nr)
			return acts[i];
	return def;
}

static void check_all(const struct policy_bpf *b, const int *nrs, const uint32_t *acts, size_t n,
		      uint32_t def)
{
	for (uint32_t nr = 0; nr < 5000; nr++)
		cr_assert_eq(run(b, AUDIT_ARCH_X86_64, nr), want(nrs, acts, n, def, nr), "nr %u", nr);
	static const uint32_t edges[] = { 0x3fffffffu, 0x40000000u, 0x40000001u, 0x7fffffffu,
					  0x80000000u, 0xfffffffeu, 0xffffffffu };
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
		cr_assert_eq(run(b, AUDIT_ARCH_X86_64, edges[i]), want(nrs, acts, n, def, edges[i]),
			     "nr 0x%x", edges[i]);
	cr_assert_eq(run(b, AUDIT_ARCH_I386, 0), KILL, "a foreign architecture must be killed");
	cr_assert_eq(run(b, AUDIT_ARCH_AARCH64, 1), KILL);
}

Test(policy_ranges, every_number_gets_its_action)
{
	const int nrs[] = { 0, 1, 2, 5, 100, 101, 334, 435 };
	const uint32_t acts[] = { ALLOW, ALLOW, EPERM_, ALLOW, KILL, ENOSYS_, ALLOW, EPERM_ };
	struct policy_bpf b = { 0 };
	cr_assert_eq(policy_ranges_build(ENOSYS_, nrs, acts, 8, &b), 0);
	check_all(&b, nrs, acts, 8, ENOSYS_);
	policy_bpf_free(&b);
}

Test(policy_ranges, a_default_that_allows)
{
	const int nrs[] = { 165, 166, 250 };
	const uint32_t acts[] = { EPERM_, EPERM_, KILL };
	struct policy_bpf b = { 0 };
	cr_assert_eq(policy_ranges_build(ALLOW, nrs, acts, 3, &b), 0);
	check_all(&b, nrs, acts, 3, ALLOW);
	policy_bpf_free(&b);
}

Test(policy_ranges, no_rules_at_all)
{
	struct policy_bpf b = { 0 };
	cr_assert_eq(policy_ranges_build(ENOSYS_, NULL, NULL, 0, &b), 0);
	check_all(&b, NULL, NULL, 0, ENOSYS_);
	policy_bpf_free(&b);
	/* a default that kills merges with the x32 range: one run */
	cr_assert_eq(policy_ranges_build(KILL, NULL, NULL, 0, &b), 0);
	check_all(&b, NULL, NULL, 0, KILL);
	policy_bpf_free(&b);
}

/* as many alternating ranges as the short jumps allow, each checked */
Test(policy_ranges, many_ranges_stay_within_short_jumps)
{
	enum { N = 80 }; /* with the gaps between them: ≈ 160 ranges */
	int nrs[N];
	uint32_t acts[N];
	for (int i = 0; i < N; i++) {
		nrs[i] = 2 * i + 1;
		acts[i] = i % 2 ? ALLOW : EPERM_;
	}
	struct policy_bpf b = { 0 };
	cr_assert_eq(policy_ranges_build(ENOSYS_, nrs, acts, N, &b), 0);
	check_all(&b, nrs, acts, N, ENOSYS_);
	policy_bpf_free(&b);
}

Test(policy_ranges, refuses_what_it_cannot_do)
{
	enum { N = 300 };
	int nrs[N];
	uint32_t acts[N];
	for (int i = 0; i < N; i++) {
		nrs[i] = 2 * i;
		acts[i] = i % 2 ? ALLOW : EPERM_;
	}
	struct policy_bpf b = { 0 };
	cr_assert_eq(policy_ranges_build(ENOSYS_, nrs, acts, N, &b), -E2BIG, "too many ranges");
	const int unsorted[] = { 5, 3 };
	const uint32_t two[] = { ALLOW, ALLOW };
	cr_assert_eq(policy_ranges_build(ENOSYS_, unsorted, two, 2, &b), -EINVAL);
	const int x32[] = { 0x40000001 };
	cr_assert_eq(policy_ranges_build(ENOSYS_, x32, two, 1, &b), -EINVAL, "numbers must be native");
	const int neg[] = { -101 };
	cr_assert_eq(policy_ranges_build(ENOSYS_, neg, two, 1, &b), -EINVAL);
}

Test(policy_ranges, agreement_notices_one_differing_number)
{
	const int nrs[] = { 0, 1, 2, 200 };
	const uint32_t a_acts[] = { ALLOW, ALLOW, EPERM_, ALLOW };
	const uint32_t b_acts[] = { ALLOW, ALLOW, EPERM_, EPERM_ };
	struct policy_bpf a = { 0 }, b = { 0 }, c = { 0 };
	cr_assert_eq(policy_ranges_build(ENOSYS_, nrs, a_acts, 4, &a), 0);
	cr_assert_eq(policy_ranges_build(ENOSYS_, nrs, b_acts, 4, &b), 0);
	cr_assert_eq(policy_ranges_build(ENOSYS_, nrs, a_acts, 4, &c), 0);
	cr_assert(policy_ranges_agree(&a, &c));
	cr_assert_not(policy_ranges_agree(&a, &b), "syscall 200 differs");
	/* and a difference only in what foreign architectures get */
	c.insns[c.len - 1].k = SECCOMP_RET_ERRNO | 1;
	cr_assert_not(policy_ranges_agree(&a, &c));
	policy_bpf_free(&a);
	policy_bpf_free(&b);
	policy_bpf_free(&c);
}

/* The default policy compiles to the short form (and policy_verify and
 * the agreement check passed on the way). */
Test(policy_ranges, the_default_policy_is_short)
{
	char path[4096];
	const char *src = getenv("ABOX_SOURCE_DIR");
	snprintf(path, sizeof(path), "%s/policies/default.json", src && *src ? src : ".");
	char *json = NULL;
	size_t len = 0;
	cr_assert_eq(read_file_at(AT_FDCWD, path, 1 << 20, &json, &len), 0, "read %s", path);
	struct policy_env env = { .caps = 0, .kernel = 6001 };
	struct policy_bpf b = { 0 };
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(policy_compile(json, len, path, &env, &b, &err), 0, "%s", err.msg);
	cr_assert_lt(b.len, 200, "%u instructions: libseccomp's long form was kept", b.len);
	policy_bpf_free(&b);
	free(json);
}
