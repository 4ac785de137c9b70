/* Snapshots: a sandbox's files copied into an immutable layer, and new
 * sandboxes started from it; forks are isolated from each other and from
 * the source; chains stack; snapshots in use cannot be removed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(snapshot, .init = sandbox_suite_init, .fini = sandbox_suite_fini, .timeout = 120);

#define SH(id, script) free(root_sh(id, script))

Test(snapshot, forks_see_the_files_of_the_snapshot_and_only_their_own_changes)
{
	char *src = ABOX_LINE("create", "--timeout", "120");
	SH(src, "echo kept > /home/user/kept; chown 1000:1000 /home/user/kept; chmod 4710 /home/user/kept;"
		"mkdir -p /srv/d/e; echo deep > /srv/d/e/f; ln /srv/d/e/f /srv/hard; ln -s /etc/shadow /srv/link;"
		"setfattr -n user.k -v v /srv/d/e/f 2>/dev/null || true; rm /etc/debian_version");
	char *snap = ABOX_LINE("snapshot", "--name", "forks-base", src);
	cr_assert_eq(strlen(snap), 20, "snapshot prints its id: %s", snap);
	/* the source changes after the snapshot: forks must not see it */
	SH(src, "echo later > /home/user/later; echo changed > /home/user/kept");

	char *a = ABOX_LINE("create", "--from", "forks-base", "--timeout", "120");
	char *b = ABOX_LINE("create", "--from", snap, "--timeout", "120");
	char *out = root_sh(
		a, "cat /home/user/kept; stat -c '%a %u:%g' /home/user/kept; cat /srv/d/e/f;"
		   "stat -c %h /srv/hard; readlink /srv/link; test -e /etc/debian_version || echo gone;"
		   "test -e /home/user/later || echo no-later; hostname");
	char want[512];
	snprintf(want, sizeof(want), "kept\n4710 1000:1000\ndeep\n2\n/etc/shadow\ngone\nno-later\n%s\n", a);
	cr_assert_str_eq(out, want);
	free(out);

	SH(a, "echo mine > /home/user/a-only; rm /home/user/kept");
	out = root_sh(b, "cat /home/user/kept; test -e /home/user/a-only || echo isolated");
	cr_assert_str_eq(out, "kept\nisolated\n", "a fork's changes leak into another fork");
	free(out);
	out = root_sh(src, "cat /home/user/kept; test -e /home/user/a-only || echo isolated");
	cr_assert_str_eq(out, "changed\nisolated\n", "a fork's changes leak into the source");
	free(out);

	ABOX_OK("kill", src, a, b);
	ABOX_OK("snapshots", "rm", snap);
	free(src), free(a), free(b), free(snap);
}

Test(snapshot, chains_stack_and_in_use_snapshots_are_kept)
{
	char *src = ABOX_LINE("create", "--timeout", "120");
	SH(src, "echo one > /srv/one; echo gone-later > /srv/two");
	char *s1 = ABOX_LINE("snapshot", src);
	char *mid = ABOX_LINE("create", "--from", s1, "--timeout", "120");
	SH(mid, "echo three > /srv/three; rm /srv/two");
	char *s2 = ABOX_LINE("snapshot", "--json", mid);
	cr_assert(strstr(s2, "\"depth\":2"), "second snapshot is two layers deep: %s", s2);
	char want_parent[64];
	snprintf(want_parent, sizeof(want_parent), "\"parent\":\"%s\"", s1);
	cr_assert(strstr(s2, want_parent), "its parent is the first: %s", s2);
	char s2id[ABOX_ID_LEN + 1];
	char *p = strstr(s2, "\"id\":\"");
	cr_assert_not_null(p);
	memcpy(s2id, p + 6, 20);
	s2id[20] = '\0';

	char *top = ABOX_LINE("create", "--from", s2id, "--timeout", "120");
	char *out = root_sh(top, "cat /srv/one /srv/three; test -e /srv/two || echo two-deleted");
	cr_assert_str_eq(out, "one\nthree\ntwo-deleted\n");
	free(out);

	/* in use: by sandbox `top`, and s1 by snapshot s2 */
	ABOX_EXPECT(NONZERO, NULL, "in use by sandbox", "snapshots", "rm", s2id);
	ABOX_OK("kill", src, mid, top);
	ABOX_EXPECT(NONZERO, NULL, "in use by snapshot", "snapshots", "rm", s1);
	ABOX_OK("snapshots", "rm", s2id);
	ABOX_OK("snapshots", "rm", s1);
	struct run_result r;
	ABOX(&r, "snapshots", "ls");
	cr_assert_null(strstr(r.out, s1), "%s", r.out);
	run_result_free(&r);
	free(src), free(mid), free(top), free(s1), free(s2);
}

Test(snapshot, names_are_unique_and_unknown_snapshots_are_named_in_errors)
{
	char *src = ABOX_LINE("create", "--timeout", "120");
	char *s = ABOX_LINE("snapshot", "--name", "dup-name", src);
	ABOX_EXPECT(NONZERO, NULL, "taken", "snapshot", "--name", "dup-name", src);
	ABOX_EXPECT(NONZERO, NULL, "no-such-snapshot", "create", "--from", "no-such-snapshot");
	ABOX_OK("kill", src);
	ABOX_OK("snapshots", "rm", "dup-name");
	free(src), free(s);
}

