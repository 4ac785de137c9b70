/* Template imports from archives and container images: root filesystem
 * tarballs in every compression, OCI layouts (folder and archive) and
 * `docker save` archives with whiteouts and config; hostile archives
 * (traversal, symlink-then-write, hardlinks out, devices, setuid, entry
 * and size bombs) refused or defused with nothing written outside; the
 * metadata a template carries (user, folder, env, start command and its
 * readiness). */
#include <archive.h>
#include <archive_entry.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "harness.h"

static char dir[64];     /* scratch of this suite */
static char rootfs[128]; /* dash, cat, ls, sleep + libraries, /marker, /bin/probe */

static void init(void)
{
	sandbox_suite_init();
	snprintf(dir, sizeof(dir), "/var/tmp/abox-arc.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", dir);
	const char *probe = getenv("ABOX_PROBE");
	cr_assert_not_null(probe, "ABOX_PROBE not set");
	char cmd[2048];
	snprintf(cmd, sizeof(cmd),
		 "set -e; R='%s'; mkdir -p $R/bin; cp /usr/bin/dash $R/bin/sh;"
		 "cp /usr/bin/cat /usr/bin/ls /usr/bin/sleep $R/bin/; cp '%s' $R/bin/probe;"
		 "for f in $(ldd /usr/bin/dash /usr/bin/cat /usr/bin/ls /usr/bin/sleep | grep -o '/lib[^ ]*' | sort -u); do"
		 "  mkdir -p $R$(dirname $f); cp -L $f $R$f; done; echo tiny > $R/marker",
		 rootfs, probe);
	cr_assert_eq(system(cmd), 0, "building the test root filesystem");
}

static void fini(void)
{
	struct run_result r;
	const char *names[] = { "abox-t-gz", "abox-t-xz", "abox-t-zst", "abox-t-bz2", "abox-t-oci", "abox-t-ocitar",
				"abox-t-docker", "abox-t-abs", "abox-t-dev", "abox-t-meta", "abox-t-port" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		ABOX(&r, "template", "rm", names[i]);
		run_result_free(&r);
	}
	if (dir[0]) {
		char cmd[256];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		cr_expect_eq(system(cmd), 0);
	}
	ABOX(&r, "gc");
	run_result_free(&r);
	sandbox_suite_fini();
}

TestSuite(archive, .init = init, .fini = fini, .timeout = 300);

/* A refused import: exit 125, the message names why, and nothing of it
 * stays (no template, no build folder). */
static void refused(const char *name, const char *src, const char *why, const char *opt)
{
	struct run_result r;
	if (opt)
		ABOX(&r, "template", "import", opt, name, src);
	else
		ABOX(&r, "template", "import", name, src);
	cr_assert_eq(r.status, 125, "import of %s was not refused: %s", src, r.out);
	cr_assert(strstr(r.err, why), "message for %s does not say '%s': %s", src, why, r.err);
	run_result_free(&r);
	char *ls = ABOX_OUT("template", "ls");
	char line[96];
	snprintf(line, sizeof(line), "%s\n", name);
	cr_assert_null(strstr(ls, line), "refused template is listed: %s", ls);
	free(ls);
	const char *root = getenv("ABOX_ROOT");
	char tdir[256];
	snprintf(tdir, sizeof(tdir), "%s/templates", root && *root ? root : "/var/lib/abox");
	DIR *d = opendir(tdir);
	cr_assert_not_null(d);
	struct dirent *de;
	while ((de = readdir(d)))
		cr_assert(strncmp(de->d_name, ".build.", 7) != 0, "left behind: %s/%s", tdir, de->d_name);
	closedir(d);
}

