/* local/registry.c — long-lived sandboxes found again by id: connect,
 * info, list. A record alone never makes a sandbox alive: its init must
 * still exist with the recorded start time (pidfd + /proc start time), so
 * a dead init or a reused pid is reported as such.
 * Runs in the CLI/daemon. */
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include "local/local.h"
#include "store/state.h"

void abox_strv_free(char **v)
{
	strv_free(v);
}

int local_list(abox_ctx *ctx, char ***ids, abox_error *err)
{
	return state_list(ctx->state_dir, ids, err);
}

void abox_sandbox_info_clear(abox_sandbox_info *info)
{
	if (!info)
		return;
	free(info->metadata_json);
	info->metadata_json = NULL;
}

/* The record of id, read once a freeze whose maker died is undone (one
 * failed open when there is none): "running" is then said only of a
 * sandbox that runs, and nobody talks to a tree left frozen. */
static int read_recovered(abox_ctx *ctx, const char *id, struct sb_state *st, abox_error *err)
{
	if (id_ok(id))
		(void)backend_freeze_recover(ctx, id);
	return state_read(ctx->state_dir, id, st, err);
}

int local_info(abox_ctx *ctx, const char *id, abox_sandbox_info *out, abox_error *err)
{
	if (!out || out->version < 1)
		return abox_error_setx(err, EINVAL, "info: abox_sandbox_info needs its version set");
	struct sb_state st = { 0 };
	int r = read_recovered(ctx, id, &st, err);
	if (r < 0)
		return r;
	abox_sandbox_info i = { .version = out->version };
	memcpy(i.id, st.id, sizeof(i.id));
	enum sb_status ss = state_status(&st);
	i.state = ss == SB_RUNNING  ? ABOX_STATE_RUNNING
		  : ss == SB_PAUSED ? ABOX_STATE_PAUSED
				    : ABOX_STATE_DEAD;
	i.pid = st.pid;
	i.created_ms = st.created_ms;
	i.deadline_ms = st.deadline_ms;
	safe_snprintf(i.template_name, sizeof(i.template_name), "%s", st.template_name ? st.template_name : "");
	i.memory_bytes = st.memory_bytes;
	i.disk_bytes = st.disk_bytes;
	i.pids = st.pids;
	i.cpu_millis = st.cpu_millis;
	json_object *m = json_object_new_object();
	for (unsigned k = 0; k < st.nmeta; k++)
		json_object_object_add(m, st.meta_keys[k], json_object_new_string(st.meta_values[k]));
	i.metadata_json = strdup(json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN));
	json_object_put(m);
	sb_state_free(&st);
	if (!i.metadata_json)
		return abox_error_set(err, ENOMEM, "info");
	*out = i;
	return 0;
}

