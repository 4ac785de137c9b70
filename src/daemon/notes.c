/* notes.c — what aboxd keeps beside libabox's own records: the API key
 * that owns each snapshot it made (aboxd-snapshots/<id>), and each
 * sandbox's network settings (aboxd-network/<id>: stored as given, to be
 * enforced when sandboxes get networking). Small files under the state
 * folder, written atomically, swept once what they describe is gone. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"

#define NOTE_MAX 65536

static void note_path(const char *kind, const char *id, char *buf, size_t n)
{
	const char *state = daemon_cfg.state_dir ? daemon_cfg.state_dir : getenv("ABOX_ROOT");
	snprintf(buf, n, "%s/aboxd-%s%s%s", state && *state ? state : "/var/lib/abox", kind, id ? "/" : "",
		 id ? id : "");
}

int note_write(const char *kind, const char *id, const char *text)
{
	if (!id_ok(id))
		return -EINVAL;
	if (strlen(text) > NOTE_MAX)
		return -E2BIG; /* note_read would cut it */
	char dir[4096], path[4200], tmp[4300];
	note_path(kind, NULL, dir, sizeof(dir));
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	note_path(kind, id, path, sizeof(path));
	/* one temp name per writer: two writes of one note must not mix */
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)syscall(SYS_gettid));
	FILE *f = fopen(tmp, "we");
	if (!f)
		return -errno;
	bool ok = fputs(text, f) >= 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
	ok = fclose(f) == 0 && ok;
	if (!ok || rename(tmp, path) < 0) {
		unlink(tmp);
		return -EIO;
	}
	return 0;
}

char *note_read(const char *kind, const char *id)
{
	if (!id_ok(id))
		return NULL;
	char path[4200];
	note_path(kind, id, path, sizeof(path));
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	char *buf = calloc(1, NOTE_MAX + 1);
	size_t n = buf ? fread(buf, 1, NOTE_MAX, f) : 0;
	fclose(f);
	if (buf)
		buf[n] = '\0';
	return buf;
}

void note_remove(const char *kind, const char *id)
{
	if (!id_ok(id))
		return;
	char path[4200];
	note_path(kind, id, path, sizeof(path));
	(void)unlink(path);
}

static bool sandbox_gone(abox_ctx *ctx, const char *id)
{
	abox_sandbox_info in = { .version = ABOX_SANDBOX_INFO_VERSION };
	int r = abox_sandbox_info_get(ctx, id, &in, NULL);
	if (r == 0) {
		bool dead = in.state == ABOX_STATE_DEAD;
		abox_sandbox_info_clear(&in);
		return dead;
	}
	return r == -ENOENT;
}

static bool snapshot_gone(const abox_snapshot_info *v, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].id, id))
			return false;
	return true;
}

void notes_sweep(abox_ctx *ctx)
{
	static const char *const kinds[] = { "snapshots", "network" };
	abox_snapshot_info *snaps = NULL;
	size_t nsnaps = 0;
	if (abox_snapshot_list(ctx, &snaps, &nsnaps, NULL) < 0)
		snaps = NULL; /* unknown: keep every snapshot note this time */
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		char dir[4096];
		note_path(kinds[k], NULL, dir, sizeof(dir));
		DIR *d = opendir(dir);
		if (!d)
			continue;
		struct dirent *e;
		time_t now = time(NULL);
		while ((e = readdir(d))) {
			struct stat st;
			if (strstr(e->d_name, ".tmp.")) {
				/* a writer that died between write and rename */
				if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && now - st.st_mtime > 60)
					(void)unlinkat(dirfd(d), e->d_name, 0);
				continue;
			}
			if (!id_ok(e->d_name))
				continue;
			/* a snapshot note younger than a minute may belong to a
			 * snapshot made after the list above was read (a
			 * sandbox's is checked against its record right here) */
			if (k == 0 &&
			    (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || now - st.st_mtime < 60))
				continue;
			bool gone = k == 0 ? snaps && snapshot_gone(snaps, nsnaps, e->d_name) : sandbox_gone(ctx, e->d_name);
			if (gone)
				(void)unlinkat(dirfd(d), e->d_name, 0);
		}
		closedir(d);
	}
	free(snaps);
}