static void sh(const char *cmd)
{
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static void run_expect(const char *tmpl, const char *script, const char *want)
{
	struct run_result r;
	ABOX(&r, "run", "--template", tmpl, "--", "/bin/sh", "-c", script);
	cr_assert_eq(r.status, 0, "run on %s: %s", tmpl, r.err);
	cr_assert_str_eq(r.out, want, "run on %s", tmpl);
	run_result_free(&r);
}

Test(archive, rootfs_tarballs_in_every_compression)
{
	const struct {
		const char *name, *flag, *ext;
	} kinds[] = { { "abox-t-gz", "-z", "tar.gz" }, { "abox-t-xz", "-J", "tar.xz" },
		      { "abox-t-zst", "--zstd", "tar.zst" }, { "abox-t-bz2", "-j", "tar.bz2" } };
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		char cmd[512], file[256];
		snprintf(file, sizeof(file), "%s/root.%s", dir, kinds[i].ext);
		snprintf(cmd, sizeof(cmd), "tar --numeric-owner %s -C '%s' -cf '%s' .", kinds[i].flag, rootfs, file);
		cr_assert_eq(system(cmd), 0, "%s", cmd);
		ABOX_OK("template", "import", kinds[i].name, file);
		run_expect(kinds[i].name, "cat /marker; echo $USER; pwd", "tiny\nuser\n/home/user\n");
		ABOX_OK("template", "rm", kinds[i].name);
	}
}

Test(archive, oci_layouts_and_docker_save_apply_layers_whiteouts_and_config)
{
	char img[128];
	snprintf(img, sizeof(img), "%s/img", dir);
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "bash '%s/tests/integration/mkimage.sh' '%s' '%s'", getenv("ABOX_SOURCE_DIR"), rootfs,
		 img);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	const char *check = "pwd; echo $USER $IMG; ls /opq; cat /added /marker; test -e /hello && echo hello-not-deleted; :";
	char src[256];
	snprintf(src, sizeof(src), "%s/oci", img);
	ABOX_OK("template", "import", "abox-t-oci", src);
	run_expect("abox-t-oci", check, "/opq\nroot oci\nnew\nlayer2\ntiny\n");
	snprintf(src, sizeof(src), "%s/oci.tar", img);
	ABOX_OK("template", "import", "abox-t-ocitar", src);
	run_expect("abox-t-ocitar", check, "/opq\nroot oci\nnew\nlayer2\ntiny\n");
	snprintf(src, sizeof(src), "%s/docker.tar", img);
	ABOX_OK("template", "import", "abox-t-docker", src);
	run_expect("abox-t-docker", check, "/tmp\nuser docker\nnew\nlayer2\ntiny\n");

	char *js = ABOX_OUT("template", "inspect", "--json", "abox-t-oci");
	cr_assert(strstr(js, "\"user\":\"root\"") && strstr(js, "\"workdir\":\"/opq\"") && strstr(js, "IMG=oci"),
		  "%s", js);
	free(js);

	/* an altered layer is refused before anything of it is written */
	snprintf(src, sizeof(src), "%s/tampered", img);
	refused("abox-t-tampered", src, "does not match its digest", NULL);
}

/* An archive of the given entries, written with libarchive. */
struct ent {
	const char *name;
	mode_t type;       /* AE_IFREG, AE_IFDIR, AE_IFLNK, AE_IFCHR; 0: hardlink */
	const char *data;  /* file content, symlink or hardlink target */
	mode_t perm;
};

static void write_tar(const char *path, const struct ent *e, size_t n)
{
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	cr_assert_eq(archive_write_open_filename(a, path), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		struct archive_entry *en = archive_entry_new();
		archive_entry_set_pathname(en, e[i].name);
		archive_entry_set_perm(en, e[i].perm ? e[i].perm : 0644);
		if (e[i].type == 0) {
			archive_entry_set_filetype(en, AE_IFREG);
			archive_entry_set_hardlink(en, e[i].data);
		} else {
			archive_entry_set_filetype(en, e[i].type);
		}
		if (e[i].type == AE_IFLNK)
			archive_entry_set_symlink(en, e[i].data);
		if (e[i].type == AE_IFCHR)
			archive_entry_set_rdev(en, makedev(1, 2));
		size_t len = e[i].type == AE_IFREG && e[i].data ? strlen(e[i].data) : 0;
		archive_entry_set_size(en, (la_int64_t)len);
		cr_assert_eq(archive_write_header(a, en), ARCHIVE_OK, "%s", archive_error_string(a));
		if (len)
			archive_write_data(a, e[i].data, len);
		archive_entry_free(en);
	}
	archive_write_close(a);
	archive_write_free(a);
}