static int connect_impl(abox_ctx *ctx, const char *id, bool wait_keeper, bool dead_ok, abox_sandbox **out,
			abox_error *err)
{
	struct sb_state st = { 0 };
	int r = read_recovered(ctx, id, &st, err);
	if (r < 0)
		return r;
	/* pidfd first, then the start time: if the pid was reused between
	 * the two, the start time differs; if it matches, the pidfd holds
	 * the very init we recorded and can never point to another process */
	bool cold = st.cold && st.paused_ms, dead = false;
	int pidfd = cold ? -1 : (int)syscall(SYS_pidfd_open, st.pid, 0);
	uint64_t start;
	if (cold) {
		/* paused without memory: no init to reach; resume starts one,
		 * kill removes the record */
	} else if (pidfd < 0 || proc_start_time(st.pid, &start) < 0 || start != st.pid_start) {
		if (pidfd >= 0)
			close(pidfd);
		pidfd = -1;
		dead = true;
	}
	if (dead && !dead_ok) {
		sb_state_free(&st);
		return abox_error_setx(err, ESRCH, "sandbox %s is not running (its init is gone; `abox gc` removes it)", id);
	}
	abox_sandbox *sb = calloc(1, sizeof(*sb));
	if (!sb) {
		close(pidfd);
		sb_state_free(&st);
		return abox_error_set(err, ENOMEM, "connect");
	}
	memcpy(sb->id, st.id, sizeof(sb->id));
	sb->ctx = ctx;
	sb->attached = true;
	sb->pid = cold || dead ? 0 : st.pid;
	sb->dead = dead;
	sb->pidfd = pidfd;
	sb->cold = cold;
	sb->template_lock = -1;
	sb->rundir_fd = -1;
	sb->memory_limit = st.memory_bytes;
	sb->created_wall_ms = st.created_ms;
	sb->paused = st.paused_ms != 0;
	/* an auto-pause deadline is abox_reap's business, not this handle's */
	if (st.deadline_ms && !sb->paused && !st.auto_pause)
		sb->deadline_ms = clock_mono_ms() + (st.deadline_ms - clock_wall_ms());
	sb->env = TAKE_PTR(st.env);
	sb->def_user = TAKE_PTR(st.user);
	sb->def_cwd = TAKE_PTR(st.workdir);
	sb->net_policy = TAKE_PTR(st.net_policy);
	sb->net_slot = st.net_slot;
	sb->id_base = st.id_base;
	sb_state_free(&st);
	proto_reader_init(&sb->rd, -1);

	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	safe_snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s/init.sock", ctx->runtime_dir, sb->id);
	/* A handle without a connection still kills: that needs only the
	 * pidfd, the cgroups and the paths. Requests then fail clearly. */
	sb->conn = cold || dead ? -1 : socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (cold || dead)
		sb->conn_errno = ESRCH;
	if (sb->conn >= 0 && connect(sb->conn, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		sb->conn_errno = errno;
		close(sb->conn);
		sb->conn = -1;
		/* init let go of its socket for a checkpoint: once its keeper
		 * is done (init re-armed, or the tree on disk), as found then */
		if (wait_keeper && sb->conn_errno == ECONNREFUSED && local_keeper_wait(ctx, id)) {
			local_free(sb);
			return connect_impl(ctx, id, false, dead_ok, out, err); /* once */
		}
	}
	if (sb->conn >= 0)
		fcntl(sb->conn, F_SETFL, O_NONBLOCK);
	sb->rd.sock = sb->conn;
	*out = sb;
	return 0;
}

int local_connect(abox_ctx *ctx, const char *id, abox_sandbox **out, abox_error *err)
{
	return connect_impl(ctx, id, true, false, out, err);
}

int local_connect_any(abox_ctx *ctx, const char *id, abox_sandbox **out, abox_error *err)
{
	return connect_impl(ctx, id, true, true, out, err);
}

int local_connect_now(abox_ctx *ctx, const char *id, abox_sandbox **out, abox_error *err)
{
	return connect_impl(ctx, id, false, false, out, err);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool meta_matches(const char *json, const char *const *want)
{
	if (!want || !want[0])
		return true;
	json_object *o = json_tokener_parse(json ? json : "{}");
	bool ok = o != NULL;
	for (size_t i = 0; ok && want[i]; i++) {
		const char *eq = strchr(want[i], '=');
		if (!eq) {
			ok = false;
			break;
		}
		char key[256];
		safe_snprintf(key, sizeof(key), "%.*s", (int)(eq - want[i]), want[i]);
		json_object *v;
		ok = json_object_object_get_ex(o, key, &v) && strcmp(json_object_get_string(v), eq + 1) == 0;
	}
	json_object_put(o);
	return ok;
}

int local_query(abox_ctx *ctx, const abox_list_opts *opts, abox_sandbox_info **infos, size_t *n,
		       char **next, abox_error *err)
{
	abox_list_opts o = ABOX_LIST_OPTS_INIT;
	if (opts) {
		if (opts->version < 1)
			return abox_error_setx(err, EINVAL, "list: abox_list_opts needs its version set");
		o = *opts;
	}
	char **ids = NULL;
	int r = state_list(ctx->state_dir, &ids, err);
	if (r < 0)
		return r;
	size_t count = strv_length(ids);
	qsort(ids, count, sizeof(char *), cmp_str);
	abox_sandbox_info *v = calloc(count + 1, sizeof(*v));
	if (!v) {
		strv_free(ids);
		return abox_error_set(err, ENOMEM, "list");
	}
	size_t k = 0;
	char *more = NULL;
	for (size_t i = 0; i < count; i++) {
		/* the token is the last id of the previous page */
		if (o.next_token && strcmp(ids[i], o.next_token) <= 0)
			continue;
		abox_sandbox_info in = { .version = ABOX_SANDBOX_INFO_VERSION };
		if (local_info(ctx, ids[i], &in, NULL) < 0)
			continue; /* removed meanwhile */
		if ((o.state && in.state != o.state) || !meta_matches(in.metadata_json, o.metadata)) {
			abox_sandbox_info_clear(&in);
			continue;
		}
		if (o.limit && k == o.limit) {
			abox_sandbox_info_clear(&in);
			more = strdup(v[k - 1].id);
			break;
		}
		v[k++] = in;
	}
	strv_free(ids);
	*infos = v;
	*n = k;
	if (next)
		*next = more;
	else
		free(more); /* a caller that pages no further */
	return 0;
}
