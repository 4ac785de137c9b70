/* store/state.c — see state.h. */
#include <dirent.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
#include "base/json.h"
#include "store/state.h"

#define STATE_FILE "state.json"
#define STATE_MAX_BYTES (256u << 10)


static int sandbox_dir(const char *state_dir, const char *id, char *buf, size_t len, bool create,
		       abox_error *err)
{
	if (!id_ok(id))
		return abox_error_setx(err, EINVAL, "'%s' is not a sandbox id (20 characters of a-z 0-9)", id);
	safe_snprintf(buf, len, "%s/sandboxes", state_dir);
	if (create && mkdir(buf, 0700) < 0 && errno != EEXIST)
		return abox_error_set(err, errno, "mkdir '%s'", buf);
	safe_snprintf(buf, len, "%s/sandboxes/%s", state_dir, id);
	if (create && mkdir(buf, 0700) < 0 && errno != EEXIST)
		return abox_error_set(err, errno, "mkdir '%s'", buf);
	return 0;
}

/* A process's state letter and start time (fields 3 and 22 of
 * /proc/PID/stat). */
static int proc_stat(pid_t pid, char *state, uint64_t *start)
{
	_cleanup_free_ char *s = NULL;
	if (read_proc_file(pid, "stat", &s) < 0)
		return -ESRCH;
	/* the command name may hold spaces and parentheses: fields start
	 * after the last ')' */
	char *q = strrchr(s, ')');
	if (!q || q[1] != ' ' || !q[2])
		return -EPROTO;
	*state = q[2];
	unsigned field = 2;
	for (char *t = q + 1; *t; t++) {
		if (*t == ' ' && ++field == 22) {
			*start = strtoull(t + 1, NULL, 10);
			return 0;
		}
	}
	return -EPROTO;
}

int proc_start_time(pid_t pid, uint64_t *out)
{
	char state;
	int r = proc_stat(pid, &state, out);
	if (r < 0)
		return r;
	/* an exited init that nobody reaped yet (its reaper is the host's
	 * PID 1, which may take its time) is dead, not running */
	return state == 'Z' || state == 'X' || state == 'x' ? -ESRCH : 0;
}

/* Whether pid is a zombie that started at start. */
static bool zombie_of(pid_t pid, uint64_t start)
{
	char state;
	uint64_t st;
	return proc_stat(pid, &state, &st) == 0 && state == 'Z' && st == start;
}

/* A sandbox's init that ended is a zombie until its parent reaps it. When
 * that parent is us (a daemon or program that created the sandbox and
 * runs on), nobody else will: reap it here, by pidfd — which names that
 * very process, so no other child whose pid was reused can be taken —
 * and only if it is our child (else the kernel says ECHILD). */
static void reap_if_ours(pid_t pid, uint64_t start)
{
	if (!zombie_of(pid, start))
		return;
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return;
	siginfo_t si;
	if (zombie_of(pid, start)) /* still that one: the pidfd holds it now */
		(void)waitid(P_PIDFD, (id_t)fd, &si, WEXITED | WNOHANG);
	close(fd);
}

enum sb_status state_status(const struct sb_state *s)
{
	uint64_t st;
	if (s->cold && s->paused_ms)
		return SB_PAUSED; /* no processes by design */
	if (s->pid <= 0 || proc_start_time(s->pid, &st) < 0 || st != s->pid_start) {
		if (s->pid > 0)
			reap_if_ours(s->pid, s->pid_start);
		return SB_DEAD;
	}
	return s->paused_ms ? SB_PAUSED : SB_RUNNING;
}

#define F(key, field, kind)                                                                                  \
	{                                                                                                    \
		key, offsetof(struct sb_state, field), kind                                                  \
	}
/* Every field of the record but its id, network and metadata, in the
 * order state.json has them. */