Test(archive, hostile_archives_are_refused_with_nothing_outside)
{
	char victim[128], file[128], abs_target[160];
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	cr_assert_eq(mkdir(victim, 0755), 0);

	/* traversal: ../ climbs out of the template folder */
	snprintf(file, sizeof(file), "%s/t1.tar", dir);
	write_tar(file, (struct ent[]){ { "ok", AE_IFREG, "x", 0 },
					{ "../../../../../../var/tmp/abox-arc-escape", AE_IFREG, "pwned", 0 } },
		  2);
	refused("abox-t-trav", file, "leaves the destination", NULL);
	cr_assert_neq(access("/var/tmp/abox-arc-escape", F_OK), 0, "a file escaped the template");

	/* symlink-then-write: a symlink to a host folder, then a file through it */
	snprintf(file, sizeof(file), "%s/t2.tar", dir);
	write_tar(file, (struct ent[]){ { "evil", AE_IFLNK, victim, 0 }, { "evil/pwned", AE_IFREG, "pwned", 0 } }, 2);
	refused("abox-t-symlink", file, "symlink", NULL);
	char pwned[200];
	snprintf(pwned, sizeof(pwned), "%s/pwned", victim);
	cr_assert_neq(access(pwned, F_OK), 0, "a write went through a symlink to the host");

	/* the same with a relative symlink climbing out */
	snprintf(file, sizeof(file), "%s/t3.tar", dir);
	write_tar(file, (struct ent[]){ { "a/b", AE_IFLNK, "../../../../../../../../", 0 },
					{ "a/b/var/tmp/abox-arc-escape", AE_IFREG, "pwned", 0 } },
		  2);
	refused("abox-t-symlink2", file, "symlink", NULL);
	cr_assert_neq(access("/var/tmp/abox-arc-escape", F_OK), 0);

	/* hardlinks to files outside, by climbing or by an absolute name */
	snprintf(file, sizeof(file), "%s/t4.tar", dir);
	write_tar(file, (struct ent[]){ { "hl", 0, "../../../../../../etc/passwd", 0 } }, 1);
	refused("abox-t-hl", file, "leaves the destination", NULL);
	snprintf(file, sizeof(file), "%s/t5.tar", dir);
	write_tar(file, (struct ent[]){ { "hl", 0, "/etc/passwd", 0 } }, 1);
	refused("abox-t-hl2", file, "has not made", NULL);

	/* absolute names land inside the template, never on the host */
	snprintf(abs_target, sizeof(abs_target), "%s/abs-target", victim);
	snprintf(file, sizeof(file), "%s/t6.tar", dir);
	write_tar(file, (struct ent[]){ { abs_target, AE_IFREG, "inside\n", 0 } }, 1);
	char merged[160];
	snprintf(merged, sizeof(merged), "%s/merged.tar", dir);
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && tar --numeric-owner -C '%s' -rf '%s' .", file, merged, rootfs, merged);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	ABOX_OK("template", "import", "abox-t-abs", merged);
	cr_assert_neq(access(abs_target, F_OK), 0, "an absolute name was written on the host");
	char script[300];
	snprintf(script, sizeof(script), "cat '%s'", abs_target);
	run_expect("abox-t-abs", script, "inside\n");

	/* device nodes and setuid bits are left out */
	snprintf(file, sizeof(file), "%s/t7.tar", dir);
	write_tar(file, (struct ent[]){ { "kmem", AE_IFCHR, NULL, 0600 }, { "suid", AE_IFREG, "x", 04755 } }, 2);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && tar --numeric-owner -C '%s' -rf '%s' .", file, merged, rootfs, merged);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	ABOX_OK("template", "import", "abox-t-dev", merged);
	run_expect("abox-t-dev",
		   "test -e /kmem || echo no-dev; case $(ls -l /suid) in -rwxr-xr-x*) echo no-suid;; *) echo suid;; esac",
		   "no-dev\nno-suid\n");
}

