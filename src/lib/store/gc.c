/* store/gc.c — removes what dead sandboxes left behind.
 *
 * A sandbox's runtime folder (an ephemeral one's record file, <id>.run) is
 * locked for as long as its owner lives; if the owner was SIGKILLed
 * (nothing can run on its way out), the folder, its socket and the empty
 * cgroups it recorded stay. gc takes the lock of each
 * folder it finds: a lock it gets belongs to a dead sandbox. Recorded
 * cgroup paths are trusted only when they lie under one of this host's
 * cgroup mounts and end in "abox-<id>" for the folder's own id, so a
 * tampered record cannot make gc remove anything else. Without a layout
 * (the mount table could not be read) a recorded path is trusted when it
 * is on a cgroup filesystem and ends in "abox-<id>": a sandbox's cgroups
 * are removed whatever else fails.
 * gc also finds cgroup folders "abox-<id>" below the caller's own cgroups
 * whose sandbox has no record left (a kill that removed the records but
 * not the cgroups): those are removed once empty and a while old.
 * Runs in the CLI/daemon. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>

#include "cgroup/cgroup.h"
#include "store/state.h"
#include "store/store.h"

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
	/* the commands' and init's cgroups nested in the sandbox's */
	if (base && (strcmp(base, "/cmds") == 0 || strcmp(base, "/init") == 0))
		base = memrchr(path, '/', (size_t)(base - path));
	if (!base || strncmp(base + 1, "abox-", 5) != 0 || strncmp(base + 6, id, 20) != 0 ||
	    (base[26] != '\0' && strcmp(base + 26, "/cmds") != 0 && strcmp(base + 26, "/init") != 0))
		return false;
	if (l) {
		if (under(path, l->v2_mount))
			return true;
		for (int c = 0; c < CG_CONTROLLER_MAX; c++)
			if (under(path, l->v1_mount[c]))
				return true;
	}
	/* no layout, or one seen from another cgroup namespace or mount
	 * table than the creator's: the path's own filesystem decides */
	struct statfs sf;
	return statfs(path, &sf) == 0 && (sf.f_type == CGROUP_SUPER_MAGIC || sf.f_type == CGROUP2_SUPER_MAGIC);
}

/* Whether pid (pinned by pidfd) is in the cgroup at path: its
 * /proc/<pid>/cgroup names the path's last component. */
static bool pid_in(pid_t pid, const char *path)
{
	_cleanup_free_ char *text = NULL;
	if (read_proc_file(pid, "cgroup", &text) < 0)
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

int store_cgroups_remove(const char *record, const char *id, const struct cg_layout *l, abox_error *err)
{
	if (!record || !id || !id_ok(id))
		return abox_error_setx(err, EINVAL, "remove cgroups: invalid argument");
	if (!remove_recorded(record, id, l))
		return abox_error_setx(err, EBUSY, "cgroup: a folder of sandbox %s still has tasks after SIGKILL", id);
	return 0;
}

/* Cgroup folders only ever hold the kernel's files and child cgroups:
 * removes the children depth first, then the folder. Fails (EBUSY) where
 * a task is still in one. */
static int rmdir_cgroup_tree(int parent, const char *name, int depth)
{
	if (depth > 8)
		return -ELOOP;
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_type == DT_DIR && strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			(void)rmdir_cgroup_tree(dirfd(d), de->d_name, depth + 1);
	closedir(d);
	return unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -errno;
}

/* Whether a task is in the cgroup folder or any below it (unreadable:
 * yes). An orphan sweep must not take the empty child of a live tree:
 * a sandbox of another state folder under the same cgroup keeps its
 * init in its own folder while its commands' child sits empty, and
 * removing that child would leave it unable to start a command. */
static bool cgroup_tree_busy(int parent, const char *name, int depth)
{
	if (depth > 8)
		return true;
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno != ENOENT;
	_cleanup_free_ char *procs = NULL;
	bool busy = read_file_at(fd, "cgroup.procs", 1 << 20, &procs, NULL) < 0 || procs[0] != '\0';
	DIR *d = busy ? NULL : fdopendir(fd);
	if (!d) {
		close(fd);
		return true;
	}
	struct dirent *de;
	while (!busy && (de = readdir(d)))
		if (de->d_type == DT_DIR && strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			busy = cgroup_tree_busy(dirfd(d), de->d_name, depth + 1);
	closedir(d);
	return busy;
}

/* An orphan must be this old before gc takes it: a create in another
 * state folder makes its v2 folder a moment before its first task. */
#define ORPHAN_AGE_S 5

/* Whether anything of ours still speaks for sandbox id: its runtime
 * folder (any state folder's sandboxes share it), an ephemeral record,
 * a create under way, or its record in our state folder. */
bool store_has_owner(const char *runtime_dir, const char *state_dir, const char *id)
{
	static const char *const pre[] = { "", "", ".new-", ".new-" };
	static const char *const suf[] = { "", STORE_RUN_SUFFIX, "", STORE_RUN_SUFFIX };
	char p[4200];
	for (size_t i = 0; i < ELEMENTSOF(pre); i++) {
		safe_snprintf(p, sizeof(p), "%s/%s%s%s", runtime_dir, pre[i], id, suf[i]);
		if (access(p, F_OK) == 0 || errno != ENOENT)
			return true;
	}
	safe_snprintf(p, sizeof(p), "%s/sandboxes/%s", state_dir, id);
	return access(p, F_OK) == 0 || errno != ENOENT;
}

/* Cgroup folders "abox-<id>" below the caller's own cgroup in one
 * hierarchy whose sandbox nothing speaks for any more. Only trees with no
 * task anywhere go: one with tasks may belong to a sandbox of another
 * runtime or state folder, which is not ours to end or to break. */
static unsigned sweep_orphans_in(const char *dir, const char *runtime_dir, const char *state_dir, time_t now)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	unsigned n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *id = de->d_name + 5;
		if (strncmp(de->d_name, "abox-", 5) != 0 || !id_ok(id) ||
		    store_has_owner(runtime_dir, state_dir, id))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
		    now - st.st_ctime < ORPHAN_AGE_S || cgroup_tree_busy(dirfd(d), de->d_name, 0))
			continue;
		if (rmdir_cgroup_tree(dirfd(d), de->d_name, 0) == 0)
			n++;
	}
	closedir(d);
	return n;
}

