/* store/gc.c — removes what dead sandboxes left behind.
 *
 * A sandbox's runtime folder is locked for as long as its owner lives; if
 * the owner was SIGKILLed (nothing can run on its way out), the folder, its
 * socket and the empty cgroups it recorded stay. gc takes the lock of each
 * folder it finds: a lock it gets belongs to a dead sandbox. Recorded
 * cgroup paths are trusted only when they lie under one of this host's
 * cgroup mounts and end in "abox-<id>" for the folder's own id, so a
 * tampered record cannot make gc remove anything else.
 * Runs in the CLI/daemon. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

#include "cgroup/cgroup.h"
#include "store/state.h"
#include "store/store.h"

static bool is_id(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9')))
			return false;
	return n == 20;
}

static bool under(const char *path, const char *mount)
{
	size_t n = mount ? strlen(mount) : 0;
	return n > 0 && strncmp(path, mount, n) == 0 && path[n] == '/';
}

static bool path_ok(const char *path, const char *id, const struct cg_layout *l)
{
	if (path[0] != '/' || strstr(path, "/../") || strstr(path, "/./") || strstr(path, "//"))
		return false;
	const char *base = strrchr(path, '/');
	if (!base || strncmp(base + 1, "abox-", 5) != 0 || strcmp(base + 6, id) != 0)
		return false;
	if (under(path, l->v2_mount))
		return true;
	for (int c = 0; c < CG_CONTROLLER_MAX; c++)
		if (under(path, l->v1_mount[c]))
			return true;
	return false;
}

/* Kills whatever still runs in a dead sandbox's cgroup and removes it. */
static void remove_cgroup(const char *path)
{
	for (int attempt = 0; attempt < 200; attempt++) {
		if (rmdir(path) == 0 || errno == ENOENT)
			return;
		if (errno != EBUSY)
			return;
		char procs[4200];
		safe_snprintf(procs, sizeof(procs), "%s/cgroup.procs", path);
		_cleanup_free_ char *list = NULL;
		if (read_file_at(AT_FDCWD, procs, 1 << 20, &list, NULL) == 0) {
			for (char *save = NULL, *t = strtok_r(list, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
				long pid = strtol(t, NULL, 10);
				if (pid > 1)
					(void)kill((pid_t)pid, SIGKILL);
			}
		}
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

static void remove_recorded(char *rec, const char *id, const struct cg_layout *l)
{
	for (char *save = NULL, *t = strtok_r(rec, "\n", &save); t; t = strtok_r(NULL, "\n", &save))
		if (path_ok(t, id, l))
			remove_cgroup(t);
}

/* Returns true when it removed the sandbox. */
static bool clean_one(int rtfd, const char *name, const char *id, const char *state_dir,
		      const struct cg_layout *l)
{
	_cleanup_close_ int dfd = openat(rtfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0 || flock(dfd, LOCK_EX | LOCK_NB) < 0)
		return false; /* its creator is still at work (or not ours to judge) */
	/* A long-lived sandbox has no lock holder once its creator is done:
	 * its record and its init decide. */
	struct sb_state st = { 0 };
	bool recorded = id && state_read(state_dir, id, &st, NULL) == 0;
	if (recorded && state_status(&st) == SB_RUNNING) {
		sb_state_free(&st);
		return false;
	}
	_cleanup_free_ char *rec = NULL;
	if (id && l && read_file_at(dfd, STORE_CGROUPS_FILE, 65536, &rec, NULL) == 0)
		remove_recorded(rec, id, l);
	else if (recorded && st.cgroups && l)
		remove_recorded(st.cgroups, id, l);
	if (recorded)
		(void)state_remove(state_dir, id);
	sb_state_free(&st);
	(void)unlinkat(dfd, STORE_CGROUPS_FILE, 0);
	(void)unlinkat(dfd, "init.sock", 0);
	(void)unlinkat(rtfd, name, AT_REMOVEDIR);
	return true;
}

/* Records of sandboxes whose runtime folder is gone (a reboot empties
 * /run): dead by definition once their init is. */
static unsigned clean_records(const char *runtime_dir, const char *state_dir, const struct cg_layout *l)
{
	char **ids = NULL;
	unsigned n = 0;
	if (state_list(state_dir, &ids, NULL) < 0)
		return 0;
	for (size_t i = 0; ids[i]; i++) {
		char rd[4200];
		safe_snprintf(rd, sizeof(rd), "%s/%s", runtime_dir, ids[i]);
		if (access(rd, F_OK) == 0)
			continue; /* handled through its runtime folder */
		struct sb_state st = { 0 };
		int k = state_read(state_dir, ids[i], &st, NULL);
		if (k == -ENOENT || k == -EBADMSG) {
			/* a create killed before its record was complete: its
			 * runtime folder (made first, locked by the creator) is
			 * gone too, so nobody is still writing it */
			(void)state_remove(state_dir, ids[i]);
			n++;
			continue;
		}
		if (k < 0)
			continue;
		if (state_status(&st) == SB_DEAD) {
			if (st.cgroups && l)
				remove_recorded(st.cgroups, ids[i], l);
			(void)state_remove(state_dir, ids[i]);
			n++;
		}
		sb_state_free(&st);
	}
	strv_free(ids);
	return n;
}

int store_gc(const char *runtime_dir, const char *state_dir, const struct cg_layout *layout,
	     unsigned *removed, abox_error *err)
{
	unsigned n = clean_records(runtime_dir, state_dir, layout);
	DIR *d = opendir(runtime_dir);
	if (!d) {
		if (removed)
			*removed = n;
		if (errno == ENOENT)
			return 0;
		return abox_error_set(err, errno, "gc: open '%s'", runtime_dir);
	}
	struct dirent *de;
	time_t now = time(NULL);
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		if (is_id(name)) {
			if (clean_one(dirfd(d), name, name, state_dir, layout))
				n++;
		} else if (strncmp(name, ".new-", 5) == 0 && is_id(name + 5)) {
			/* a creator that died before its rename; give a live one
			 * time to finish (it holds the lock anyway) */
			struct stat st;
			if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) == 0 && now - st.st_mtime > 10)
				(void)clean_one(dirfd(d), name, NULL, state_dir, NULL);
		}
	}
	closedir(d);
	if (removed)
		*removed = n;
	return 0;
}
