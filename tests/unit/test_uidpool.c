/* uidpool: the pool of host id ranges for sandboxes' user namespaces —
 * its config and its refusals, ranges taken once each, /etc/subuid and
 * /etc/subgid ranges skipped, exhaustion, giving back only one's own, and
 * the sweep of ranges whose creator died. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "store/uidpool.h"

static char dir[64], state[128], run[128];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/abox-uidpool-XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(run, sizeof(run), "%s/run", dir);
	mkdir(state, 0700);
}

static void teardown(void)
{
	rm_rf_at(AT_FDCWD, dir, 0);
}

TestSuite(uidpool, .init = setup, .fini = teardown);

static void config(const char *json)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/userns.json", state);
	FILE *f = fopen(p, "w");
	cr_assert(f);
	fputs(json, f);
	fclose(f);
}

static void file(const char *name, const char *text)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	cr_assert(f);
	fputs(text, f);
	fclose(f);
}

Test(uidpool, defaults_and_refusals)
{
	struct uidpool_cfg c;
	abox_error e = ABOX_ERROR_INIT;
	cr_assert_eq(uidpool_config(state, &c, &e), 0, "%s", e.msg);
	cr_assert(c.default_on);
	cr_assert_eq(c.start, 2147483648u);
	cr_assert_eq(c.ranges, 16384u);
	static const struct {
		const char *json, *says;
	} bad[] = {
		{ "{\"poolStart\": 1000}", "among the host's own ids" },
		{ "{\"poolStart\": 4294000000, \"poolRanges\": 100}", "run past the last id" },
		{ "{\"poolRanges\": 0}", "at least 1" },
		{ "{\"poolStart\": -1}", "whole number" },
		{ "{\"poolStart\": \"2\"}", "whole number" },
		{ "{\"default\": true}", "\"on\" or \"off\"" },
		{ "{\"defualt\": \"on\"}", "unknown key 'defualt'" },
		{ "[1]", "not a JSON object" },
		{ "{\"limits\": 3}", "limits must be an object" },
		{ "{\"limits\": {\"inotify\": 3}}", "unknown limit 'inotify'" },
		{ "{\"limits\": {\"inotify_watches\": -1}}", "whole number from 0 to 2147483647" },
		{ "{\"limits\": {\"inotify_watches\": 2147483648}}", "whole number from 0 to 2147483647" },
		{ "{\"limits\": {\"user_namespaces\": \"0\"}}", "whole number" },
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		config(bad[i].json);
		e = (abox_error)ABOX_ERROR_INIT;
		cr_assert_lt(uidpool_config(state, &c, &e), 0, "%s accepted", bad[i].json);
		cr_assert(strstr(e.msg, bad[i].says), "%s: %s", bad[i].json, e.msg);
		cr_assert(strstr(e.msg, "userns.json"), "the message names the file: %s", e.msg);
	}
	config("{\"default\": \"off\", \"poolStart\": 65536, \"poolRanges\": 3}");
	cr_assert_eq(uidpool_config(state, &c, &e), 0, "%s", e.msg);
	cr_assert(!c.default_on);
	cr_assert_eq(c.start, 65536u);
}

/* The namespace's own limits: no user namespaces inside unless told,
 * every other the kernel's; null gives one back to the kernel. */
Test(uidpool, limits)
{
	struct uidpool_cfg c;
	abox_error e = ABOX_ERROR_INIT;
	cr_assert_eq(uidpool_config(state, &c, &e), 0, "%s", e.msg);
	for (int i = 0; i < UIDPOOL_LIMITS; i++)
		cr_assert_eq(c.limits[i], strcmp(uidpool_limit_names[i], "user_namespaces") ? -1 : 0,
			     "default of %s", uidpool_limit_names[i]);
	config("{\"limits\": {\"user_namespaces\": null, \"inotify_instances\": 256, "
	       "\"fanotify_marks\": 0}}");
	cr_assert_eq(uidpool_config(state, &c, &e), 0, "%s", e.msg);
	for (int i = 0; i < UIDPOOL_LIMITS; i++) {
		const char *n = uidpool_limit_names[i];
		int64_t want = !strcmp(n, "inotify_instances") ? 256 : !strcmp(n, "fanotify_marks") ? 0 : -1;
		cr_assert_eq(c.limits[i], want, "%s: %lld", n, (long long)c.limits[i]);
	}
}