static unsigned sweep_orphans(const char *runtime_dir, const char *state_dir, const struct cg_layout *l)
{
	char dirs[1 + CG_CONTROLLER_MAX][4096];
	size_t nd = 0;
	const char *mounts[1 + CG_CONTROLLER_MAX] = { l->v2_mount }, *selfs[1 + CG_CONTROLLER_MAX] = { l->v2_self };
	/* the hierarchies cgroup_planned_dirs lists, no other */
	for (int c = 0; c < CG_CONTROLLER_MAX; c++) {
		bool used = l->use[c] == CG_V1 || c == CG_FREEZER;
		mounts[1 + c] = used ? l->v1_mount[c] : NULL;
		selfs[1 + c] = used ? l->v1_self[c] : NULL;
	}
	unsigned n = 0;
	time_t now = time(NULL);
	for (size_t i = 0; i < 1 + CG_CONTROLLER_MAX; i++) {
		if (!mounts[i] || !selfs[i])
			continue;
		char dir[4096];
		safe_snprintf(dir, sizeof(dir), "%s%s", mounts[i], strcmp(selfs[i], "/") == 0 ? "" : selfs[i]);
		bool seen = false;
		for (size_t k = 0; k < nd && !seen; k++)
			seen = strcmp(dirs[k], dir) == 0; /* co-mounted controllers */
		if (seen)
			continue;
		memcpy(dirs[nd++], dir, sizeof(dir));
		n += sweep_orphans_in(dir, runtime_dir, state_dir, now);
	}
	return n;
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
	if (id && read_file_at(dfd, STORE_CGROUPS_FILE, 65536, &rec, NULL) == 0)
		clean = remove_recorded(rec, id, l);
	else if (recorded && st.cgroups)
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
		if (!remove_recorded(rec, id, l))
			return false; /* keep the record: the next gc tries again */
	}
	(void)unlinkat(rtfd, name, 0);
	return true;
}

/* Whether name is "<id>.run"; its id in id */
static bool run_record_id(const char *name, char id[ABOX_ID_LEN + 1])
{
	size_t n = strlen(name), k = strlen(STORE_RUN_SUFFIX);
	if (n != 20 + k || strcmp(name + 20, STORE_RUN_SUFFIX) != 0)
		return false;
	memcpy(id, name, 20);
	id[20] = '\0';
	return id_ok(id);
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
		    (!st.cgroups || remove_recorded(st.cgroups, ids[i], l))) {
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
		if (errno == ENOENT && layout)
			n += sweep_orphans(runtime_dir, state_dir, layout);
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
		char id[ABOX_ID_LEN + 1];
		if (id_ok(name)) {
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
			else if (id_ok(name + 5))
				(void)clean_one(dirfd(d), name, NULL, state_dir, NULL);
		}
	}
	closedir(d);
	/* again: a create killed before its record was whole leaves a state
	 * folder that waits for its runtime folder's end, which the loop
	 * above has just seen to (else it stayed until the next gc) */
	n += clean_records(runtime_dir, state_dir, layout);
	if (layout)
		n += sweep_orphans(runtime_dir, state_dir, layout);
	if (removed)
		*removed = n;
	return 0;
}
