/* layer/template_pull.c — templates from registries: abox-pull (a helper
 * without capabilities, src/pull) downloads the image into the state
 * folder's blob store and lays it out as an OCI image layout of hard
 * links in a pull folder; the layout is then imported as any image is
 * (abox-unpack) and the pull folder removed. A pull folder whose pull
 * died is removed by the next pull (layer/workdir.h).
 * Runs in the CLI/daemon, as root. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "layer/helper_run.h"
#include "layer/layer.h"
#include "layer/workdir.h"

struct pull_lines {
	const struct template_pull_req *q;
	char resolved[700];
	/* blobs this pull downloaded: removed again when the image they
	 * make is refused, so that a bad image leaves nothing behind */
	char (*fresh)[72];
	size_t nfresh;
};

static void note_fresh(struct pull_lines *pl, const char *state, const char *digest)
{
	if (strcmp(state, "pulled") != 0 && strcmp(state, "resumed") != 0)
		return;
	if (strlen(digest) != 71 || strncmp(digest, "sha256:", 7) != 0 ||
	    strspn(digest + 7, "0123456789abcdef") != 64)
		return;
	char(*nf)[72] = realloc(pl->fresh, (pl->nfresh + 1) * sizeof(*nf));
	if (!nf)
		return;
	pl->fresh = nf;
	memcpy(pl->fresh[pl->nfresh++], digest, 72);
}

static void on_line(char *line, void *ud)
{
	struct pull_lines *pl = ud;
	const struct template_pull_req *q = pl->q;
	unsigned i, n;
	unsigned long long done, total;
	char state[16], digest[80];
	if (sscanf(line, "layer %u %u %llu %llu %15s %79s", &i, &n, &done, &total, state, digest) == 6) {
		note_fresh(pl, state, digest);
		if (q->progress)
			q->progress(i, n, done, total, state, NULL, q->ud);
	} else if (sscanf(line, "config %15s %79s", state, digest) == 2) {
		note_fresh(pl, state, digest);
	} else if (strncmp(line, "resolved ", 9) == 0) {
		snprintf(pl->resolved, sizeof(pl->resolved), "%s", line + 9);
		if (q->progress)
			q->progress(0, 0, 0, 0, NULL, line, q->ud);
	} else if (strncmp(line, "note ", 5) == 0 && q->progress) {
		q->progress(0, 0, 0, 0, NULL, line + 5, q->ud);
	}
}

/* What the current version of template name was pulled from, when a
 * pull with no metadata of its own may keep it (NULL otherwise). */
static char *current_source(const char *state_dir, const char *name, const struct template_import_req *req)
{
	if (req->user || req->workdir || req->env || req->start_cmd || req->ready_cmd || req->ready_port ||
	    req->keep_setuid || req->keep_devices || req->rebuild)
		return NULL;
	struct template_info t = { .lock_fd = -1 };
	abox_error e = ABOX_ERROR_INIT;
	if (template_open(state_dir, name, &t, &e) < 0) {
		abox_error_clear(&e);
		return NULL;
	}
	/* only a version a plain pull made: no options over the image's */
	const struct template_meta *m = &t.meta;
	char *s = m->source && strchr(m->source, '@') && !m->start_cmd && !m->ready_cmd && !m->ready_port
			  ? strdup(m->source)
			  : NULL;
	template_info_free(&t);
	return s;
}