static const struct js_field fields[] = {
	F("pid", pid, JS_INT),
	F("pidStart", pid_start, JS_U64),
	F("createdMs", created_ms, JS_I64),
	F("deadlineMs", deadline_ms, JS_I64),
	F("pausedMs", paused_ms, JS_I64 | JS_OMIT0),
	F("cold", cold, JS_FLAG),
	F("template", template_name, JS_STR),
	F("templateRoot", template_root, JS_STR),
	F("cgroups", cgroups, JS_STR),
	F("seccompPolicy", seccomp_policy, JS_STR),
	F("user", user, JS_STR),
	F("workdir", workdir, JS_STR),
	F("checkpoint", checkpoint, JS_STR),
	F("autoPause", auto_pause, JS_FLAG),
	F("tmpfsLayer", tmpfs_layer, JS_FLAG),
	F("autoPauseNoMemory", auto_no_memory, JS_FLAG),
	F("autoPausePending", auto_pending, JS_FLAG),
	F("checkpointToken", checkpoint_token, JS_STR),
	F("memoryBytes", memory_bytes, JS_U64),
	F("diskBytes", disk_bytes, JS_U64),
	F("pids", pids, JS_U64),
	F("cpuMillis", cpu_millis, JS_U32),
	F("env", env, JS_STRV),
	F("snapshots", snapshots, JS_STRV | JS_OMIT0),
	F("noSudo", no_sudo, JS_FLAG),
};
#undef F

int state_write(const char *state_dir, const struct sb_state *s, abox_error *err)
{
	return state_write_ex(state_dir, s, true, err);
}

int state_write_ex(const char *state_dir, const struct sb_state *s, bool durable, abox_error *err)
{
	char dir[4096], tmp[4200], final[4200];
	int r = sandbox_dir(state_dir, s->id, dir, sizeof(dir), true, err);
	if (r < 0)
		return r;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_string(s->id));
	js_fields_put(o, s, fields, ELEMENTSOF(fields));
	if (s->net_policy) {
		json_object *np = json_tokener_parse(s->net_policy);
		if (!np) {
			json_object_put(o);
			return abox_error_setx(err, EINVAL, "the network policy of %s is not JSON", s->id);
		}
		json_object_object_add(o, "network", np);
		json_object_object_add(o, "netSlot", json_object_new_uint64(s->net_slot));
	}
	if (s->id_base)
		json_object_object_add(o, "idBase", json_object_new_uint64(s->id_base));
	json_object *meta = json_object_new_object();
	for (unsigned i = 0; i < s->nmeta; i++)
		json_object_object_add(meta, s->meta_keys[i], json_object_new_string(s->meta_values[i]));
	json_object_object_add(o, "metadata", meta);
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	/* a record state_read refuses would be a sandbox nobody can list,
	 * kill or collect: never write one */
	size_t len = strlen(text);
	if (len >= STATE_MAX_BYTES) {
		json_object_put(o);
		return abox_error_setx(err, EFBIG, "the record of %s would be %zu bytes, over the limit of %u "
				       "(metadata and environment too large)", s->id, len, STATE_MAX_BYTES);
	}

	safe_snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, STATE_FILE);
	safe_snprintf(final, sizeof(final), "%s/%s", dir, STATE_FILE);
	/* temp + fsync + rename: a reader sees the old record or the new
	 * one, never half of one, even across a crash or a power loss (a
	 * sandbox paused without memory lives on in its record alone) */
	r = write_file_replace(final, tmp, text, len, 0600, durable);
	json_object_put(o);
	return r < 0 ? abox_error_set(err, -r, "write '%s'", final) : 0;
}

int state_read(const char *state_dir, const char *id, struct sb_state *s, abox_error *err)
{
	char dir[4096], path[4200];
	int r = sandbox_dir(state_dir, id, dir, sizeof(dir), false, err);
	if (r < 0)
		return r;
	safe_snprintf(path, sizeof(path), "%s/%s", dir, STATE_FILE);
	json_object *o;
	r = js_load(path, STATE_MAX_BYTES, &o, err, "sandbox %s not found", id);
	if (r < 0)
		return r;
	struct sb_state t = { 0 };
	char *sid = js_strdup(o, "id");
	if (!sid || strcmp(sid, id) != 0) {
		free(sid);
		json_object_put(o);
		return abox_error_setx(err, EBADMSG, "'%s' is damaged (id)", path);
	}
	free(sid);
	memcpy(t.id, id, 21);
	js_fields_get(o, &t, fields, ELEMENTSOF(fields));
	json_object *np = js_get(o, "network", json_type_object);
	if (np) {
		const char *nps = json_object_to_json_string_ext(np, JSON_C_TO_STRING_PLAIN);
		t.net_policy = nps ? strdup(nps) : NULL;
		json_object *slot = js_get(o, "netSlot", json_type_int);
		t.net_slot = slot ? (uint32_t)json_object_get_uint64(slot) : 0;
	}
	json_object *idb = js_get(o, "idBase", json_type_int);
	t.id_base = idb ? (uint32_t)json_object_get_uint64(idb) : 0;
	json_object *meta;
	if (json_object_object_get_ex(o, "metadata", &meta) && json_object_is_type(meta, json_type_object)) {
		json_object_object_foreach(meta, k, v)
		{
			if (t.nmeta == STATE_MAX_META || !json_object_is_type(v, json_type_string))
				continue;
			t.meta_keys[t.nmeta] = strdup(k);
			t.meta_values[t.nmeta] = strdup(json_object_get_string(v));
			t.nmeta++;
		}
	}
	json_object_put(o);
	*s = t;
	return 0;
}

