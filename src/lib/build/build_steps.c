/* build/build_steps.c — FROM, RUN and the instructions that set
 * metadata (ENV, ARG, USER, LABEL, EXPOSE, CMD, ENTRYPOINT, SHELL,
 * WORKDIR), and COPY/ADD's choice of where to copy from. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "base/sha256.h"
#include "build/build.h"
#include "build/dockerfile.h"
#include "layer/layer.h"
#include "layer/snapshot.h"

/* ---- FROM */

int build_from_template(struct build *b, struct stage *s, const char *tname, abox_error *err)
{
	struct template_info t = { .lock_fd = -1 };
	int r = template_open(b->state, tname, &t, err);
	if (r < 0)
		return r;
	if (t.ntrees) {
		template_info_free(&t);
		return abox_error_setx(err, EINVAL,
				       "FROM %s: the host template overlays this machine's folders "
				       "and cannot be built on; pull or import an image",
				       tname);
	}
	s->template_name = strdup(tname);
	s->template_root = strdup(t.root);
	const struct template_meta *m = &t.meta;
	s->env = strv_copy(m->env);
	s->workdir = m->workdir ? strdup(m->workdir) : NULL;
	s->user = m->user ? strdup(m->user) : NULL;
	s->cmd = strv_copy(m->cmd);
	template_info_free(&t);
	struct sha256 h;
	sha256_init(&h);
	build_hash_str(&h, "from", s->template_root);
	sha256_hex(&h, s->key);
	return s->template_name && s->template_root ? 0 : abox_error_set(err, ENOMEM, "build");
}

bool build_template_exists(struct build *b, const char *name)
{
	if (!template_name_ok(name))
		return false;
	char p[4300];
	struct stat st;
	safe_snprintf(p, sizeof(p), "%s/templates/%s", b->state, name);
	return lstat(p, &st) == 0;
}

/* "scratch": an empty template of that name (made once) */
static int scratch(struct build *b, abox_error *err)
{
	if (build_template_exists(b, "scratch"))
		return 0;
	char d[4300];
	safe_snprintf(d, sizeof(d), "%s/empty", b->tmp);
	if (mkdir(d, 0755) < 0)
		return abox_error_set(err, errno, "build: create '%s'", d);
	struct template_import_req req = { .source = "scratch (empty)" };
	struct template_meta m;
	int r = template_import(b->state, "scratch", d, &req, &m, err);
	if (r >= 0)
		template_meta_free(&m);
	return r;
}

