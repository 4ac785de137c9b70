/* abox-unpack — the helper `abox template import` runs for archives and
 * container images:
 *
 *   abox-unpack [--keep-setuid] [--keep-devices] [--max-bytes N]
 *               [--max-entries N] SOURCE DEST SCRATCH
 *
 * SOURCE is an archive (a root filesystem tarball, an OCI image layout or
 * a `docker save` archive; tar, optionally gzip/xz/zstd/bzip2/lz4) or a
 * folder holding an OCI layout or a saved docker image. DEST (empty) gets
 * the root filesystem; SCRATCH (empty, same filesystem) holds an image
 * archive's blobs while it is applied. Reports on stdout, one per line:
 * "progress ENTRIES BYTES LAYER LAYERS", "config JSON" (the image's user,
 * workdir, env) and "done ENTRIES BYTES DROPPED". Failure: one line on
 * stderr naming the cause, exit 1; exit 3 when SOURCE is a folder that
 * holds no image.
 *
 * A separate process because it parses hostile input with a large
 * library: it keeps only the capabilities that writing files as their
 * owners needs (no CAP_SYS_ADMIN, no ptrace, no network), sets
 * no_new_privs, and a crash in it takes nothing else down. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "unpack.h"

static void report(struct unpack *u)
{
	printf("progress %llu %llu %u %u\n", (unsigned long long)u->entries, (unsigned long long)u->bytes, u->layer,
	       u->layers);
	fflush(stdout);
}

/* Keeps CHOWN, DAC_OVERRIDE, FOWNER, FSETID and (for --keep-devices)
 * MKNOD; everything else leaves the bounding, permitted, effective and
 * inheritable sets. */
static int confine(bool mknod)
{
	uint64_t keep = 1ull << CAP_CHOWN | 1ull << CAP_DAC_OVERRIDE | 1ull << CAP_FOWNER | 1ull << CAP_FSETID;
	if (mknod)
		keep |= 1ull << CAP_MKNOD;
	for (int c = 0; c <= 63; c++)
		if (!(keep & (1ull << c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return -1;
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { { 0 } };
	d[0].effective = d[0].permitted = (uint32_t)keep;
	d[1].effective = d[1].permitted = (uint32_t)(keep >> 32);
	if (syscall(SYS_capset, &h, d) < 0)
		return -1;
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

static int number(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "keep-setuid", no_argument, NULL, 's' },  { "keep-devices", no_argument, NULL, 'd' },
		{ "max-bytes", required_argument, NULL, 'b' }, { "max-entries", required_argument, NULL, 'e' },
		{ NULL, 0, NULL, 0 },
	};
	struct unpack u;
	unpack_init(&u, -1);
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's': u.keep_setuid = true; break;
		case 'd': u.keep_devices = true; break;
		case 'b':
			if (number(optarg, &u.max_bytes) < 0 || !u.max_bytes)
				goto usage;
			break;
		case 'e':
			if (number(optarg, &u.max_entries) < 0 || !u.max_entries)
				goto usage;
			break;
		default: goto usage;
		}
	}
	if (argc - optind != 3)
		goto usage;
	const char *src = argv[optind], *dest = argv[optind + 1], *scratch = argv[optind + 2];

	int dfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	int sfd = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	int in = open(src, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (dfd < 0 || sfd < 0 || in < 0) {
		fprintf(stderr, "open '%s': %s\n", in < 0 ? src : dfd < 0 ? dest : scratch, strerror(errno));
		return 1;
	}
	if (geteuid() == 0 && confine(u.keep_devices) < 0) {
		fprintf(stderr, "drop capabilities: %s\n", strerror(errno));
		return 1;
	}
	u.root = dfd;
	u.progress = report;
	struct stat st;
	if (fstat(in, &st) < 0) {
		fprintf(stderr, "stat '%s': %s\n", src, strerror(errno));
		return 1;
	}
	int r;
	if (S_ISDIR(st.st_mode))
		r = unpack_image_dir(&u, in);
	else if (S_ISREG(st.st_mode))
		r = unpack_file(&u, in, sfd);
	else
		r = unpack_fail(&u, "'%s' is neither a file nor a folder", src);
	if (r == 1) {
		fprintf(stderr, "'%s' holds neither an OCI image layout nor a saved docker image\n", src);
		return 3;
	}
	if (r < 0) {
		fprintf(stderr, "%s\n", u.err[0] ? u.err : "unpack failed");
		return 1;
	}
	if (u.config)
		printf("config %s\n", u.config);
	printf("done %llu %llu %llu\n", (unsigned long long)u.entries, (unsigned long long)u.bytes,
	       (unsigned long long)u.dropped);
	unpack_done(&u);
	return fflush(stdout) == 0 ? 0 : 1;
usage:
	fprintf(stderr, "usage: abox-unpack [--keep-setuid] [--keep-devices] [--max-bytes N] [--max-entries N] "
			"SOURCE DEST SCRATCH\n");
	return 2;
}
