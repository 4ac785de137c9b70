/* Unit tests of layer/host_template.c on a fake host tree: the generated
 * /etc has our users, copies only world-readable allowlisted entries, and
 * never the host's secrets. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "layer/layer.h"

static char host[] = "/tmp/abox-fakehost-XXXXXX";
static char out[4200];

static void put(const char *rel, const char *content, mode_t mode)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/%s", host, rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	cr_assert_geq(fd, 0, "create %s", p);
	cr_assert_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	fchmod(fd, mode);
	close(fd);
}

static void mk(const char *rel, mode_t mode)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/%s", host, rel);
	cr_assert_eq(mkdir(p, mode), 0, "mkdir %s", p);
	chmod(p, mode);
}

static void setup(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (the template's home folder is chowned to uid 1000)");
	cr_assert_not_null(mkdtemp(host));
	mk("etc", 0755);
	mk("etc/ssl", 0755);
	mk("etc/ssl/certs", 0755);
	mk("etc/ssl/private", 0700);
	mk("etc/ssh", 0755);
	mk("usr", 0755);
	put("etc/passwd", "root:x:0:0::/root:/bin/sh\nalice:x:1001:1001::/home/alice:/bin/sh\n", 0644);
	put("etc/shadow", "root:$6$secret:::::::\n", 0640);
	put("etc/machine-id", "0123456789abcdef\n", 0444);
	put("etc/ssh/ssh_host_ed25519_key", "PRIVATE\n", 0600);
	put("etc/ssl/private/server.key", "PRIVATE\n", 0600);
	put("etc/ssl/certs/ca-certificates.crt", "-----BEGIN CERTIFICATE-----\n", 0644);
	put("etc/ssl/openssl.cnf", "# config\n", 0644);
	put("etc/ssl/secret.conf", "hidden\n", 0600);
	put("etc/resolv.conf", "# generated\nnameserver 10.0.0.53\nsearch corp.example\nbogus line\n", 0644);
	put("etc/protocols", "tcp 6 TCP\n", 0644);
	char p[4200];
	snprintf(p, sizeof(p), "%s/bin", host);
	cr_assert_eq(symlink("usr/bin", p), 0);
	snprintf(out, sizeof(out), "%s/template", host);
}

static void teardown(void)
{
	if (geteuid() != 0)
		return;
	char cmd[4300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", host);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(host_template, .init = setup, .fini = teardown);

static bool exists(const char *rel)
{
	char p[4300];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", out, rel);
	return lstat(p, &st) == 0;
}

static char *slurp_rel(const char *rel)
{
	char p[4300];
	snprintf(p, sizeof(p), "%s/%s", out, rel);
	char *s = NULL;
	cr_assert_eq(read_file_at(AT_FDCWD, p, 1 << 20, &s, NULL), 0, "read %s", p);
	return s;
}

Test(host_template, builds_users_and_layout)
{
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(host_template_build(host, out, &err), 0, "%s", err.msg);
	char *pw = slurp_rel("etc/passwd");
	cr_assert(strstr(pw, "root:x:0:0:"));
	cr_assert(strstr(pw, "user:x:1000:1000:"));
	cr_assert_null(strstr(pw, "alice"), "host users must not leak: %s", pw);
	free(pw);
	struct stat st;
	char p[4300];
	snprintf(p, sizeof(p), "%s/tmp", out);
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 01777);
	snprintf(p, sizeof(p), "%s/home/user", out);
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(st.st_uid, 1000);
	snprintf(p, sizeof(p), "%s/bin", out);
	char target[64] = "";
	cr_assert_gt(readlink(p, target, sizeof(target) - 1), 0);
	cr_assert_str_eq(target, "usr/bin");
}

Test(host_template, never_copies_secrets)
{
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(host_template_build(host, out, &err), 0, "%s", err.msg);
	cr_assert_not(exists("etc/shadow"));
	cr_assert_not(exists("etc/machine-id"));
	cr_assert_not(exists("etc/ssh"));
	cr_assert_not(exists("etc/ssl/private"), "private keys folder copied");
	cr_assert_not(exists("etc/ssl/secret.conf"), "non world-readable file copied");
	cr_assert(exists("etc/ssl/certs/ca-certificates.crt"));
	cr_assert(exists("etc/ssl/openssl.cnf"));
	cr_assert(exists("etc/protocols"));
}

Test(host_template, resolv_conf_keeps_only_resolver_lines)
{
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(host_template_build(host, out, &err), 0, "%s", err.msg);
	char *r = slurp_rel("etc/resolv.conf");
	cr_assert_str_eq(r, "nameserver 10.0.0.53\nsearch corp.example\n");
	free(r);
}

Test(host_template, refuses_existing_target)
{
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(mkdir(out, 0755), 0);
	cr_assert_eq(host_template_build(host, out, &err), -EEXIST);
	cr_assert(strstr(err.msg, out), "%s", err.msg);
}

Test(host_template, unknown_template_names_the_template)
{
	abox_error err = ABOX_ERROR_INIT;
	struct template_info t;
	cr_assert_eq(template_open(host, "ubuntu", &t, &err), -ENOENT);
	cr_assert(strstr(err.msg, "template 'ubuntu' not found"), "%s", err.msg);
}

Test(recipe, parses_every_key)
{
	const char *text = "# comment\n"
			   "suite = bookworm\n"
			   "variant=minbase\n"
			   "  include = python3,ca-certificates  \n"
			   "mirror = http://mirror.invalid/debian\n"
			   "components = main,contrib\n"
			   "user = root\nworkdir = /srv\nenv = A=1\nenv = B=x=y\n"
			   "start = python3 -m http.server 8080\nready-port = 8080\nready-timeout = 30\n";
	struct template_recipe r;
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(template_recipe_parse("r", text, &r, &err), 0, "%s", err.msg);
	cr_assert_str_eq(r.suite, "bookworm");
	cr_assert_str_eq(r.variant, "minbase");
	cr_assert_str_eq(r.include, "python3,ca-certificates");
	cr_assert_str_eq(r.mirror, "http://mirror.invalid/debian");
	cr_assert_str_eq(r.components, "main,contrib");
	cr_assert_str_eq(r.user, "root");
	cr_assert_str_eq(r.workdir, "/srv");
	cr_assert_str_eq(r.env[0], "A=1");
	cr_assert_str_eq(r.env[1], "B=x=y");
	cr_assert_null(r.env[2]);
	cr_assert_str_eq(r.start_cmd, "python3 -m http.server 8080");
	cr_assert_eq(r.ready_port, 8080);
	cr_assert_eq(r.ready_timeout_ms, 30000);
	template_recipe_free(&r);
}

Test(recipe, refuses_what_it_does_not_know_naming_the_line)
{
	const struct {
		const char *text, *want;
	} bad[] = {
		{ "variant = minbase\n", "no 'suite'" },
		{ "suite = bookworm\nsuite = trixie\n", "r:2: 'suite' given twice" },
		{ "suite = bookworm\nfoo = bar\n", "r:2: unknown key 'foo'" },
		{ "suite = ../etc\n", "r:1: suite" },
		{ "suite = bookworm\ninclude = python3;rm -rf /\n", "r:2: include" },
		{ "suite = bookworm\nmirror = ftp://x\n", "r:2: mirror" },
		{ "suite = bookworm\nmirror = http://x/ --keyring=/tmp/k\n", "r:2: mirror" },
		{ "suite = bookworm\nuser = nobody\n", "r:2: user" },
		{ "suite = bookworm\nworkdir = rel\n", "r:2: workdir" },
		{ "suite = bookworm\nenv = NOEQUALS\n", "r:2: env" },
		{ "suite = bookworm\nready-port = 70000\n", "r:2: ready-port" },
		{ "suite = bookworm\njust text\n", "r:2: expected" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct template_recipe r;
		abox_error err = ABOX_ERROR_INIT;
		cr_assert_lt(template_recipe_parse("r", bad[i].text, &r, &err), 0, "accepted: %s", bad[i].text);
		cr_assert(strstr(err.msg, bad[i].want), "'%s' gave: %s", bad[i].text, err.msg);
	}
}

Test(template_meta, round_trips_and_maps_image_users)
{
	char dir[] = "/tmp/abox-meta.XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char version[128];
	snprintf(version, sizeof(version), "%s/t.gen", dir);
	char *env[] = { (char *)"A=1", (char *)"PATH=/bin", NULL };
	struct template_meta m = { .source = (char *)"/src.tar", .created_ms = 123, .entries = 4, .bytes = 5,
				   .user = (char *)"root", .workdir = (char *)"/w", .env = env,
				   .start_cmd = (char *)"s", .ready_cmd = (char *)"r", .ready_timeout_ms = 9000 };
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(template_meta_write(version, &m, &err), 0, "%s", err.msg);
	struct template_meta back;
	cr_assert_eq(template_meta_read(version, &back, &err), 0, "%s", err.msg);
	cr_assert_str_eq(back.source, "/src.tar");
	cr_assert_eq(back.created_ms, 123);
	cr_assert_eq(back.entries, 4);
	cr_assert_str_eq(back.user, "root");
	cr_assert_str_eq(back.workdir, "/w");
	cr_assert_str_eq(back.env[1], "PATH=/bin");
	cr_assert_str_eq(back.start_cmd, "s");
	cr_assert_str_eq(back.ready_cmd, "r");
	cr_assert_eq(back.ready_timeout_ms, 9000);
	template_meta_free(&back);
	/* no metadata at all: an empty one, not an error */
	snprintf(version, sizeof(version), "%s/none", dir);
	cr_assert_eq(template_meta_read(version, &back, &err), 0);
	cr_assert_null(back.user);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);

	cr_assert_str_eq(template_user_from_image(""), "root");
	cr_assert_str_eq(template_user_from_image("0:0"), "root");
	cr_assert_str_eq(template_user_from_image("1000"), "user");
	cr_assert_null(template_user_from_image("node"));
}