Test(snapshot, fork_gives_independent_copies_and_the_source_runs_on)
{
	char *src = ABOX_LINE("create", "--timeout", "120", "--memory", "256M", "--metadata", "team=forks",
			      "-e", "FOO=bar");
	SH(src, "echo from-source > /srv/f");
	/* the beat is renamed into place: a reader never sees the empty file
	 * between a truncation and date's write (long under load) */
	ABOX_OK("exec", "-d", src, "--", "sh", "-c",
		"while :; do date +%s%N > /tmp/beat.new && mv /tmp/beat.new /tmp/beat; sleep 0.02; done");
	struct run_result r;
	ABOX(&r, "snapshots", "ls", "--json");
	char *snaps_before = r.out;
	free(r.err);
	ABOX(&r, "fork", "--count", "3", src);
	cr_assert_eq(r.status, 0, "fork: %s", r.err);
	char *ids[3], *save = NULL, *line = strtok_r(r.out, "\n", &save);
	for (int i = 0; i < 3; i++, line = strtok_r(NULL, "\n", &save)) {
		cr_assert_not_null(line, "fork prints one line per fork: %s", r.out);
		cr_assert_eq(strlen(line), 20, "a fork's id: %s", line);
		ids[i] = strdup(line);
	}
	run_result_free(&r);
	for (int i = 0; i < 3; i++) {
		char script[128];
		snprintf(script, sizeof(script), "cat /srv/f; echo $FOO; echo fork%d > /srv/f", i);
		char *out = root_sh(ids[i], script);
		cr_assert_str_eq(out, "from-source\nbar\n", "fork %d", i);
		free(out);
		ABOX(&r, "info", "--json", ids[i]);
		cr_assert(strstr(r.out, "\"memoryBytes\":268435456") && strstr(r.out, "\"team\":\"forks\""),
			  "a fork keeps the source's limits and metadata: %s", r.out);
		run_result_free(&r);
	}
	/* each fork wrote its own /srv/f: none sees another's */
	char *out = root_sh(ids[1], "cat /srv/f");
	cr_assert_str_eq(out, "fork1\n");
	free(out);
	/* the source was frozen only for the copy: its loop still beats */
	char *b1 = root_sh(src, "cat /tmp/beat; cat /srv/f"), *b2 = NULL;
	/* a loaded machine may starve the loop for a while: it must beat again
	 * within seconds, not within a fixed moment */
	for (int i = 0; i < 100 && (!b2 || !strcmp(b1, b2)); i++) {
		free(b2);
		usleep(50 * 1000);
		b2 = root_sh(src, "cat /tmp/beat; cat /srv/f");
	}
	cr_assert(strcmp(b1, "from-source\n") != 0, "the source's loop left no beat: %s", b1);
	cr_assert_str_neq(b1, b2, "the source's background loop stopped");
	cr_assert(strstr(b2, "from-source"), "%s", b2);
	free(b1);
	free(b2);

	ABOX_OK("kill", src, ids[0], ids[1], ids[2]);
	/* the fork's snapshot goes with its last fork */
	ABOX_OK("gc");
	/* a fork's snapshot must not outlive its forks */
	ABOX_EXPECT(ANY_STATUS, snaps_before, NULL, "snapshots", "ls", "--json");
	free(snaps_before);
	for (int i = 0; i < 3; i++)
		free(ids[i]);
	free(src);
}

/* A chain at its depth limit is flattened into one layer: what each layer
 * added, deleted (template files included) or replaced stays exactly so. */
Test(snapshot, deep_chains_are_flattened_exactly)
{
	char *cur = ABOX_LINE("create", "--timeout", "120");
	SH(cur, "echo 0 > /srv/f0; echo doomed > /srv/doomed; mkdir -p /srv/dir; echo x > /srv/dir/x");
	char *snaps[20];
	int ns = 0;
	for (int i = 1; i <= 17; i++) {
		char script[512];
		snprintf(script, sizeof(script), "echo %d > /srv/f%d; echo %d > /srv/last", i, i, i);
		if (i == 2) /* a template folder deleted ... */
			strcat(script, "; rm -rf /usr/share/doc/bash; rm /srv/doomed /etc/debian_version");
		if (i == 3) /* ... and made again: only the new content shows */
			strcat(script, "; mkdir /usr/share/doc/bash; echo new > /usr/share/doc/bash/only");
		if (i == 5) /* a folder replaced by a file, and a file by a folder */
			strcat(script, "; rm -rf /srv/dir; echo file > /srv/dir; rm /srv/f1; mkdir /srv/f1");
		SH(cur, script);
		snaps[ns++] = ABOX_LINE("snapshot", cur);
		char *next = ABOX_LINE("create", "--from", snaps[ns - 1], "--timeout", "120");
		ABOX_OK("kill", cur);
		free(cur);
		cur = next;
	}
	/* the 17th snapshot stood on 16: it was flattened */
	struct run_result r;
	ABOX(&r, "snapshots", "ls", "--json");
	char want[64];
	snprintf(want, sizeof(want), "\"id\":\"%s\",\"name\":null,\"parent\":null", snaps[ns - 1]);
	cr_assert(strstr(r.out, want), "the last snapshot has no parent: %s", r.out);
	run_result_free(&r);
	char *out = root_sh(
		cur, "cat /srv/f0 /srv/f2 /srv/f17 /srv/last /srv/dir; test -d /srv/f1 && echo f1-dir;"
		     "test -e /srv/doomed || echo doomed-gone; test -e /etc/debian_version || echo deb-gone;"
		     "ls /usr/share/doc/bash");
	cr_assert_str_eq(out, "0\n2\n17\n17\nfile\nf1-dir\ndoomed-gone\ndeb-gone\nonly\n");
	free(out);
	kill_and_free(cur);
	for (int i = ns - 1; i >= 0; i--) {
		ABOX_OK("snapshots", "rm", snaps[i]);
		free(snaps[i]);
	}
}