int state_remove(const char *state_dir, const char *id)
{
	char dir[4096];
	if (sandbox_dir(state_dir, id, dir, sizeof(dir), false, NULL) < 0)
		return -EINVAL;
	return rm_rf_at(AT_FDCWD, dir, 0);
}

void sb_state_free(struct sb_state *s)
{
	if (!s)
		return;
	js_fields_free(s, fields, ELEMENTSOF(fields));
	free(s->net_policy);
	for (unsigned i = 0; i < s->nmeta; i++) {
		free(s->meta_keys[i]);
		free(s->meta_values[i]);
	}
	memset(s, 0, sizeof(*s));
}

int state_list(const char *state_dir, char ***ids, abox_error *err)
{
	char dir[4096];
	safe_snprintf(dir, sizeof(dir), "%s/sandboxes", state_dir);
	return list_ids(dir, ids, err);
}

/* A holder stuck on a sandbox that does not answer must not hang every
 * later kill and pause behind it: the wait is bounded, and its error
 * names the holder. */
static int lock_bounded(int fd, const char *id, abox_error *err)
{
	int r = flock_timeout(fd, LOCK_EX, lock_timeout_ms());
	if (r == 0)
		return 0;
	if (r != -ETIMEDOUT)
		return abox_error_set(err, -r, "lock sandbox %s", id);
	char who[24] = "";
	ssize_t n = pread(fd, who, sizeof(who) - 1, 0);
	who[n > 0 ? n : 0] = '\0';
	who[strcspn(who, "\n")] = '\0';
	return abox_error_setx(err, ETIMEDOUT,
			       "sandbox %s is busy: another operation (pid %s) has held it for more than %lld ms",
			       id, who[0] ? who : "unknown", (long long)lock_timeout_ms());
}

/* A lock this thread holds across calls that lock again (a cold resume
 * holds it through a create whose failure path kills). flock locks belong
 * to the open file: a dup of the holding fd re-enters, a second open of
 * the file would wait for ourselves forever. */
static __thread int held_fd = -1;
static __thread char held_path[4200];

int state_trylock(const char *state_dir, const char *id)
{
	char dir[4096], path[4200];
	if (sandbox_dir(state_dir, id, dir, sizeof(dir), false, NULL) < 0)
		return -EINVAL;
	safe_snprintf(path, sizeof(path), "%s/lock", dir);
	int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

void state_lock_hold(int fd, const char *state_dir, const char *id)
{
	held_fd = fd;
	if (fd >= 0)
		safe_snprintf(held_path, sizeof(held_path), "%s/sandboxes/%s/lock", state_dir, id);
}

bool state_lock_is_held(const char *state_dir, const char *id)
{
	char path[4200];
	safe_snprintf(path, sizeof(path), "%s/sandboxes/%s/lock", state_dir, id);
	return held_fd >= 0 && strcmp(path, held_path) == 0;
}

int state_lock(const char *state_dir, const char *id, abox_error *err)
{
	char dir[4096], path[4200];
	int r = sandbox_dir(state_dir, id, dir, sizeof(dir), false, err);
	if (r < 0)
		return r;
	safe_snprintf(path, sizeof(path), "%s/lock", dir);
	if (held_fd >= 0 && strcmp(path, held_path) == 0) {
		int fd = fcntl(held_fd, F_DUPFD_CLOEXEC, 3);
		return fd < 0 ? abox_error_set(err, errno, "lock '%s'", path) : fd;
	}
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return errno == ENOENT ? abox_error_setx(err, ENOENT, "sandbox %s not found", id)
				       : abox_error_set(err, errno, "open '%s'", path);
	r = lock_bounded(fd, id, err);
	if (r < 0) {
		close(fd);
		return r;
	}
	/* who holds it, for the error of whoever waits too long */
	char who[24];
	int n = safe_snprintf(who, sizeof(who), "%d\n", (int)getpid());
	if (pwrite(fd, who, (size_t)n, 0) == n)
		(void)ftruncate(fd, n);
	return fd;
}