Test(uidpool, each_range_once_subids_skipped_exhaustion)
{
	/* four ranges from 100000; the second is a user's (subuid), the
	 * third overlaps a subgid entry by one id */
	config("{\"poolStart\": 100000, \"poolRanges\": 4}");
	file("subuid", "alice:165536:65536\n# comment\nbroken line\n");
	file("subgid", "bob:231071:10\n");
	struct uidpool_cfg c;
	abox_error e = ABOX_ERROR_INIT;
	cr_assert_eq(uidpool_config(state, &c, &e), 0, "%s", e.msg);
	char su[128], sg[128];
	snprintf(su, sizeof(su), "%s/subuid", dir);
	snprintf(sg, sizeof(sg), "%s/subgid", dir);
	c.subuid = su;
	c.subgid = sg;
	uint32_t a = 0, b = 0;
	cr_assert_eq(uidpool_take(run, &c, "sandbox-a", &a, &e), 0, "%s", e.msg);
	cr_assert_eq(uidpool_take(run, &c, "sandbox-b", &b, &e), 0, "%s", e.msg);
	cr_assert_neq(a, b);
	uint32_t ok[] = { 100000, 100000 + 3 * 65536 };
	cr_assert((a == ok[0] || a == ok[1]) && (b == ok[0] || b == ok[1]), "took %u and %u", a, b);
	uint32_t x;
	e = (abox_error)ABOX_ERROR_INIT;
	cr_assert_eq(uidpool_take(run, &c, "sandbox-c", &x, &e), -ENOSPC);
	cr_assert(strstr(e.msg, "all 4 uid ranges"), "%s", e.msg);
	cr_assert_eq(uidpool_used(run), 2);
	/* only the holder gives a range back */
	uidpool_give(run, a, "sandbox-b");
	cr_assert_eq(uidpool_used(run), 2);
	uidpool_give(run, a, "sandbox-a");
	cr_assert_eq(uidpool_used(run), 1);
	cr_assert_eq(uidpool_take(run, &c, "sandbox-c", &x, &e), 0, "%s", e.msg);
	cr_assert_eq(x, a);
}

Test(uidpool, sweep_takes_only_old_ranges_nobody_holds)
{
	config("{\"poolStart\": 100000, \"poolRanges\": 8}");
	struct uidpool_cfg c;
	abox_error e = ABOX_ERROR_INIT;
	cr_assert_eq(uidpool_config(state, &c, &e), 0);
	c.subuid = c.subgid = "/nonexistent";
	uint32_t dead, live, fresh;
	cr_assert_eq(uidpool_take(run, &c, "deadcreator000000000", &dead, &e), 0);
	cr_assert_eq(uidpool_take(run, &c, "livesandbox000000000", &live, &e), 0);
	cr_assert_eq(uidpool_take(run, &c, "freshcreate000000000", &fresh, &e), 0);
	/* the live one has its runtime folder; the dead and the fresh one
	 * have none, but the fresh one may be a create under way */
	char p[256];
	snprintf(p, sizeof(p), "%s/livesandbox000000000", run);
	cr_assert_eq(mkdir(p, 0700), 0);
	struct timespec old[2] = { { .tv_sec = time(NULL) - 600 }, { .tv_sec = time(NULL) - 600 } };
	snprintf(p, sizeof(p), "%s/uids/%u", run, dead);
	cr_assert_eq(utimensat(AT_FDCWD, p, old, 0), 0);
	snprintf(p, sizeof(p), "%s/uids/%u", run, live);
	cr_assert_eq(utimensat(AT_FDCWD, p, old, 0), 0);
	unsigned removed = 0;
	cr_assert_eq(uidpool_sweep(run, state, &removed), 0);
	cr_assert_eq(removed, 1);
	cr_assert_eq(uidpool_used(run), 2);
	snprintf(p, sizeof(p), "%s/uids/%u", run, dead);
	cr_assert_neq(access(p, F_OK), 0, "the dead creator's range is free");
}
