/* libFuzzer target: archive import (src/unpack), which turns hostile
 * archives and image manifests into files as root. The first byte picks
 * what the rest is: a root filesystem tar (possibly compressed), an image
 * layer (whiteouts), an OCI index.json or a docker manifest.json. Must
 * never crash, leak, or write outside the destination folder (checked:
 * the folder beside it stays empty). */
#include <archive.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "unpack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char top[64];
static int dest = -1, beside = -1;

/* the run's folder goes when the fuzzer ends (it exits normally at its
 * time limit; a crash keeps it, with what it held, for a look) */
static void teardown(void)
{
	if (dest >= 0)
		close(dest);
	if (beside >= 0)
		close(beside);
	(void)rm_rf_at(AT_FDCWD, top, 0);
}

static void setup(void)
{
	snprintf(top, sizeof(top), "/tmp/abox-fuzz-unpack.XXXXXX");
	if (!mkdtemp(top))
		abort();
	atexit(teardown);
	char p[128];
	snprintf(p, sizeof(p), "%s/dest", top);
	mkdir(p, 0755);
	dest = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(p, sizeof(p), "%s/beside", top);
	mkdir(p, 0755);
	beside = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dest < 0 || beside < 0)
		abort();
}

static void empty(int dir)
{
	int d = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dd = fdopendir(d);
	struct dirent *de;
	while ((de = readdir(dd)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			(void)rm_rf_at(dirfd(dd), de->d_name, 0);
	closedir(dd);
}

static bool is_empty(int dir)
{
	int d = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dd = fdopendir(d);
	struct dirent *de;
	bool e = true;
	while ((de = readdir(dd)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			e = false;
	closedir(dd);
	return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (dest < 0)
		setup();
	if (size < 1)
		return 0;
	uint8_t mode = data[0] % 4;
	data++;
	size--;
	struct unpack u;
	unpack_init(&u, dest);
	u.max_bytes = 1 << 20;
	u.max_entries = 2000;
	if (mode <= 1) {
		struct archive *a = unpack_reader_new();
		if (archive_read_open_memory(a, data, size) == ARCHIVE_OK) {
			if (mode == 1)
				(void)unpack_entries(&u, a, true, true);
			archive_read_free(a);
			a = unpack_reader_new();
			if (archive_read_open_memory(a, data, size) == ARCHIVE_OK)
				(void)unpack_entries(&u, a, mode == 1, false);
		}
		archive_read_free(a);
	} else {
		/* an image folder whose index or manifest is the input */
		mkdirat(dest, "img", 0755);
		mkdirat(dest, "out", 0755);
		int img = openat(dest, "img", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		int out = openat(dest, "out", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		int fd = img < 0 ? -1
				 : openat(img, mode == 2 ? "index.json" : "manifest.json",
					  O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd >= 0) {
			(void)write_full(fd, data, size);
			close(fd);
		}
		if (mode == 2 && img >= 0)
			(void)write_file_at(img, "oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}");
		if (img >= 0 && out >= 0) {
			struct unpack iu;
			unpack_init(&iu, out);
			iu.max_bytes = 1 << 20;
			iu.max_entries = 2000;
			(void)unpack_image_dir(&iu, img);
			unpack_done(&iu);
		}
		if (img >= 0)
			close(img);
		if (out >= 0)
			close(out);
	}
	unpack_done(&u);
	if (!is_empty(beside))
		abort(); /* something was written outside the destination */
	empty(dest);
	return 0;
}
