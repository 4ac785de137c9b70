/* Snapshot layers on disk; see snapshot.h. */
#include "base/json.h"
#include "layer/snapshot.h"
#include "base/clock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "layer/copy.h"
#include "store/state.h"

#define SNAP_RECORD        "snapshot.json"
#define SNAP_MAX_BYTES     (64 * 1024)
#define SNAP_AUTO_GRACE_MS 60000

#define F(key, field, kind)                                                                                  \
	{                                                                                                    \
		key, offsetof(struct snap_record, field), kind                                               \
	}
/* Every field of snapshot.json but the id, in its order. */
static const struct js_field fields[] = {
	F("name", name, JS_STR),
	F("parent", parent, JS_STR),
	F("template", template_name, JS_STR),
	F("createdMs", created_ms, JS_I64),
	F("bytes", bytes, JS_U64),
	F("depth", depth, JS_U32),
	F("auto", auto_remove, JS_FLAG),
	F("memory", memory, JS_FLAG),
	F("memoryToken", memory_token, JS_STR),
	F("templateRoot", template_root, JS_STR),
};
#undef F

void snap_record_free(struct snap_record *s)
{
	js_fields_free(s, fields, ELEMENTSOF(fields));
	memset(s, 0, sizeof(*s));
}

static int read_id(const char *state_dir, const char *id, struct snap_record *out, abox_error *err)
{
	char p[4200];
	safe_snprintf(p, sizeof(p), "%s/snapshots/%s/%s", state_dir, id, SNAP_RECORD);
	json_object *o;
	int r = js_load(p, SNAP_MAX_BYTES, &o, err, "snapshot %s not found", id);
	if (r < 0)
		return r;
	struct snap_record s = {0};
	memcpy(s.id, id, 21);
	js_fields_get(o, &s, fields, ELEMENTSOF(fields));
	json_object_put(o);
	if (!s.template_name || (s.parent && !id_ok(s.parent)) || s.depth < 1 ||
	    s.depth > SNAPSHOT_MAX_CHAIN) {
		snap_record_free(&s);
		return abox_error_setx(err, EBADMSG, "'%s' is damaged", p);
	}
	*out = s;
	return 0;
}

int snap_list(const char *state_dir, char ***ids, abox_error *err)
{
	char dir[4200];
	safe_snprintf(dir, sizeof(dir), "%s/snapshots", state_dir);
	return list_ids(dir, ids, err); /* ".tmp-*", snapshots being made, are not ids */
}

int snap_read(const char *state_dir, const char *ref, struct snap_record *out, abox_error *err)
{
	if (id_ok(ref)) {
		int r = read_id(state_dir, ref, out, NULL);
		if (r != -ENOENT)
			return r < 0 ? read_id(state_dir, ref, out, err) : r;
	}
	_cleanup_(strv_freep) char **ids = NULL;
	int r = snap_list(state_dir, &ids, err);
	if (r < 0)
		return r;
	for (size_t i = 0; ids[i]; i++) {
		struct snap_record s;
		if (read_id(state_dir, ids[i], &s, NULL) < 0)
			continue;
		if (s.name && strcmp(s.name, ref) == 0) {
			*out = s;
			return 0;
		}
		snap_record_free(&s);
	}
	return abox_error_setx(err, ENOENT, "snapshot '%s' not found (`abox snapshots ls` lists them)", ref);
}

int snap_chain(const char *state_dir, const char *ref, char ***layers, struct snap_record *top,
               abox_error *err)
{
	struct snap_record s;
	int r = snap_read(state_dir, ref, &s, err);
	if (r < 0)
		return r;
	char **v = calloc(SNAPSHOT_MAX_CHAIN + 1, sizeof(char *));
	if (!v) {
		snap_record_free(&s);
		return abox_error_set(err, ENOMEM, "snapshot chain");
	}
	size_t n = 0;
	char cur[ABOX_ID_LEN + 1];
	memcpy(cur, s.id, 21);
	for (;;) {
		char p[4200];
		safe_snprintf(p, sizeof(p), "%s/snapshots/%s/layer", state_dir, cur);
		if (n == SNAPSHOT_MAX_CHAIN || !(v[n++] = strdup(p))) {
			r = abox_error_setx(err, n == SNAPSHOT_MAX_CHAIN ? ELOOP : ENOMEM,
			                    "snapshot %s: chain longer than %d layers", s.id,
			                    SNAPSHOT_MAX_CHAIN);
			goto fail;
		}
		struct snap_record c;
		if ((r = read_id(state_dir, cur, &c, err)) < 0)
			goto fail;
		bool more = c.parent != NULL;
		if (more)
			memcpy(cur, c.parent, 21);
		snap_record_free(&c);
		if (!more)
			break;
	}
	*layers = v;
	if (top)
		*top = s;
	else
		snap_record_free(&s);
	return 0;
fail:
	strv_free(v);
	snap_record_free(&s);
	return r;
}