int build_do_from(struct build *b, const struct df_inst *in, abox_error *err)
{
	struct build_scope sc = { .b = b };
	char why[300];
	_cleanup_free_ char *x = df_expand(in->rest, build_lookup, &sc, why, sizeof(why));
	if (!x)
		return abox_error_setx(err, EINVAL, "line %u: %s", in->line, why);
	_cleanup_(strv_freep) char **w = df_words(x);
	size_t n = strv_length(w);
	if (!w || (n != 1 && !(n == 3 && strcasecmp(w[1], "as") == 0)))
		return abox_error_setx(err, EINVAL, "line %u: FROM takes an image and an optional AS name",
				       in->line);
	const char *plat = df_flag(in->flags, "platform");
	struct stage *ns = realloc(b->stages, (b->nstages + 1) * sizeof(*ns));
	if (!ns)
		return abox_error_set(err, ENOMEM, "build");
	b->stages = ns;
	struct stage *s = &b->stages[b->nstages++];
	memset(s, 0, sizeof(*s));
	if (n == 3 && !(s->name = strdup(w[2])))
		return abox_error_set(err, ENOMEM, "build");
	for (size_t i = 0; i + 1 < b->nstages; i++)
		if (b->stages[i].name && s->name && strcasecmp(b->stages[i].name, s->name) == 0)
			return abox_error_setx(err, EINVAL, "line %u: a stage named '%s' already exists",
					       in->line, s->name);
	/* the global ARGs as they stand, for ARG NAME inside the stage */
	const char *img = w[0];
	int r;
	for (size_t i = 0; i + 1 < b->nstages; i++) {
		struct stage *o = &b->stages[i];
		if (o->name && strcasecmp(o->name, img) == 0) {
			/* FROM an earlier stage: its files and metadata */
			s->template_name = strdup(o->template_name);
			s->template_root = strdup(o->template_root);
			s->snapshot = o->snapshot ? strdup(o->snapshot) : NULL;
			s->depth = o->depth;
			memcpy(s->key, o->key, 65);
			s->env = strv_copy(o->env);
			s->workdir = o->workdir ? strdup(o->workdir) : NULL;
			s->user = o->user ? strdup(o->user) : NULL;
			s->shell = strv_copy(o->shell);
			s->cmd = strv_copy(o->cmd);
			s->entrypoint = strv_copy(o->entrypoint);
			build_say(b, "step %u/%u: FROM stage %s", b->step, b->steps, o->name);
			return 0;
		}
	}
	if (strcmp(img, "scratch") == 0) {
		if ((r = scratch(b, err)) < 0)
			return r;
		build_say(b, "step %u/%u: FROM scratch", b->step, b->steps);
		return build_from_template(b, s, "scratch", err);
	}
	if (!plat && strcmp(img, "host") != 0 && build_template_exists(b, img)) {
		build_say(b, "step %u/%u: FROM template %s", b->step, b->steps, img);
		return build_from_template(b, s, img, err);
	}
	if (strcmp(img, "host") == 0)
		return build_from_template(b, s, img, err);
	/* an image: pulled (kept when unchanged) as the template its name gives */
	char tname[64];
	if ((r = abox_template_ref_name(img, tname, sizeof(tname), err)) < 0)
		return abox_error_prefix(err, "line %u: FROM", in->line), r;
	build_say(b, "step %u/%u: FROM %s (pulling it as template %s)", b->step, b->steps, img, tname);
	abox_pull_opts po = ABOX_PULL_OPTS_INIT;
	if (b->df->pull)
		po = *b->df->pull;
	if (plat)
		po.platform = plat;
	if ((r = abox_template_pull(b->ctx, tname, img, b->o, &po, err)) < 0)
		return abox_error_prefix(err, "line %u: FROM %s", in->line, img), r;
	return build_from_template(b, s, tname, err);
}

/* ---- RUN */

struct run_out {
	struct build *b;
	char line[4096];
	size_t len;
	bool ended;
	int code;
	char why[256]; /* END's error: it could not run */
};

static void flush_line(struct run_out *o)
{
	o->line[o->len] = '\0';
	build_say(o->b, "  | %s", o->line);
	o->len = 0;
}

static void on_event(const abox_event *ev, void *ud)
{
	struct run_out *o = ud;
	if (ev->type == ABOX_EVENT_END) {
		o->ended = true;
		o->code = ev->exit_code;
		if (ev->error)
			snprintf(o->why, sizeof(o->why), "%s", ev->error);
		return;
	}
	if (ev->type != ABOX_EVENT_STDOUT && ev->type != ABOX_EVENT_STDERR)
		return;
	const char *d = ev->data;
	for (size_t i = 0; i < ev->len; i++) {
		if (d[i] == '\n' || o->len == sizeof(o->line) - 1) {
			flush_line(o);
			if (d[i] == '\n')
				continue;
		}
		o->line[o->len++] = d[i];
	}
}

/* "0"/"root" -> root, "1000"/"user" -> user, else the name (uid:gid: the uid) */
char *build_run_user(const char *u)
{
	if (!u)
		return strdup("root");
	char *x = strndup(u, strcspn(u, ":"));
	if (x && strcmp(x, "0") == 0) {
		free(x);
		return strdup("root");
	}
	if (x && strcmp(x, "1000") == 0) {
		free(x);
		return strdup("user");
	}
	return x;
}

