/* build — templates from Dockerfiles (abox_template_build_dockerfile).
 *
 * Each stage of a Dockerfile starts from a template (FROM: one made
 * already, an image pulled for it, or an empty one for scratch) and
 * stacks one snapshot per step that makes files: RUN runs in a sandbox
 * made from the stage so far (its files become the step's snapshot),
 * COPY/ADD/WORKDIR write a layer directly. A step's cache key is the
 * sha256 of the key before it, the instruction as expanded, what the
 * stage's metadata gives a RUN (env, user, folder, shell) and, for
 * COPY/ADD, every byte, name, mode and owner it copies; STATE/build-cache/
 * KEY names the snapshot a step made, so an unchanged step is found, not
 * run. The target stage's files are then merged into one folder and
 * imported as the template, whose source records the final key: a build
 * whose every step is cached keeps the template as it is.
 * Runs in the CLI/daemon, as root. */
#ifndef ABOX_BUILD_H
#define ABOX_BUILD_H

#include <stdint.h>

#include "abox/abox.h"
#include "base/base.h"

int build_dockerfile(abox_ctx *ctx, const char *name, const char *dockerfile, const abox_template_opts *opts,
		     const abox_dockerfile_opts *df, abox_error *err);

/* ---- inside the builder (build*.c) ---- */

#include <stdio.h>
#include <sys/stat.h>

#include "base/sha256.h"

struct df_inst;

struct build {
	abox_ctx *ctx;
	const char *state;
	const abox_template_opts *o;
	const abox_dockerfile_opts *df;
	char *context;
	char tmp[4200]; /* this build's scratch folder */
	FILE *log;
	char logpath[4200];
	struct stage *stages;
	size_t nstages;
	char **global_args; /* ARGs before the first FROM, K=V */
	unsigned step, steps; /* for progress lines */
};

/* What a stage is so far. */
struct stage {
	char *name; /* AS name, or NULL */
	char *template_name; /* what it stands on */
	char *template_root; /* that template's version folder */
	char *snapshot; /* its newest layer (a snapshot id), or NULL */
	unsigned depth; /* layers in its chain */
	char key[65]; /* cache key so far */
	char **env; /* ENV, K=V */
	char **args; /* ARG values in scope, K=V */
	char *workdir; /* NULL: / */
	char *user; /* NULL: root */
	char **shell; /* NULL: /bin/sh -c */
	char **cmd, **entrypoint;
	bool own_cmd; /* CMD or ENTRYPOINT given in this Dockerfile */
	char **labels; /* LABEL and EXPOSE, K=V */
	char *view; /* its files merged into one folder (COPY --from), once made */
};
void build_stage_free(struct stage *s);

/* variables: ENV over ARG, as in docker */
struct build_scope {
	struct build *b;
	struct stage *s; /* NULL: before the first FROM */
};
const char *build_lookup(const char *name, void *ud);
int build_kv_set(char ***v, const char *k, const char *val);
const char *build_kv_get(char *const *v, const char *k);

/* cache keys */
void build_hash_str(struct sha256 *h, const char *tag, const char *s);
void build_hash_strv(struct sha256 *h, const char *tag, char *const *v);
/* the key after a step that only changes metadata */
void build_key_step(struct stage *s, const char *text);
/* A step whose key is cached: the stage takes its snapshot (true). */
bool build_cached(struct build *b, struct stage *s, const char *key, const char *what);
void build_remember(struct build *b, const char *key, const char *id);
/* A new layer from upper_parent/upper/root/..., on top of the stage. */
int build_layer(struct build *b, struct stage *s, const char *key, const char *upper_parent, abox_error *err);
const char *build_state_dir(const struct build *b);
const char *build_tmp(struct build *b);
void build_say(struct build *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* steps (build_steps.c) */
bool build_template_exists(struct build *b, const char *name);
int build_from_template(struct build *b, struct stage *s, const char *tname, abox_error *err);
char *build_run_user(const char *u);
int build_do_from(struct build *b, const struct df_inst *in, abox_error *err);
int build_do_run(struct build *b, struct stage *s, const struct df_inst *in, abox_error *err);
int build_do_arg(struct build *b, struct stage *s, const struct df_inst *in, abox_error *err);
int build_do_meta(struct build *b, struct stage *s, const struct df_inst *in, abox_error *err);
int build_do_workdir(struct build *b, struct stage *s, const struct df_inst *in, abox_error *err);
int build_do_copy(struct build *b, struct stage *s, const struct df_inst *in, abox_error *err);

/* COPY/ADD (build_copy.c): words are sources... and the destination;
 * from_dir the folder sources are read from (context: the build context,
 * where .dockerignore applies). The key comes from what is copied; a hit
 * skips the copy. */
int build_copy(struct build *b, struct stage *s, char **words, char *const *flags, const char *from_dir,
	       bool context, const char *what, abox_error *err);

/* the stage's view (build_view.c) */
struct build_viewl {
	char **layers; /* ".../layer/root", newest first */
	char *root; /* the template version */
};
int build_view_open(struct build *b, struct stage *s, struct build_viewl *v, abox_error *err);
void build_view_free(struct build_viewl *v);
/* lstat of path (absolute, its folders free of symlinks) in the view;
 * *where: the folder it was found in. 0 or -ENOENT. */
int build_view_lstat(const struct build_viewl *v, const char *path, struct stat *st, const char **where);
/* path with every symlink of the view resolved (the last components
 * may not exist). 0 or -errno. */
int build_view_resolve(const struct build_viewl *v, const char *path, char *out, size_t n);
/* The stage's files merged into a new folder; its path in *out. */
int build_view(struct build *b, struct stage *s, char **out, abox_error *err);
int build_make_parents(const struct build_viewl *v, int lfd, const char *path, abox_error *err);
int build_new_layer(struct build *b, char *dir, size_t n, abox_error *err);
int build_mkdir(struct build *b, struct stage *s, const char *path, abox_error *err);
/* openat2 beneath dir, nothing followed out of it */
long build_beneath(int dir, const char *path, int flags);

/* --chown USER[:GROUP] (build_owner.c): numbers, or names of the
 * stage's own accounts; USER alone: its primary group. 0 or -1. */
int build_owner(const struct build_viewl *v, const char *spec, uid_t *uid, gid_t *gid);

/* .dockerignore (build_ignore.c) */
struct build_ignore {
	char **pat; /* "!" first: an exception */
};
void build_ignore_load(int ctx, struct build_ignore *ig);
bool build_ignored(const struct build_ignore *ig, const char *path);

#endif