/* The default user's account in a root a build made: added where the tree
 * has none (debootstrap makes only root), left alone where one of that
 * name or id exists. */
static char *slurp(const char *p)
{
	static char buf[4096];
	FILE *f = fopen(p, "re");
	cr_assert_not_null(f, "open %s", p);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

Test(template_recipe, default_user_account_added_once)
{
	char dir[] = "/tmp/abox-tuser-XXXXXX", p[128];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/etc", dir);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/etc/passwd", dir);
	FILE *f = fopen(p, "we");
	fputs("root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534::/nonexistent:/usr/sbin/nologin", f);
	fclose(f);
	snprintf(p, sizeof(p), "%s/etc/group", dir);
	f = fopen(p, "we");
	fputs("root:x:0:\ndev:x:1000:\n", f);
	fclose(f);
	abox_error err = ABOX_ERROR_INIT;
	cr_assert_eq(template_add_user(dir, &err), 0, "%s", err.msg);
	cr_assert_eq(template_add_user(dir, &err), 0, "%s", err.msg);
	snprintf(p, sizeof(p), "%s/etc/passwd", dir);
	cr_assert_str_eq(
		slurp(p),
		"root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534::/nonexistent:/usr/sbin/nologin\n"
		"user:x:1000:1000:user:/home/user:/bin/bash\n",
		"once, after a last line without its newline");
	snprintf(p, sizeof(p), "%s/etc/group", dir);
	cr_assert_str_eq(slurp(p), "root:x:0:\ndev:x:1000:\n", "a group with id 1000 is left as it is");
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	cr_assert_eq(system(p), 0);
}