static int run_step(struct build *b, struct stage *s, const struct df_inst *in, const char *key,
		    abox_error *err)
{
	char *const *json = in->json;
	const char *const sh[] = { "/bin/sh", "-c", NULL };
	size_t ns = s->shell ? strv_length(s->shell) : 2;
	const char **argv = calloc(ns + strv_length(json) + 2, sizeof(char *));
	if (!argv)
		return abox_error_set(err, ENOMEM, "build");
	size_t k = 0;
	if (json) {
		for (size_t i = 0; json[i]; i++)
			argv[k++] = json[i];
	} else {
		for (size_t i = 0; i < ns; i++)
			argv[k++] = s->shell ? s->shell[i] : sh[i];
		argv[k++] = in->rest;
	}
	if (!k) {
		free(argv);
		return abox_error_setx(err, EINVAL, "line %u: RUN with nothing to run", in->line);
	}
	/* RUN sees the ARGs in scope as environment too (not kept after) */
	_cleanup_(strv_freep) char **env = strv_copy(s->args);
	for (size_t i = 0; s->env && s->env[i]; i++) {
		const char *eq = strchr(s->env[i], '=');
		char *kk = strndup(s->env[i], (size_t)(eq - s->env[i]));
		if (kk)
			(void)build_kv_set(&env, kk, eq + 1);
		free(kk);
	}
	abox_sandbox_opts so = ABOX_SANDBOX_OPTS_INIT;
	so.template_name = s->template_name;
	so.snapshot = s->snapshot;
	so.memory_bytes = b->df->memory_bytes ? b->df->memory_bytes : 2ull << 30;
	so.disk_bytes = b->df->disk_bytes ? b->df->disk_bytes : 8ull << 30;
	so.pids = 4096;
	so.cpu_millis = 0;
	so.timeout_ms = 6u * 3600 * 1000;
	abox_net_opts open = ABOX_NET_OPTS_INIT;
	open.mode = ABOX_NET_OPEN;
	so.net = b->df->net ? b->df->net : &open;
	/* marked with the build's folder: a build that dies (SIGKILL, a
	 * crash) leaves its sandbox to the next build, which ends it */
	char dirmeta[4300];
	snprintf(dirmeta, sizeof(dirmeta), "abox.build.dir=%s", b->tmp);
	const char *meta[] = { "abox.build=1", dirmeta, NULL };
	so.metadata = meta;
	abox_sandbox *sb = NULL;
	int r = abox_sandbox_create(b->ctx, &so, &sb, err);
	if (r < 0) {
		free(argv);
		return abox_error_prefix(err, "line %u: RUN", in->line), r;
	}
	_cleanup_free_ char *user = build_run_user(s->user);
	abox_proc_opts po = ABOX_PROC_OPTS_INIT;
	po.argv = argv;
	po.env = (const char *const *)env;
	po.cwd = s->workdir ? s->workdir : "/";
	po.user = user;
	abox_proc *p = NULL;
	struct run_out out = { .b = b };
	r = abox_proc_start(sb, &po, &p, err);
	if (r >= 0) {
		r = abox_proc_wait(p, -1, on_event, &out, err);
		if (out.len)
			flush_line(&out);
		abox_proc_free(p);
	}
	free(argv);
	if (r >= 0 && (!out.ended || out.code != 0))
		r = abox_error_setx(
			err, EIO, "line %u: `%.*s` failed (%s%sexit code %d); the build's log: %s", in->line,
			200, in->text, out.why, out.why[0] ? ", " : "", out.code, b->logpath);
	else if (r < 0)
		abox_error_prefix(err, "line %u: RUN", in->line);
	if (r >= 0) {
		abox_snapshot_info si = { .version = ABOX_SNAPSHOT_INFO_VERSION };
		r = abox_sandbox_snapshot(sb, NULL, &si, err);
		if (r >= 0) {
			free(s->snapshot);
			s->snapshot = strdup(si.id);
			s->depth = si.depth;
			memcpy(s->key, key, 65);
			build_remember(b, key, si.id);
		}
	}
	abox_error kerr = ABOX_ERROR_INIT;
	(void)abox_sandbox_kill(sb, &kerr);
	abox_error_clear(&kerr);
	abox_sandbox_free(sb);
	return r;
}