Test(archive, entry_and_size_bombs_are_bounded)
{
	char file[128];
	snprintf(file, sizeof(file), "%s/many.tar", dir);
	size_t n = 3000;
	struct ent *e = calloc(n, sizeof(*e));
	char (*names)[32] = calloc(n, 32);
	for (size_t i = 0; i < n; i++) {
		snprintf(names[i], 32, "f%zu", i);
		e[i] = (struct ent){ names[i], AE_IFREG, NULL, 0 };
	}
	write_tar(file, e, n);
	free(e);
	free(names);
	refused("abox-t-many", file, "more than 1000 entries", "--max-entries=1000");

	/* 4 MiB of zeros compress to almost nothing: the limit counts what
	 * would be written, not the archive's size */
	snprintf(file, sizeof(file), "%s/big.tar.gz", dir);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "set -e; d=$(mktemp -d); head -c 4194304 /dev/zero > $d/big; tar -C $d -czf '%s' big; rm -rf $d",
		 file);
	sh(cmd);
	refused("abox-t-big", file, "size limit", "--max-size=1M");

	/* not an archive at all */
	snprintf(file, sizeof(file), "%s/junk.tar", dir);
	snprintf(cmd, sizeof(cmd), "head -c 10000 /dev/urandom > '%s'", file);
	sh(cmd);
	refused("abox-t-junk", file, "archive", NULL);
}

Test(archive, template_metadata_start_command_and_readiness)
{
	char file[128];
	snprintf(file, sizeof(file), "%s/root.tar", dir);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "tar --numeric-owner -C '%s' -cf '%s' .", rootfs, file);
	cr_assert_eq(system(cmd), 0);

	ABOX_OK("template", "import", "-u", "root", "-w", "/tmp", "-e", "K=template", "-e", "L=kept",
		"--start", "echo started > /tmp/started; exec sleep 1000", "--ready-cmd",
		"test -e /tmp/started", "abox-t-meta", file);
	char *id = ABOX_LINE("create", "--template", "abox-t-meta", "-e", "K=create");
	/* the start command ran before create returned; the defaults apply */
	ABOX_EXPECT(0, "started\ncreate kept root\n/tmp\n", NULL, "exec", id, "--", "/bin/sh", "-c",
		    "cat /tmp/started; echo $K $L $USER; pwd");
	/* a command naming its user and folder gets them */
	ABOX_EXPECT(0, "user\n/\n", NULL, "exec", "-u", "user", "-w", "/", id, "--", "/bin/sh", "-c",
		    "echo $USER; pwd");
	kill_and_free(id);

	/* a port: create returns once the server listens (0A = LISTEN, 1F90 = 8080) */
	ABOX_OK("template", "import", "--start", "exec /bin/probe --listen 8080 300", "--ready-port", "8080",
		"abox-t-port", file);
	struct run_result r;
	ABOX(&r, "run", "--template", "abox-t-port", "--", "/bin/cat", "/proc/net/tcp");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, ":1F90 00000000:0000 0A"), "not listening when create returned:\n%s", r.out);
	run_result_free(&r);

	/* never ready: create fails, names the check, and leaves nothing */
	ABOX_OK("template", "import", "--start", "exec sleep 1000", "--ready-cmd", "false", "--ready-timeout",
		"1", "abox-t-port", file);
	ABOX(&r, "create", "--template", "abox-t-port");
	cr_assert_eq(r.status, 125, "%s %s", r.out, r.err);
	cr_assert(strstr(r.err, "not ready within 1 s") && strstr(r.err, "false"), "%s", r.err);
	run_result_free(&r);
	char *ls = ABOX_OUT("ls");
	cr_assert_null(strstr(ls, "abox-t-port"), "a sandbox that never got ready is listed:\n%s", ls);
	free(ls);

	/* bad metadata is refused up front */
	ABOX(&r, "template", "import", "-u", "nobody", "abox-t-port", file);
	cr_assert_eq(r.status, 125);
	cr_assert(strstr(r.err, "nobody"), "%s", r.err);
	run_result_free(&r);
	/* a readiness check alone (E2B's setReadyCmd without a start
	 * command) waits for what the template's own files start */
	ABOX_OK("template", "import", "--ready-cmd", "test -e /tmp/never", "--ready-timeout", "1",
		"abox-t-port", file);
	ABOX(&r, "create", "--template", "abox-t-port");
	cr_assert_eq(r.status, 125, "%s %s", r.out, r.err);
	cr_assert(strstr(r.err, "not ready within 1 s"), "%s", r.err);
	run_result_free(&r);
}