int snap_create(const char *state_dir, int layer_fd, uint32_t id_base, char *const *flatten,
		struct snap_record *rec, abox_error *err)
{
	char dir[4200], tmp[64];
	safe_snprintf(dir, sizeof(dir), "%s/snapshots", state_dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return abox_error_set(err, errno, "snapshot: create '%s'", dir);
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return abox_error_set(err, errno, "snapshot: open '%s'", dir);
	int r = random_id(rec->id, 20);
	if (r < 0)
		return abox_error_set(err, -r, "snapshot: id");
	/* made under a name listings skip, renamed when whole: a crash
	 * leaves a .tmp folder (gc removes it), never a half snapshot */
	safe_snprintf(tmp, sizeof(tmp), ".tmp-%s", rec->id);
	if (mkdirat(dfd, tmp, 0700) < 0)
		return abox_error_set(err, errno, "snapshot: create '%s/%s'", dir, tmp);
	_cleanup_close_ int lfd = -EBADF;
	_cleanup_close_ int tfd = openat(dfd, tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int upper =
	    openat(layer_fd, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd < 0 || upper < 0) {
		r = abox_error_set(err, errno, "snapshot: open the layers");
		goto fail;
	}
	if (mkdirat(tfd, "layer", 0755) < 0) {
		r = abox_error_set(err, errno, "snapshot: create its layer");
		goto fail;
	}
	lfd = openat(tfd, "layer", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct layer_copy_stats st;
	if (lfd < 0) {
		r = abox_error_set(err, errno, "snapshot: open its layer");
		goto fail;
	}
	if (flatten && flatten[0]) {
		/* a chain at its depth limit: the oldest layer, then each newer
		 * one and finally the sandbox's own applied on top, give one
		 * layer that stands on the template alone */
		size_t n = strv_length(flatten);
		uint64_t bytes = 0;
		for (size_t i = n; i-- > 0;) {
			_cleanup_close_ int src = open(flatten[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (src < 0) {
				r = abox_error_set(err, errno, "snapshot: open layer '%s'", flatten[i]);
				goto fail;
			}
			r = i == n - 1 ? layer_copy_tree(src, lfd, &st, err) : layer_merge_tree(src, lfd, &st, err);
			if (r < 0)
				goto fail;
			bytes += st.data_bytes;
		}
		if ((r = layer_merge_tree_ids(upper, lfd, id_base, &st, err)) < 0)
			goto fail;
		st.data_bytes += bytes;
		rec->parent = NULL;
		rec->depth = 1;
	} else if ((r = layer_copy_tree_ids(upper, lfd, id_base, &st, err)) < 0) {
		goto fail;
	}
	rec->bytes = st.data_bytes;
	rec->created_ms = clock_wall_ms();

	json_object *o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_string(rec->id));
	js_fields_put(o, rec, fields, ELEMENTSOF(fields));
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	int fd = openat(tfd, SNAP_RECORD, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	r = fd < 0 ? -errno : write_full(fd, text, strlen(text));
	json_object_put(o);
	/* a snapshot outlives the machine's power, unlike a sandbox record */
	if (r == 0 && (fsync(fd) < 0 || syncfs(fd) < 0))
		r = -errno;
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		r = abox_error_set(err, -r, "snapshot: write its record");
		goto fail;
	}
	if (renameat(dfd, tmp, dfd, rec->id) < 0) {
		r = abox_error_set(err, errno, "snapshot: publish '%s'", rec->id);
		goto fail;
	}
	/* the rename itself must survive a power loss too: a durable record
	 * (a cold pause) may name this snapshot */
	(void)fsync(dfd);
	return 0;
fail:
	(void)rm_rf_at(dfd, tmp, 0);
	return r;
}

/* Rewrites snapshot id's record with edit(o, ud) applied, atomically
 * (temp file, fsync, rename). */
static int record_edit(const char *state_dir, const char *id, void (*edit)(json_object *o, const void *ud),
		       const void *ud, abox_error *err)
{
	char p[4200], tmp[4300];
	safe_snprintf(p, sizeof(p), "%s/snapshots/%s/%s", state_dir, id, SNAP_RECORD);
	safe_snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	json_object *o;
	int r = js_load(p, SNAP_MAX_BYTES, &o, err, "snapshot %s not found", id);
	if (r < 0)
		return r;
	edit(o, ud);
	const char *out = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	r = write_file_replace(p, tmp, out, strlen(out), 0600, true);
	json_object_put(o);
	return r < 0 ? abox_error_set(err, -r, "snapshot: write '%s'", p) : 0;
}

struct memory_edit {
	const char *token, *template_root;
};

static void set_memory(json_object *o, const void *ud)
{
	const struct memory_edit *m = ud;
	json_object_object_add(o, "memory", json_object_new_boolean(1));
	json_object_object_add(o, "memoryToken", json_object_new_string(m->token));
	json_object_object_add(o, "templateRoot", json_object_new_string(m->template_root));
}

int snap_set_memory(const char *state_dir, const char *id, const char *token, const char *template_root,
		    abox_error *err)
{
	struct memory_edit m = { token, template_root };
	return record_edit(state_dir, id, set_memory, &m, err);
}

static void drop_name(json_object *o, const void *ud)
{
	(void)ud;
	json_object_object_del(o, "name");
}

static void forget(json_object *o, const void *ud)
{
	(void)ud;
	json_object_object_del(o, "name");
	json_object_object_add(o, "auto", json_object_new_boolean(1));
}

int snap_drop_name(const char *state_dir, const char *id, abox_error *err)
{
	return record_edit(state_dir, id, drop_name, NULL, err);
}

/* Who stands on snapshot id: a recorded sandbox (alive or not yet
 * collected) or a snapshot whose parent it is. */
static int find_user(const char *state_dir, const char *id, char *who, size_t n)
{
	_cleanup_(strv_freep) char **sbs = NULL;
	if (state_list(state_dir, &sbs, NULL) < 0)
		return -ENOMEM;
	for (size_t i = 0; sbs[i]; i++) {
		struct sb_state st = {0};
		if (state_read(state_dir, sbs[i], &st, NULL) < 0)
			continue;
		bool uses = false;
		for (size_t k = 0; st.snapshots && st.snapshots[k] && !uses; k++)
			uses = strcmp(st.snapshots[k], id) == 0;
		sb_state_free(&st);
		if (uses) {
			safe_snprintf(who, n, "sandbox %s", sbs[i]);
			return 1;
		}
	}
	_cleanup_(strv_freep) char **snaps = NULL;
	if (snap_list(state_dir, &snaps, NULL) < 0)
		return -ENOMEM;
	for (size_t i = 0; snaps[i]; i++) {
		struct snap_record s;
		if (read_id(state_dir, snaps[i], &s, NULL) < 0)
			continue;
		bool child = s.parent && strcmp(s.parent, id) == 0;
		snap_record_free(&s);
		if (child) {
			safe_snprintf(who, n, "snapshot %s", snaps[i]);
			return 1;
		}
	}
	return 0;
}

int snap_lock(const char *state_dir, bool exclusive, abox_error *err)
{
	char p[4200];
	safe_snprintf(p, sizeof(p), "%s/snapshots", state_dir);
	if (mkdir(p, 0700) < 0 && errno != EEXIST)
		return abox_error_set(err, errno, "snapshot: create '%s'", p);
	safe_snprintf(p, sizeof(p), "%s/snapshots/.lock", state_dir);
	int fd = open(p, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return abox_error_set(err, errno, "snapshot: open '%s'", p);
	int r = flock_timeout(fd, exclusive ? LOCK_EX : LOCK_SH, lock_timeout_ms());
	if (r < 0) {
		close(fd);
		return r == -ETIMEDOUT ? abox_error_setx(err, ETIMEDOUT, "snapshot: the snapshot store is busy (another "
							 "snapshot or removal for more than %lld ms)",
							 (long long)lock_timeout_ms())
				       : abox_error_set(err, -r, "snapshot: lock '%s'", p);
	}
	return fd;
}

int snap_remove(const char *state_dir, const char *ref, abox_error *err)
{
	return snap_remove_ex(state_dir, ref, false, err);
}

int snap_remove_ex(const char *state_dir, const char *ref, bool forget_in_use, abox_error *err)
{
	_cleanup_close_ int lock = snap_lock(state_dir, true, err);
	if (lock < 0)
		return lock;
	struct snap_record s;
	int r = snap_read(state_dir, ref, &s, err);
	if (r < 0)
		return r;
	char who[64];
	r = find_user(state_dir, s.id, who, sizeof(who));
	if (r < 0) {
		/* cannot tell who uses it: keep it */
		snap_record_free(&s);
		return abox_error_set(err, -r, "snapshot: check who uses %s", ref);
	}
	if (r > 0 && forget_in_use) {
		/* in use: it goes from the user's sight (no name, not listed)
		 * and becomes a layer gc removes once nothing stands on it;
		 * what was started from it runs on, undisturbed */
		r = record_edit(state_dir, s.id, forget, NULL, err);
		if (r >= 0)
			snap_settle(state_dir, s.id);
		snap_record_free(&s);
		return r;
	}
	if (r > 0) {
		r = abox_error_setx(err, EBUSY, "snapshot %s is in use by %s (remove that first)", s.id, who);
		snap_record_free(&s);
		return r;
	}
	char dir[4200];
	safe_snprintf(dir, sizeof(dir), "%s/snapshots", state_dir);
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* the record first: a removal cut short leaves no half snapshot
	 * that looks whole */
	char rec[64];
	safe_snprintf(rec, sizeof(rec), "%s/%s", s.id, SNAP_RECORD);
	if (dfd < 0 || (unlinkat(dfd, rec, 0) < 0 && errno != ENOENT) || (r = rm_rf_at(dfd, s.id, 0)) < 0)
		r = abox_error_set(err, r < 0 ? -r : errno, "snapshot: remove %s", s.id);
	snap_record_free(&s);
	return r;
}

void snap_sweep(const char *state_dir)
{
	char dir[4200];
	safe_snprintf(dir, sizeof(dir), "%s/snapshots", state_dir);
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	/* never wait: a snapshot being made holds the lock, and its .tmp
	 * folder is then not a leftover */
	char lp[4200];
	safe_snprintf(lp, sizeof(lp), "%s/.lock", dir);
	_cleanup_close_ int lock = open(lp, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) < 0)
		return;
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	/* a chain frees its layers top-down: repeat while a pass removed
	 * something (a parent is unused only once its child is gone) */
	bool again = true;
	for (int pass = 0; again && pass <= SNAPSHOT_MAX_CHAIN; pass++) {
		again = false;
		rewinddir(d);
		struct dirent *de;
		while ((de = readdir(d))) {
			bool tmp = strncmp(de->d_name, ".tmp-", 5) == 0;
			char rec[64];
			safe_snprintf(rec, sizeof(rec), "%s/%s", de->d_name, SNAP_RECORD);
			/* a .tmp folder, or a snapshot whose removal was cut short
			 * after its record went */
			if (tmp || (id_ok(de->d_name) && faccessat(dfd, rec, F_OK, AT_SYMLINK_NOFOLLOW) < 0 &&
			            errno == ENOENT)) {
				(void)rm_rf_at(dfd, de->d_name, 0);
				continue;
			}
			/* a fork's snapshot once its forks are gone: once the fork
			 * said it is done creating them ("settled"), or after a
			 * minute if it never did (it crashed) */
			struct snap_record sr;
			if (!id_ok(de->d_name) || read_id(state_dir, de->d_name, &sr, NULL) < 0)
				continue;
			char who[64];
			char settled[64];
			safe_snprintf(settled, sizeof(settled), "%s/settled", de->d_name);
			bool done = faccessat(dfd, settled, F_OK, AT_SYMLINK_NOFOLLOW) == 0 ||
			            clock_wall_ms() - sr.created_ms > SNAP_AUTO_GRACE_MS;
			bool drop =
			    sr.auto_remove && done && find_user(state_dir, sr.id, who, sizeof(who)) == 0;
			snap_record_free(&sr);
			if (drop && unlinkat(dfd, rec, 0) == 0) {
				(void)rm_rf_at(dfd, de->d_name, 0);
				again = true;
			}
		}
	}
	closedir(d);
}

void snap_settle(const char *state_dir, const char *id)
{
	char p[4200];
	safe_snprintf(p, sizeof(p), "%s/snapshots/%s/settled", state_dir, id);
	int fd = open(p, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
}