int build_do_run(struct build *b, struct stage *s, const struct df_inst *in, abox_error *err)
{
	struct sha256 h;
	sha256_init(&h);
	build_hash_str(&h, "prev", s->key);
	build_hash_str(&h, "run", in->text);
	build_hash_strv(&h, "env", s->env);
	build_hash_strv(&h, "args", s->args);
	build_hash_str(&h, "workdir", s->workdir);
	build_hash_str(&h, "user", s->user);
	build_hash_strv(&h, "shell", s->shell);
	char key[65];
	sha256_hex(&h, key);
	char what[300];
	snprintf(what, sizeof(what), "%.280s", in->text);
	if (build_cached(b, s, key, what))
		return 0;
	build_say(b, "step %u/%u: %s", b->step, b->steps, what);
	return run_step(b, s, in, key, err);
}

/* ---- the metadata instructions */

/* ENV K=V ... or the old ENV K V; LABEL K=V ... */
static int pairs(const struct df_inst *in, const char *x, bool old_form, char ***into, abox_error *err)
{
	_cleanup_(strv_freep) char **w = df_words(x);
	if (!w || !w[0])
		return abox_error_setx(err, EINVAL, "line %u: %s needs KEY=VALUE", in->line,
				       df_kind_name(in->kind));
	if (old_form && !strchr(w[0], '=')) {
		/* ENV KEY the rest as one value */
		const char *v = x + strcspn(x, " \t");
		v += strspn(v, " \t");
		_cleanup_(strv_freep) char **vw = df_words(v);
		char *joined = NULL;
		size_t n = 0;
		FILE *f = open_memstream(&joined, &n);
		for (size_t i = 0; f && vw && vw[i]; i++)
			fprintf(f, "%s%s", i ? " " : "", vw[i]);
		if (f)
			fclose(f);
		int r = joined ? build_kv_set(into, w[0], joined) : -ENOMEM;
		free(joined);
		return r < 0 ? abox_error_set(err, -r, "build") : 0;
	}
	for (size_t i = 0; w[i]; i++) {
		char *eq = strchr(w[i], '=');
		if (!eq || eq == w[i])
			return abox_error_setx(err, EINVAL, "line %u: '%s' is not KEY=VALUE", in->line, w[i]);
		*eq = '\0';
		if (build_kv_set(into, w[i], eq + 1) < 0)
			return abox_error_set(err, ENOMEM, "build");
	}
	return 0;
}

int build_do_arg(struct build *b, struct stage *s, const struct df_inst *in, abox_error *err)
{
	struct build_scope sc = { .b = b, .s = s };
	char why[300];
	_cleanup_free_ char *x = df_expand(in->rest, build_lookup, &sc, why, sizeof(why));
	_cleanup_(strv_freep) char **w = x ? df_words(x) : NULL;
	if (!w || !w[0])
		return abox_error_setx(err, EINVAL, "line %u: ARG NAME[=default]", in->line);
	for (size_t i = 0; w[i]; i++) {
		char *eq = strchr(w[i], '=');
		if (eq)
			*eq = '\0';
		const char *given = NULL;
		size_t kl = strlen(w[i]);
		for (size_t j = 0; b->df->build_args && b->df->build_args[j]; j++)
			if (strncmp(b->df->build_args[j], w[i], kl) == 0 && b->df->build_args[j][kl] == '=')
				given = b->df->build_args[j] + kl + 1;
		/* inside a stage, ARG NAME takes the global value declared before FROM */
		const char *v = given ? given : eq ? eq + 1 : s ? build_kv_get(b->global_args, w[i]) : NULL;
		char ***into = s ? &s->args : &b->global_args;
		if (v && build_kv_set(into, w[i], v) < 0)
			return abox_error_set(err, ENOMEM, "build");
	}
	return 0;
}

