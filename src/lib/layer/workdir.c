/* layer/workdir.c — see workdir.h. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

#include "layer/workdir.h"

/* Removes the folders whose lock is free (their job is gone). */
static void sweep(int pdir)
{
	DIR *d = fdopendir(dup(pdir));
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char lk[300];
		snprintf(lk, sizeof(lk), "%s/.lock", de->d_name);
		int fd = openat(pdir, lk, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
			close(fd);
			continue;
		}
		/* no lock yet: a job that is just starting, unless it is old */
		struct stat st;
		if (fd < 0 && (fstatat(pdir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			       time(NULL) - st.st_mtime < 600))
			continue;
		(void)rm_rf_at(pdir, de->d_name, 0);
		if (fd >= 0)
			close(fd);
	}
	closedir(d);
}

int workdir_new(const char *parent, char *out, size_t n, abox_error *err)
{
	if (mkdir(parent, 0700) < 0 && errno != EEXIST)
		return abox_error_set(err, errno, "create '%s'", parent);
	_cleanup_close_ int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (pfd < 0)
		return abox_error_set(err, errno, "open '%s'", parent);
	sweep(pfd);
	safe_snprintf(out, n, "%s/XXXXXX", parent);
	if (!mkdtemp(out))
		return abox_error_set(err, errno, "create a folder in '%s'", parent);
	char lk[4400];
	safe_snprintf(lk, sizeof(lk), "%s/.lock", out);
	int fd = open(lk, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || flock(fd, LOCK_EX) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		(void)rm_rf_at(AT_FDCWD, out, 0);
		return abox_error_set(err, e, "lock '%s'", lk);
	}
	return fd;
}
