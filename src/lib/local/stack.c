/* The lower layers of a sandbox created from a snapshot: the snapshot's
 * chain, newest first, on top of its template. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "local/local.h"

/* The kernel reads mount options from one page. */
#define LOWER_MAX 3800

void stack_free(struct stack *s)
{
	if (s->lock >= 0)
		close(s->lock);
	s->lock = -1;
	strv_free(s->layers);
	strv_free(s->ids);
	free(s->root_lower);
	for (unsigned i = 0; i < ROOTFS_MAX_TREES; i++)
		free(s->tree_lowers[i]);
	snap_record_free(&s->top);
	memset(s, 0, sizeof(*s));
	s->lock = -1;
}

int stack_open(abox_ctx *ctx, const char *ref, struct stack *s, abox_error *err)
{
	memset(s, 0, sizeof(*s));
	/* shared until the new sandbox is recorded: a concurrent
	 * `snapshots rm` then either finishes first (we fail cleanly) or
	 * sees our record and refuses */
	s->lock = snap_lock(ctx->state_dir, false, err);
	if (s->lock < 0)
		return s->lock;
	int r = snap_chain(ctx->state_dir, ref, &s->layers, &s->top, err);
	if (r < 0)
		return r;
	size_t n = strv_length(s->layers);
	s->ids = calloc(n + 1, sizeof(char *));
	if (!s->ids)
		return abox_error_set(err, ENOMEM, "snapshot");
	for (size_t i = 0; i < n; i++) {
		/* ".../snapshots/ID/layer" */
		const char *end = s->layers[i] + strlen(s->layers[i]) - strlen("/layer");
		if (!(s->ids[i] = strndup(end - 20, 20)))
			return abox_error_set(err, ENOMEM, "snapshot");
	}
	return 0;
}

static int join(char **out, char *const *layers, const char *sub, const char *last, abox_error *err)
{
	size_t len = strlen(last) + 1;
	for (size_t i = 0; layers[i]; i++)
		len += strlen(layers[i]) + strlen(sub) + 2;
	if (len > LOWER_MAX)
		return abox_error_setx(err, ENAMETOOLONG,
				       "snapshot: its layer paths are too long for one overlay mount");
	char *v = malloc(len);
	if (!v)
		return abox_error_set(err, ENOMEM, "snapshot");
	v[0] = '\0';
	for (size_t i = 0; layers[i]; i++) {
		char p[4200];
		safe_snprintf(p, sizeof(p), "%s/%s", layers[i], sub);
		struct stat st;
		if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode))
			continue; /* the sandbox never had this tree */
		strcat(v, p);
		strcat(v, ":");
	}
	strcat(v, last);
	*out = v;
	return 0;
}

int stack_lowers(struct stack *s, const struct template_info *t, abox_error *err)
{
	int r = join(&s->root_lower, s->layers, "root", t->root, err);
	for (unsigned i = 0; r == 0 && i < t->ntrees; i++) {
		char host[256];
		safe_snprintf(host, sizeof(host), "/%s", t->trees[i]);
		r = join(&s->tree_lowers[i], s->layers, t->trees[i], host, err);
	}
	return r;
}