static int set_str(char **dst, const char *v)
{
	char *c = strdup(v);
	if (!c)
		return -ENOMEM;
	free(*dst);
	*dst = c;
	return 0;
}

/* CMD/ENTRYPOINT/SHELL value: the JSON form, or sh -c TEXT */
static char **command_of(const struct df_inst *in, char *const *shell)
{
	if (in->json)
		return strv_copy(in->json);
	char *v[4] = { shell ? shell[0] : "/bin/sh", shell && shell[0] ? shell[1] : "-c", in->rest, NULL };
	if (shell && shell[0] && !shell[1]) {
		v[1] = in->rest;
		v[2] = NULL;
	}
	return strv_copy(v);
}

int build_do_meta(struct build *b, struct stage *s, const struct df_inst *in, abox_error *err)
{
	struct build_scope sc = { .b = b, .s = s };
	char why[300];
	int r = 0;
	_cleanup_free_ char *x = NULL;
	if (in->kind != DF_CMD && in->kind != DF_ENTRYPOINT && in->kind != DF_SHELL) {
		x = df_expand(in->rest, build_lookup, &sc, why, sizeof(why));
		if (!x)
			return abox_error_setx(err, EINVAL, "line %u: %s", in->line, why);
	}
	switch (in->kind) {
	case DF_ENV:
		r = pairs(in, x, true, &s->env, err);
		break;
	case DF_LABEL:
		r = pairs(in, x, false, &s->labels, err);
		break;
	case DF_EXPOSE: {
		/* kept as a label: what the image says it serves */
		_cleanup_(strv_freep) char **w = df_words(x);
		for (size_t i = 0; r == 0 && w && w[i]; i++) {
			if (strspn(w[i], "0123456789") == 0 || strlen(w[i]) > 12)
				return abox_error_setx(err, EINVAL,
						       "line %u: EXPOSE '%s' is not PORT[/PROTO]", in->line,
						       w[i]);
			char k[64];
			snprintf(k, sizeof(k), "expose.%s", w[i]);
			r = build_kv_set(&s->labels, k, "") < 0 ? abox_error_set(err, ENOMEM, "build") : 0;
		}
		break;
	}
	case DF_USER: {
		_cleanup_(strv_freep) char **w = df_words(x);
		if (!w || !w[0] || w[1])
			return abox_error_setx(err, EINVAL, "line %u: USER takes one user[:group]", in->line);
		r = set_str(&s->user, w[0]) < 0 ? abox_error_set(err, ENOMEM, "build") : 0;
		break;
	}
	case DF_CMD:
	case DF_ENTRYPOINT: {
		char **c = command_of(in, s->shell);
		if (!c)
			return abox_error_set(err, ENOMEM, "build");
		char ***dst = in->kind == DF_CMD ? &s->cmd : &s->entrypoint;
		strv_free(*dst);
		*dst = c;
		if (in->kind == DF_ENTRYPOINT && !s->own_cmd) {
			/* a new ENTRYPOINT drops the CMD the base image had */
			strv_free(s->cmd);
			s->cmd = NULL;
		}
		s->own_cmd = true;
		break;
	}
	case DF_SHELL:
		strv_free(s->shell);
		s->shell = strv_copy(in->json);
		break;
	default:
		break;
	}
	if (r == 0)
		build_key_step(s, in->text);
	return r;
}

