/* build/build.c — the Dockerfile builder's frame: progress and log, the
 * cache, layers, the stage loop and the template at the end (see
 * build.h). The steps are build_steps.c; COPY/ADD build_copy.c. */
#include <fcntl.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "base/json.h"
#include "base/sha256.h"
#include "build/build.h"
#include "build/dockerfile.h"
#include "layer/layer.h"
#include "layer/snapshot.h"
#include "layer/unpack_run.h"
#include "layer/workdir.h"

const char *build_state_dir(const struct build *b)
{
	return b->state;
}

const char *build_tmp(struct build *b)
{
	return b->tmp;
}

void build_say(struct build *b, const char *fmt, ...)
{
	char line[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (b->log) {
		fprintf(b->log, "%s\n", line);
		fflush(b->log);
	}
	if (b->o->progress) {
		abox_template_progress p = { .message = line };
		b->o->progress(&p, b->o->userdata);
	}
}

void build_stage_free(struct stage *s)
{
	free(s->name);
	free(s->template_name);
	free(s->template_root);
	free(s->snapshot);
	strv_free(s->env);
	strv_free(s->args);
	free(s->workdir);
	free(s->user);
	strv_free(s->shell);
	strv_free(s->cmd);
	strv_free(s->entrypoint);
	strv_free(s->labels);
	if (s->view)
		(void)rm_rf_at(AT_FDCWD, s->view, 0);
	free(s->view);
	memset(s, 0, sizeof(*s));
}

/* K=V set in *v (replacing K). */
int build_kv_set(char ***v, const char *k, const char *val)
{
	char *e = NULL;
	if (asprintf(&e, "%s=%s", k, val ? val : "") < 0)
		return -ENOMEM;
	int r = strv_env_set(v, e);
	free(e);
	return r;
}

const char *build_kv_get(char *const *v, const char *k)
{
	size_t kl = strlen(k);
	for (size_t i = 0; v && v[i]; i++)
		if (strncmp(v[i], k, kl) == 0 && v[i][kl] == '=')
			return v[i] + kl + 1;
	return NULL;
}

/* ENV wins over ARG, as in docker */
const char *build_lookup(const char *name, void *ud)
{
	struct build_scope *sc = ud;
	const char *v = sc->s ? build_kv_get(sc->s->env, name) : NULL;
	if (!v)
		v = build_kv_get(sc->s ? sc->s->args : sc->b->global_args, name);
	return v;
}

void build_hash_str(struct sha256 *h, const char *tag, const char *s)
{
	sha256_update(h, tag, strlen(tag) + 1);
	sha256_update(h, s ? s : "", s ? strlen(s) + 1 : 0);
}

void build_hash_strv(struct sha256 *h, const char *tag, char *const *v)
{
	sha256_update(h, tag, strlen(tag) + 1);
	for (size_t i = 0; v && v[i]; i++)
		sha256_update(h, v[i], strlen(v[i]) + 1);
}

/* The key of a step that only changes metadata: what follows differs. */
void build_key_step(struct stage *s, const char *text)
{
	struct sha256 h;
	sha256_init(&h);
	build_hash_str(&h, "prev", s->key);
	build_hash_str(&h, "step", text);
	sha256_hex(&h, s->key);
}

bool build_cached(struct build *b, struct stage *s, const char *key, const char *what)
{
	if (b->df->flags & ABOX_DOCKERFILE_NO_CACHE)
		return false;
	char p[4300], id[ABOX_ID_LEN + 8] = "";
	safe_snprintf(p, sizeof(p), "%s/build-cache/%s", b->state, key);
	char *text = NULL;
	if (read_file_at(AT_FDCWD, p, 64, &text, NULL) < 0)
		return false;
	snprintf(id, sizeof(id), "%s", text);
	free(text);
	struct snap_record rec;
	if (!id_ok(id) || snap_read(b->state, id, &rec, NULL) < 0)
		return false; /* its snapshot was removed: run the step again */
	free(s->snapshot);
	s->snapshot = strdup(id);
	s->depth = rec.depth;
	snap_record_free(&rec);
	memcpy(s->key, key, 65);
	build_say(b, "step %u/%u: %s (cached)", b->step, b->steps, what);
	return s->snapshot != NULL;
}

void build_remember(struct build *b, const char *key, const char *id)
{
	char d[4300], p[4400];
	safe_snprintf(d, sizeof(d), "%s/build-cache", b->state);
	(void)mkdir(d, 0700);
	char tmp[4500];
	safe_snprintf(p, sizeof(p), "%s/%s", d, key);
	safe_snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	(void)write_file_replace(p, tmp, id, strlen(id), 0600, false);
}

int build_layer(struct build *b, struct stage *s, const char *key, const char *upper_parent, abox_error *err)
{
	_cleanup_close_ int lk = snap_lock(b->state, true, err);
	if (lk < 0)
		return lk;
	struct snap_record rec = { .template_name = s->template_name,
				   .template_root = s->template_root,
				   .parent = s->snapshot,
				   .depth = s->depth + 1 };
	_cleanup_(strv_freep) char **chain = NULL;
	if (rec.depth > SNAPSHOT_MAX_CHAIN) {
		/* one layer instead of one too many: the chain merged */
		int r = snap_chain(b->state, s->snapshot, &chain, NULL, err);
		if (r < 0)
			return r;
	}
	_cleanup_close_ int fd = open(upper_parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return abox_error_set(err, errno, "build: open '%s'", upper_parent);
	int r = snap_create(b->state, fd, 0, chain, &rec, err);
	if (r < 0)
		return r;
	free(s->snapshot);
	s->snapshot = strdup(rec.id);
	s->depth = rec.depth;
	memcpy(s->key, key, 65);
	build_remember(b, key, rec.id);
	return s->snapshot ? 0 : abox_error_set(err, ENOMEM, "build");
}

/* ---- the whole build */

static int step(struct build *b, const struct df_inst *in, abox_error *err)
{
	struct stage *s = b->nstages ? &b->stages[b->nstages - 1] : NULL;
	if (in->kind == DF_FROM)
		return build_do_from(b, in, err);
	if (in->kind == DF_ARG)
		return build_do_arg(b, s, in, err);
	if (!s)
		return abox_error_setx(err, EINVAL, "line %u: %s before FROM", in->line,
				       df_kind_name(in->kind));
	switch (in->kind) {
	case DF_RUN:
		return build_do_run(b, s, in, err);
	case DF_COPY:
	case DF_ADD:
		return build_do_copy(b, s, in, err);
	case DF_WORKDIR:
		return build_do_workdir(b, s, in, err);
	default:
		return build_do_meta(b, s, in, err);
	}
}

/* argv as one sh -c command line, each word single-quoted */
static char *shell_join(char *const *a, char *const *c)
{
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);
	if (!f)
		return NULL;
	bool first = true;
	for (int part = 0; part < 2; part++)
		for (size_t i = 0; (part ? c : a) && (part ? c : a)[i]; i++) {
			const char *w = (part ? c : a)[i];
			fputs(first ? "'" : " '", f);
			first = false;
			for (const char *p = w; *p; p++)
				if (*p == '\'')
					fputs("'\\''", f);
				else
					fputc(*p, f);
			fputc('\'', f);
		}
	fclose(f);
	return out;
}

static char **cat_strv(char *const *a, char *const *c)
{
	size_t na = strv_length(a), nc = strv_length(c);
	if (!na && !nc)
		return NULL;
	char **v = calloc(na + nc + 1, sizeof(char *));
	for (size_t i = 0; v && i < na + nc; i++)
		if (!(v[i] = strdup(i < na ? a[i] : c[i - na]))) {
			strv_free(v);
			return NULL;
		}
	return v;
}

/* The target stage as the template: merged, then imported with its
 * metadata (the caller's options over it). */
static int publish(struct build *b, const char *name, struct stage *s, const char *source, abox_error *err)
{
	const abox_template_opts *o = b->o;
	_cleanup_free_ char *user = build_run_user(s->user);
	if (!o->user && strcmp(user, "root") != 0 && strcmp(user, "user") != 0)
		return abox_error_setx(err, EINVAL,
				       "USER %s: a template's commands run as root or user (1000) by "
				       "default; end the Dockerfile with one of them (or give --user)",
				       s->user);
	_cleanup_(strv_freep) char **env = strv_copy(s->env);
	for (size_t i = 0; o->env && o->env[i]; i++) {
		const char *eq = strchr(o->env[i], '=');
		if (!eq)
			return abox_error_setx(err, EINVAL, "template: environment entry '%s' is not K=V",
					       o->env[i]);
		char *k = strndup(o->env[i], (size_t)(eq - o->env[i]));
		int r = k ? build_kv_set(&env, k, eq + 1) : -ENOMEM;
		free(k);
		if (r < 0)
			return abox_error_set(err, ENOMEM, "build");
	}
	_cleanup_(strv_freep) char **cmd = cat_strv(s->entrypoint, s->cmd);
	_cleanup_free_ char *start = s->own_cmd && !o->start_cmd ? shell_join(s->entrypoint, s->cmd) : NULL;
	_cleanup_free_ char *view = NULL;
	build_say(b, "making template %s", name);
	int r = build_view(b, s, &view, err);
	if (r < 0)
		return r;
	struct template_import_req req = {
		.keep_setuid = o->flags & ABOX_TEMPLATE_KEEP_SETUID,
		.keep_devices = o->flags & ABOX_TEMPLATE_KEEP_DEVICES,
		.max_bytes = o->max_bytes,
		.max_entries = o->max_entries,
		.user = o->user ? o->user : user,
		.workdir = o->workdir ? o->workdir : s->workdir,
		.env = env,
		.start_cmd = o->start_cmd ? o->start_cmd : start,
		.ready_cmd = o->ready_cmd,
		.ready_port = o->ready_port,
		.ready_timeout_ms = o->ready_timeout_ms,
		.source = source,
		.cmd = cmd,
	};
	struct template_meta m;
	r = template_import(b->state, name, view, &req, &m, err);
	if (r >= 0) {
		build_say(b, "template %s: %llu entries, %llu bytes", name, (unsigned long long)m.entries,
			  (unsigned long long)m.bytes);
		template_meta_free(&m);
	}
	(void)rm_rf_at(AT_FDCWD, view, 0);
	return r;
}

/* Is the current version of name this very build (no options over it)? */
static bool up_to_date(struct build *b, const char *name, const char *source)
{
	const abox_template_opts *o = b->o;
	if ((b->df->flags & ABOX_DOCKERFILE_NO_CACHE) || o->user || o->workdir || o->env || o->start_cmd ||
	    o->ready_cmd || o->ready_port ||
	    (o->flags & (ABOX_TEMPLATE_REBUILD | ABOX_TEMPLATE_KEEP_SETUID | ABOX_TEMPLATE_KEEP_DEVICES)))
		return false;
	struct template_info t = { .lock_fd = -1 };
	abox_error e = ABOX_ERROR_INIT;
	if (template_open(b->state, name, &t, &e) < 0) {
		abox_error_clear(&e);
		return false;
	}
	bool same = t.meta.source && strcmp(t.meta.source, source) == 0;
	template_info_free(&t);
	return same;
}

static int run_all(struct build *b, const char *name, const char *dockerfile, abox_error *err)
{
	char *text = NULL;
	size_t len = 0;
	int r = read_file_at(AT_FDCWD, dockerfile, DF_MAX_BYTES + 1, &text, &len);
	if (r < 0)
		return abox_error_set(err, -r, "build: read '%s'", dockerfile);
	struct dockerfile d;
	char why[512];
	r = dockerfile_parse(text, len, &d, why, sizeof(why));
	free(text);
	if (r < 0)
		return abox_error_setx(err, EINVAL, "%s: %s", dockerfile, why);
	b->steps = (unsigned)d.n;
	for (size_t i = 0; r >= 0 && i < d.n; i++) {
		b->step = (unsigned)i + 1;
		if (b->log)
			fprintf(b->log, "# line %u: %s\n", d.v[i].line, d.v[i].text);
		r = step(b, &d.v[i], err);
		if (r < 0 && !strstr(err->msg, "line "))
			abox_error_prefix(err, "%s line %u", dockerfile, d.v[i].line);
	}
	dockerfile_free(&d);
	if (r < 0)
		return r;
	struct stage *t = &b->stages[b->nstages - 1];
	if (b->df->target) {
		t = NULL;
		for (size_t i = 0; i < b->nstages; i++)
			if (b->stages[i].name && strcasecmp(b->stages[i].name, b->df->target) == 0)
				t = &b->stages[i];
		if (!t)
			return abox_error_setx(err, ENOENT, "build: no stage named '%s' (--target)",
					       b->df->target);
	}
	/* the final key covers the metadata too: a changed CMD is a new template */
	build_key_step(t, "final");
	char source[4600];
	snprintf(source, sizeof(source), "Dockerfile %s (build %.16s)", dockerfile, t->key);
	if (up_to_date(b, name, source)) {
		build_say(b, "template '%s' is up to date (every step cached)", name);
		return 0;
	}
	return publish(b, name, t, source, err);
}

/* A context made of archives ("DIR=ARCHIVE", see abox_dockerfile_opts),
 * each unpacked by abox-unpack into its folder. */
static int unpack_context(struct build *b, abox_error *err)
{
	char dir[4400];
	safe_snprintf(dir, sizeof(dir), "%s/context", b->tmp);
	if (mkdir(dir, 0755) < 0)
		return abox_error_set(err, errno, "build: create '%s'", dir);
	for (size_t i = 0; b->df->context_archives[i]; i++) {
		const char *e = b->df->context_archives[i], *eq = strchr(e, '=');
		size_t nl = eq ? (size_t)(eq - e) : 0;
		char name[256];
		safe_snprintf(name, sizeof(name), "%.*s", (int)(nl < 255 ? nl : 255), e);
		if (!nl || nl > 255 ||
		    !str_of(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", 1,
			    255) ||
		    !strcmp(name, ".") || !strcmp(name, ".."))
			return abox_error_setx(err, EINVAL, "build: context archive '%s' is not DIR=ARCHIVE",
					       e);
		char to[4700], scratch[4800];
		safe_snprintf(to, sizeof(to), "%s/%s", dir, name);
		safe_snprintf(scratch, sizeof(scratch), "%s.scratch", to);
		if (mkdir(to, 0755) < 0 || mkdir(scratch, 0700) < 0)
			return abox_error_set(err, errno, "build: create '%s'", to);
		struct unpack_run u = {
			.helper = b->ctx->unpack_path, .source = eq + 1, .dest = to, .scratch = scratch
		};
		int r = u.helper ? unpack_run(&u, err)
				 : abox_error_setx(err, ENOENT, "build: abox-unpack not found");
		if (r == 1)
			r = abox_error_setx(err, EINVAL, "build: '%s' is not an archive", eq + 1);
		unpack_run_free(&u);
		(void)rm_rf_at(AT_FDCWD, scratch, 0);
		if (r < 0)
			return r;
	}
	b->context = strdup(dir);
	return b->context ? 0 : abox_error_set(err, ENOMEM, "build");
}

/* Ends the RUN sandboxes of builds that died: their folder is gone or
 * its lock is free (layer/workdir.h). */
static void reap(abox_ctx *ctx)
{
	abox_list_opts lo = ABOX_LIST_OPTS_INIT;
	const char *want[] = { "abox.build=1", NULL };
	lo.metadata = want;
	abox_sandbox_info *in = NULL;
	size_t n = 0;
	if (abox_sandbox_query(ctx, &lo, &in, &n, NULL, NULL) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		json_object *m = in[i].metadata_json ? json_tokener_parse(in[i].metadata_json) : NULL;
		const char *dir = js_str(m, "abox.build.dir");
		bool dead = true;
		if (dir) {
			char lk[4400];
			safe_snprintf(lk, sizeof(lk), "%s/.lock", dir);
			int fd = open(lk, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
			dead = fd < 0 || flock(fd, LOCK_EX | LOCK_NB) == 0;
			if (fd >= 0)
				close(fd);
		}
		json_object_put(m);
		abox_sandbox *sb = NULL;
		if (dead && abox_sandbox_connect(ctx, in[i].id, &sb, NULL) == 0) {
			(void)abox_sandbox_kill(sb, NULL);
			abox_sandbox_free(sb);
		}
		abox_sandbox_info_clear(&in[i]);
	}
	free(in);
}

int build_dockerfile(abox_ctx *ctx, const char *name, const char *dockerfile, const abox_template_opts *opts,
		     const abox_dockerfile_opts *df, abox_error *err)
{
	abox_template_opts o = ABOX_TEMPLATE_OPTS_INIT;
	abox_dockerfile_opts dfo = ABOX_DOCKERFILE_OPTS_INIT;
	if (opts) {
		if (opts->version < 1)
			return abox_error_setx(err, EINVAL, "abox_template_opts: bad version %u",
					       opts->version);
		o = *opts;
	}
	if (df) {
		if (df->version < 1)
			return abox_error_setx(err, EINVAL, "abox_dockerfile_opts: bad version %u",
					       df->version);
		dfo = *df;
	}
	if (!name || !dockerfile)
		return abox_error_setx(err, EINVAL, "template build: missing name or Dockerfile");
	if (!template_name_ok(name) || strcmp(name, "host") == 0 || strcmp(name, "scratch") == 0)
		return abox_error_setx(err, EINVAL,
				       "template: name '%s' must be 1-63 of a-z 0-9 - _ (and not 'host' "
				       "or 'scratch')",
				       name);
	struct build b = { .ctx = ctx, .state = ctx->state_dir, .o = &o, .df = &dfo };
	_cleanup_free_ char *path = realpath(dockerfile, NULL);
	if (!path)
		return abox_error_set(err, errno, "build: '%s'", dockerfile);
	if (dfo.context) {
		b.context = realpath(dfo.context, NULL);
	} else {
		char *dir = strdup(path);
		char *slash = dir ? strrchr(dir, '/') : NULL;
		if (slash)
			*(slash == dir ? slash + 1 : slash) = '\0';
		b.context = dir;
	}
	struct stat st;
	if (!b.context || stat(b.context, &st) < 0 || !S_ISDIR(st.st_mode)) {
		free(b.context);
		return abox_error_setx(err, ENOTDIR, "build: the context '%s' is not a folder",
				       dfo.context ? dfo.context : path);
	}
	char d[4300];
	safe_snprintf(d, sizeof(d), "%s/build-tmp", b.state);
	(void)mkdir(b.state, 0700);
	_cleanup_close_ int lock = workdir_new(d, b.tmp, sizeof(b.tmp), err);
	if (lock < 0) {
		free(b.context);
		return abox_error_prefix(err, "build"), lock;
	}
	reap(ctx);
	if (dfo.context_archives && !dfo.context) {
		free(b.context);
		b.context = NULL;
		int r = unpack_context(&b, err);
		if (r < 0) {
			(void)rm_rf_at(AT_FDCWD, b.tmp, 0);
			return r;
		}
	}
	safe_snprintf(d, sizeof(d), "%s/build-logs", b.state);
	(void)mkdir(d, 0700);
	safe_snprintf(b.logpath, sizeof(b.logpath), "%s/%s.log", d, name);
	b.log = fopen(b.logpath, "we");
	int r = run_all(&b, name, path, err);
	if (r < 0 && b.log)
		fprintf(b.log, "# failed: %s\n", err->msg);
	for (size_t i = 0; i < b.nstages; i++)
		build_stage_free(&b.stages[i]);
	free(b.stages);
	strv_free(b.global_args);
	free(b.context);
	if (b.log)
		fclose(b.log);
	(void)rm_rf_at(AT_FDCWD, b.tmp, 0);
	return r;
}