static int run_pull(const char *state_dir, const char *ref, const char *layout,
		    const struct template_pull_req *q, const char *skip_if, struct pull_lines *pl,
		    abox_error *err)
{
	char store[4200];
	safe_snprintf(store, sizeof(store), "%s/blobs", state_dir);
	const char *argv[20];
	int k = 0;
	argv[k++] = "abox-pull";
	char plat[200], auth[4200], ca[4200];
	if (q->platform) {
		snprintf(plat, sizeof(plat), "--platform=%s", q->platform);
		argv[k++] = plat;
	}
	if (q->auth_file) {
		snprintf(auth, sizeof(auth), "--authfile=%s", q->auth_file);
		argv[k++] = auth;
	}
	if (q->ca_file) {
		snprintf(ca, sizeof(ca), "--ca-file=%s", q->ca_file);
		argv[k++] = ca;
	}
	if (q->no_verify)
		argv[k++] = "--tls-verify=false";
	if (q->plain_http)
		argv[k++] = "--plain-http";
	char skip[800];
	if (skip_if) {
		snprintf(skip, sizeof(skip), "--skip-if=%s", skip_if);
		argv[k++] = skip;
	}
	char *input = NULL;
	if (q->username) {
		if (strchr(q->username, '\n') || (q->password && strchr(q->password, '\n')))
			return abox_error_setx(err, EINVAL,
					       "pull: a user name or password with a line break");
		if (asprintf(&input, "%s\n%s\n", q->username, q->password ? q->password : "") < 0)
			return abox_error_set(err, ENOMEM, "pull");
		argv[k++] = "--creds-stdin";
	}
	argv[k++] = "--";
	argv[k++] = ref;
	argv[k++] = store;
	argv[k++] = layout;
	argv[k] = NULL;
	struct helper_run h = { .path = q->pull_helper,
				.argv = argv,
				.input = input,
				.on_line = on_line,
				.ud = pl,
				.what = "pull" };
	int st = helper_run(&h, err);
	if (input) {
		explicit_bzero(input, strlen(input));
		free(input);
	}
	if (st < 0)
		return st;
	if (WIFSIGNALED(st))
		return abox_error_setx(err, EIO, "pull %s: abox-pull was killed by signal %d%s%s", ref,
				       WTERMSIG(st), h.errtext[0] ? ": " : "", h.errtext);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 4 && skip_if && pl->resolved[0])
		return 1; /* up to date */
	if (st != 0)
		return abox_error_setx(err, EINVAL, "pull %s: %s", ref,
				       h.errtext[0] ? h.errtext : "abox-pull failed");
	if (!pl->resolved[0])
		return abox_error_setx(err, EIO, "pull %s: abox-pull did not say what it pulled", ref);
	return 0;
}

int template_pull(const char *state_dir, const char *name, const char *ref, const struct template_pull_req *q,
		  const struct template_import_req *req, struct template_meta *out, abox_error *err)
{
	if (!q->pull_helper)
		return abox_error_setx(err, ENOENT, "pull: abox-pull not found (set $ABOX_PULL)");
	if (!template_name_ok(name) || strcmp(name, "host") == 0)
		return abox_error_setx(err, EINVAL,
				       "template: name '%s' must be 1-63 of a-z 0-9 - _ (and not 'host')",
				       name);
	char pulls[4200], dir[4300];
	safe_snprintf(pulls, sizeof(pulls), "%s/pull", state_dir);
	if (mkdir(state_dir, 0700) < 0 && errno != EEXIST)
		return abox_error_set(err, errno, "pull: create '%s'", state_dir);
	_cleanup_close_ int lfd = workdir_new(pulls, dir, sizeof(dir), err);
	if (lfd < 0)
		return abox_error_prefix(err, "pull"), lfd;
	char layout[4400];
	safe_snprintf(layout, sizeof(layout), "%s/image", dir);
	struct pull_lines pl = { .q = q };
	int r;
	if (mkdir(layout, 0700) < 0) {
		r = abox_error_set(err, errno, "pull: set up '%s'", dir);
		goto out;
	}
	char *skip_if = current_source(state_dir, name, req);
	r = run_pull(state_dir, ref, layout, q, skip_if, &pl, err);
	free(skip_if);
	if (r == 1) {
		/* the current version is this very image: keep it */
		if (q->progress) {
			char msg[900];
			snprintf(msg, sizeof(msg), "template '%s' is up to date (%s)", name, pl.resolved);
			q->progress(0, 0, 0, 0, NULL, msg, q->ud);
		}
		r = 0;
		if (out)
			memset(out, 0, sizeof(*out));
		goto out;
	}
	if (r < 0)
		goto out;
	struct template_import_req ir = *req;
	ir.source = pl.resolved;
	r = template_import(state_dir, name, layout, &ir, out, err);
	if (r < 0) {
		char blob[4400];
		for (size_t i = 0; i < pl.nfresh; i++) {
			safe_snprintf(blob, sizeof(blob), "%s/blobs/sha256/%s", state_dir, pl.fresh[i] + 7);
			(void)unlink(blob);
		}
	}
out:
	free(pl.fresh);
	(void)rm_rf_at(AT_FDCWD, dir, 0);
	return r;
}