int build_do_workdir(struct build *b, struct stage *s, const struct df_inst *in, abox_error *err)
{
	struct build_scope sc = { .b = b, .s = s };
	char why[300];
	_cleanup_free_ char *x = df_expand(in->rest, build_lookup, &sc, why, sizeof(why));
	_cleanup_(strv_freep) char **w = x ? df_words(x) : NULL;
	if (!w || !w[0] || w[1])
		return abox_error_setx(err, EINVAL, "line %u: WORKDIR takes one folder", in->line);
	char *path = NULL;
	if (w[0][0] == '/')
		path = strdup(w[0]);
	else if (asprintf(&path, "%s/%s", s->workdir ? s->workdir : "", w[0]) < 0)
		path = NULL;
	if (!path)
		return abox_error_set(err, ENOMEM, "build");
	free(s->workdir);
	s->workdir = path;
	/* docker makes the folder: so does abox, as a layer */
	return build_mkdir(b, s, path, err);
}

int build_do_copy(struct build *b, struct stage *s, const struct df_inst *in, abox_error *err)
{
	struct build_scope sc = { .b = b, .s = s };
	char why[300];
	_cleanup_(strv_freep) char **w = NULL;
	if (in->json) {
		w = strv_copy(in->json);
	} else {
		_cleanup_free_ char *x = df_expand(in->rest, build_lookup, &sc, why, sizeof(why));
		if (!x)
			return abox_error_setx(err, EINVAL, "line %u: %s", in->line, why);
		w = df_words(x);
	}
	if (!w || strv_length(w) < 2)
		return abox_error_setx(err, EINVAL, "line %u: %s takes sources and a destination", in->line,
				       df_kind_name(in->kind));
	const char *from = df_flag(in->flags, "from");
	char what[300];
	snprintf(what, sizeof(what), "%.280s", in->text);
	if (in->kind == DF_ADD)
		for (size_t i = 0; w[i + 1]; i++)
			if (strstr(w[i], "://") || strncmp(w[i], "git@", 4) == 0)
				return abox_error_setx(err, EINVAL,
						       "line %u: ADD of a URL ('%s') is not supported by "
						       "abox's builder (fetch it with RUN curl or git)",
						       in->line, w[i]);
	if (!from)
		return build_copy(b, s, w, in->flags, b->context, true, what, err);
	/* another stage's files, or an image's (a template) */
	struct stage *o = NULL;
	for (size_t i = 0; i + 1 < b->nstages; i++)
		if ((b->stages[i].name && strcasecmp(b->stages[i].name, from) == 0) ||
		    (strspn(from, "0123456789") == strlen(from) && (size_t)atoi(from) == i))
			o = &b->stages[i];
	struct stage tmp = { 0 };
	int r;
	if (!o) {
		char tname[64];
		if (build_template_exists(b, from)) {
			snprintf(tname, sizeof(tname), "%s", from);
		} else {
			if ((r = abox_template_ref_name(from, tname, sizeof(tname), err)) < 0)
				return abox_error_prefix(err, "line %u: COPY --from", in->line), r;
			build_say(b, "  pulling %s as template %s", from, tname);
			if ((r = abox_template_pull(b->ctx, tname, from, b->o, b->df->pull, err)) < 0)
				return abox_error_prefix(err, "line %u: COPY --from=%s", in->line, from), r;
		}
		if ((r = build_from_template(b, &tmp, tname, err)) < 0) {
			build_stage_free(&tmp);
			return r;
		}
		o = &tmp;
	}
	if (!o->view && (r = build_view(b, o, &o->view, err)) < 0) {
		build_stage_free(&tmp);
		return r;
	}
	struct sha256 h;
	sha256_init(&h);
	build_hash_str(&h, "from", o->key);
	char fk[65];
	sha256_hex(&h, fk);
	/* the source stage's key is part of what is copied */
	char saved[65];
	memcpy(saved, s->key, 65);
	build_key_step(s, fk);
	r = build_copy(b, s, w, in->flags, o->view, false, what, err);
	if (r < 0)
		memcpy(s->key, saved, 65);
	build_stage_free(&tmp);
	return r;
}
