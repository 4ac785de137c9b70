/* store/gc.c — removes what dead sandboxes left behind.
 *
 * A sandbox's runtime folder (an ephemeral one's record file, <id>.run) is
 * locked for as long as its owner lives; if the owner was SIGKILLed
 * (nothing can run on its way out), the folder, its socket and the empty
 * cgroups it recorded stay. gc takes the lock of each
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
#include <sys/syscall.h>
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

/* Whether pid (pinned by pidfd) is in the cgroup at path: its
 * /proc/<pid>/cgroup names the path's last component. */
static bool pid_in(pid_t pid, const char *path)
{
	char p[64];
	safe_snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)pid);
	_cleanup_free_ char *text = NULL;
	if (read_file_at(AT_FDCWD, p, 65536, &text, NULL) < 0)
		return false;
	const char *leaf = strrchr(path, '/');
	return leaf && strstr(text, leaf) != NULL;
}

/* Ends whatever still runs in a dead sandbox's cgroup. cgroup.kill where
 * there is one; otherwise each listed pid is pinned with a pidfd and
 * checked to still be in the cgroup before it is signalled, so a pid that
 * was reused meanwhile by an unrelated process is never hit. A v1 freezer
 * left frozen (its owner died mid-kill) is thawed, or SIGKILL would wait. */
static void kill_tasks(const char *path)
{
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return;
	(void)write_file_at(dfd, "cgroup.kill", "1");
	(void)write_file_at(dfd, "freezer.state", "THAWED");
	_cleanup_free_ char *list = NULL;
	if (read_file_at(dfd, "cgroup.procs", 1 << 20, &list, NULL) == 0) {
		for (char *save = NULL, *t = strtok_r(list, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
			long pid = strtol(t, NULL, 10);
			if (pid <= 1)
				continue;
			int pfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
			if (pfd < 0)
				continue;
			if (pid_in((pid_t)pid, path))
				(void)syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
			close(pfd);
		}
	}
	close(dfd);
}

/* Removes the recorded cgroups; false when one stays (its record is then
 * kept, so a later gc tries again instead of forgetting it). */
static bool remove_recorded(const char *record, const char *id, const struct cg_layout *l)
{
	_cleanup_free_ char *rec = strdup(record);
	if (!rec)
		return false;
	const char *paths[16];
	size_t n = 0;
	for (char *save = NULL, *t = strtok_r(rec, "\n", &save); t && n < 16; t = strtok_r(NULL, "\n", &save))
		if (path_ok(t, id, l))
			paths[n++] = t;
	for (size_t i = 0; i < n; i++)
		kill_tasks(paths[i]);
	bool all = true;
	for (size_t i = 0; i < n; i++) {
		bool gone = false;
		for (int attempt = 0; attempt < 200 && !gone; attempt++) {
			if (rmdir(paths[i]) == 0 || errno == ENOENT) {
				gone = true;
				break;
			}
			if (errno != EBUSY)
				break;
			if (attempt % 20 == 19)
				kill_tasks(paths[i]);
			struct timespec ts = { 0, 10 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
		all = all && gone;
	}
	return all;
}

/* Returns true when it removed the sandbox. */
static bool clean_one(int rtfd, const char *name, const char *id, const char *state_dir,
		      const struct cg_layout *l)
{
	_cleanup_close_ int dfd = openat(rtfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0 || flock(dfd, LOCK_EX | LOCK_NB) < 0)
		return false; /* its creator is still at work (or not ours to judge) */
	/* A long-lived sandbox has no lock holder once its creator is done:
	 * its record (in the state folder it was made with) and its init
	 * decide. */
	_cleanup_free_ char *root = NULL;
	if (read_file_at(dfd, STORE_ROOT_FILE, 4096, &root, NULL) == 0 && root[0] == '/')
		state_dir = root;
	/* a sandbox someone works on is not judged: a pause to disk ends
	 * the tree (the dump) before its record says "paused", and in that
	 * moment it looks dead */
	_cleanup_close_ int busy = id ? state_trylock(state_dir, id) : -ENOENT;
	if (busy == -EWOULDBLOCK)
		return false;
	struct sb_state st = { 0 };
	bool recorded = id && state_read(state_dir, id, &st, NULL) == 0;
	if (recorded && state_status(&st) != SB_DEAD) {
		sb_state_free(&st);
		return false;
	}
	_cleanup_free_ char *rec = NULL;
	bool clean = true;
	if (id && l && read_file_at(dfd, STORE_CGROUPS_FILE, 65536, &rec, NULL) == 0)
		clean = remove_recorded(rec, id, l);
	else if (recorded && st.cgroups && l)
		clean = remove_recorded(st.cgroups, id, l);
	sb_state_free(&st);
	if (!clean)
		return false; /* keep the records: the next gc tries again */
	if (recorded)
		(void)state_remove(state_dir, id);
	(void)unlinkat(dfd, STORE_CGROUPS_FILE, 0);
	(void)unlinkat(dfd, STORE_ROOT_FILE, 0);
	(void)unlinkat(dfd, "init.sock", 0);
	(void)unlinkat(rtfd, name, AT_REMOVEDIR);
	return true;
}

/* An ephemeral sandbox's record file (<id>.run): the cgroups it lists
 * are removed once nobody holds its lock. True when it removed it. */
static bool clean_run_record(int rtfd, const char *name, const char *id, const struct cg_layout *l)
{
	_cleanup_close_ int fd = openat(rtfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
		return false; /* its `abox run` is still at work */
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	if (id) {
		char rec[65536];
		ssize_t n = pread(fd, rec, sizeof(rec) - 1, 0);
		if (n < 0)
			return false;
		rec[n] = '\0';
		if (!l || !remove_recorded(rec, id, l))
			return false; /* keep the record: the next gc tries again */
	}
	(void)unlinkat(rtfd, name, 0);
	return true;
}

/* Whether name is "<id>.run"; its id in id */
static bool run_record_id(const char *name, char id[21])
{
	size_t n = strlen(name), k = strlen(STORE_RUN_SUFFIX);
	if (n != 20 + k || strcmp(name + 20, STORE_RUN_SUFFIX) != 0)
		return false;
	memcpy(id, name, 20);
	id[20] = '\0';
	return is_id(id);
}

static bool older_than(int dfd, const char *name, time_t now, time_t secs)
{
	struct stat st;
	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && now - st.st_mtime > secs;
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
		/* not while someone works on it (see clean_one) */
		int busy = state_trylock(state_dir, ids[i]);
		if (busy != -EWOULDBLOCK && state_status(&st) == SB_DEAD &&
		    (!st.cgroups || !l || remove_recorded(st.cgroups, ids[i], l))) {
			(void)state_remove(state_dir, ids[i]);
			n++;
		}
		if (busy >= 0)
			close(busy);
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
		char id[21];
		if (is_id(name)) {
			if (clean_one(dirfd(d), name, name, state_dir, layout))
				n++;
		} else if (run_record_id(name, id)) {
			if (clean_run_record(dirfd(d), name, id, layout))
				n++;
		} else if (strncmp(name, ".new-", 5) == 0 && older_than(dirfd(d), name, now, 10)) {
			/* a creator that died before its rename made no cgroup
			 * yet; a live one had time to finish (and holds the lock
			 * anyway) */
			if (run_record_id(name + 5, id))
				(void)clean_run_record(dirfd(d), name, NULL, NULL);
			else if (is_id(name + 5))
				(void)clean_one(dirfd(d), name, NULL, state_dir, NULL);
		}
	}
	closedir(d);
	if (removed)
		*removed = n;
	return 0;
}
