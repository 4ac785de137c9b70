/* abox/template.h — templates: import, build, inspect, list, remove. Part
 * of the public API; abox/abox.h includes every part. */
#ifndef ABOX_TEMPLATE_H
#define ABOX_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <abox/common.h>
#include <abox/error.h>
#include <abox/version.h>
#include <abox/context.h>
#include <abox/sandbox.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Templates. `host` is built in. abox_template_import makes (or replaces)
 * template name from source: a folder holding a root filesystem, a root
 * filesystem tarball (.tar, .tar.gz, .tar.xz, .tar.zst, .tar.bz2), an OCI
 * image layout (folder or archive) or a `docker save` archive (layers
 * applied in order, whiteouts honoured). Nothing in the source is ever
 * followed, no entry may land outside the template (`..`, absolute
 * names, writes through symlinks refuse the whole import), and device
 * nodes, setuid/setgid bits and file capabilities are dropped unless
 * opts allow them. Sandboxes already using an older version keep it
 * until they end. */
ABOX_EXPORT int abox_template_import(abox_ctx *ctx, const char *name, const char *source, abox_error *err);

#define ABOX_TEMPLATE_KEEP_SETUID  (1u << 0) /* keep setuid/setgid bits (sandbox roots are nosuid anyway) */
#define ABOX_TEMPLATE_KEEP_DEVICES (1u << 1) /* keep device nodes (sandbox roots are nodev anyway) */
#define ABOX_TEMPLATE_REBUILD (1u << 2) /* build: even when the same recipe built the current version */

typedef struct abox_template_progress {
	uint64_t entries;     /* written so far */
	uint64_t bytes;       /* file data written so far */
	unsigned layer;       /* image layer being applied (1-based); 0: not an image */
	unsigned layers;
	const char *message;  /* a line of a build's output (abox_template_build), or NULL */
	/* abox_template_pull, while it downloads (then layer/layers count the
	 * image's layers and entries/bytes stay 0): */
	uint64_t pulled; /* bytes of this layer here so far */
	uint64_t pull_size; /* its size */
	const char
		*pull_state; /* "pulling", "pulled", "cached" (already here), "resumed"; NULL: not pulling */
} abox_template_progress;

#define ABOX_TEMPLATE_OPTS_VERSION 1
typedef struct abox_template_opts {
	uint32_t version;
	uint32_t flags; /* ABOX_TEMPLATE_KEEP_*, ABOX_TEMPLATE_REBUILD */
	uint64_t max_bytes;             /* file data limit; 0: 64 GiB */
	uint64_t max_entries;           /* entry limit; 0: 4 million */
	/* What sandboxes made from it start with (over what an image's
	 * config says): */
	const char *user;               /* default user of commands: "root" or "user" */
	const char *workdir;            /* default working folder (absolute) */
	const char *const *env;         /* "K=V" entries */
	const char *start_cmd;          /* run with sh -c, in the background, at every create */
	const char *ready_cmd;          /* create returns once this exits 0 (sh -c), or */
	uint16_t ready_port;            /* once this TCP port accepts on the sandbox's 127.0.0.1 */
	uint32_t ready_timeout_ms;      /* 0: 60 s; create fails (and kills) after it */
	void (*progress)(const abox_template_progress *p, void *userdata); /* may be NULL */
	void *userdata;
} abox_template_opts;
#define ABOX_TEMPLATE_OPTS_INIT { ABOX_TEMPLATE_OPTS_VERSION, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, 0, 0, NULL, NULL }

ABOX_EXPORT int abox_template_import_ex(abox_ctx *ctx, const char *name, const char *source,
					const abox_template_opts *opts, abox_error *err);

/* Builds template name from a recipe (a `key = value` file, see rootfs/ and
 * docs/cli.md): debootstrap of a Debian suite from the machine's mirror
 * (or the recipe's), in a mount namespace of its own, then imported like
 * a folder. opts override the recipe's metadata; its progress callback
 * gets every line debootstrap and apt print (message). Takes minutes; a
 * template the same recipe, mirror and options built is kept as it is
 * (0, and the progress callback says so) unless ABOX_TEMPLATE_REBUILD. */
ABOX_EXPORT int abox_template_build(abox_ctx *ctx, const char *name, const char *recipe,
				    const abox_template_opts *opts, abox_error *err);

/* Pulls image ref ("python:3.12", "ghcr.io/o/r@sha256:HEX",
 * "localhost:5000/x:y") from its registry (the OCI distribution API, over
 * HTTPS; plain HTTP only for a registry on this machine that does not
 * speak TLS, or with ABOX_PULL_PLAIN_HTTP) and imports it as template
 * name (NULL: abox_template_ref_name's). An index is resolved to this
 * machine's platform (or pull's); every blob's size and digest are
 * checked while it arrives; layers already in the state folder's blob
 * store are not downloaded again, and a download that broke off is
 * resumed. opts (NULL: defaults) as for import, its progress callback
 * told each layer's download (pulled, pull_size, pull_state) and the
 * "resolved NAME@DIGEST" (message). The template's source records the
 * digest pulled. */
#define ABOX_PULL_PLAIN_HTTP (1u << 0) /* http://, never TLS */
#define ABOX_PULL_TLS_NO_VERIFY (1u << 1) /* accept any certificate (test registries only) */
#define ABOX_PULL_OPTS_VERSION 1
typedef struct abox_pull_opts {
	uint32_t version;
	uint32_t flags; /* ABOX_PULL_* */
	const char *platform; /* "os/arch[/variant]"; NULL: this machine's */
	const char *auth_file; /* docker-style config.json; NULL: $REGISTRY_AUTH_FILE,
				* $DOCKER_CONFIG/config.json, ~/.docker/config.json,
				* $XDG_RUNTIME_DIR/containers/auth.json */
	const char *username; /* with password: over the auth file */
	const char *password;
	const char *ca_file; /* PEM certificates to trust for the registry; NULL: the system's */
} abox_pull_opts;
#define ABOX_PULL_OPTS_INIT                                                                                  \
	{                                                                                                    \
		ABOX_PULL_OPTS_VERSION, 0, NULL, NULL, NULL, NULL, NULL                                      \
	}

ABOX_EXPORT int abox_template_pull(abox_ctx *ctx, const char *name, const char *ref,
				   const abox_template_opts *opts, const abox_pull_opts *pull,
				   abox_error *err);
/* The template name a pull of ref makes when given none: the
 * repository's last component and its tag ("python:3.12" ->
 * "python-3-12"). 0, or -EINVAL (err says why) for a malformed ref. */
ABOX_EXPORT int abox_template_ref_name(const char *ref, char *out, size_t outlen, abox_error *err);

/* Builds template name from a Dockerfile without docker: FROM a template
 * (pulled, imported or built), an image (pulled first) or scratch; RUN in
 * an abox sandbox of the step before; COPY/ADD from the context folder
 * (globs, --chown, --chmod, .dockerignore, ADD unpacking local archives;
 * never outside it) or another
 * stage (--from); ENV, ARG, WORKDIR, USER, LABEL, EXPOSE, SHELL,
 * CMD/ENTRYPOINT (the template's start command). Every step that makes
 * files is a layer cached by what it depends on, so an unchanged step is
 * not run again; RUN's output goes to the progress callback (message) and
 * a log. Instructions abox does not run are refused by name. See
 * docs/templates.md. */
#define ABOX_DOCKERFILE_NO_CACHE (1u << 0) /* run every step again */
#define ABOX_DOCKERFILE_OPTS_VERSION 1
typedef struct abox_dockerfile_opts {
	uint32_t version;
	uint32_t flags; /* ABOX_DOCKERFILE_* */
	const char *context; /* the folder COPY reads; NULL: the Dockerfile's */
	const char *const *build_args; /* "K=V" for ARG, or NULL */
	const char *target; /* the stage to build (AS name); NULL: the last */
	const abox_net_opts *net; /* RUN steps' network; NULL: open (egress as --net open) */
	uint64_t memory_bytes; /* RUN sandboxes' memory; 0: 2 GiB */
	uint64_t disk_bytes; /* their writable layer; 0: 8 GiB */
	/* "DIR=ARCHIVE" entries: with no context, each tar archive (any
	 * compression) is unpacked by abox-unpack, with the rules of an
	 * import, into folder DIR of a fresh context (E2B's uploaded files) */
	const char *const *context_archives;
	const abox_pull_opts *pull; /* credentials and TLS for FROM's image; NULL: defaults */
} abox_dockerfile_opts;
#define ABOX_DOCKERFILE_OPTS_INIT                                                                            \
	{                                                                                                    \
		ABOX_DOCKERFILE_OPTS_VERSION, 0, NULL, NULL, NULL, NULL, 0, 0, NULL, NULL                    \
	}

ABOX_EXPORT int abox_template_build_dockerfile(abox_ctx *ctx, const char *name, const char *dockerfile,
					       const abox_template_opts *opts, const abox_dockerfile_opts *df,
					       abox_error *err);

#define ABOX_TEMPLATE_INFO_VERSION 2
typedef struct abox_template_info {
	uint32_t version;
	char name[64];
	char current[96];      /* its current version (folder name) */
	int64_t created_ms;    /* Unix time in ms; 0: unknown (host) */
	char *source;          /* what it was imported from, or NULL */
	uint64_t entries, bytes, dropped;
	char *user;            /* default user of commands */
	char *workdir;         /* default working folder, or NULL (the user's home) */
	char **env;            /* NULL-terminated, or NULL */
	char *start_cmd, *ready_cmd;
	uint16_t ready_port;
	uint32_t ready_timeout_ms;
	/* version >= 2: */
	char **cmd; /* an image's Entrypoint + Cmd (NULL-terminated), or NULL */
} abox_template_info;

/* What template name is and does; clear with abox_template_info_clear. */
ABOX_EXPORT int abox_template_inspect(abox_ctx *ctx, const char *name, abox_template_info *out,
				      abox_error *err);
ABOX_EXPORT void abox_template_info_clear(abox_template_info *info);
/* Names of all templates, "host" first; NULL-terminated, free each and
 * the array with free(). */
ABOX_EXPORT int abox_template_list(abox_ctx *ctx, char ***names, abox_error *err);
ABOX_EXPORT int abox_template_remove(abox_ctx *ctx, const char *name, abox_error *err);
/* Copies template src (its files, defaults and start command) to dst, as a
 * template of its own: a later rebuild or removal of one leaves the other
 * as it was. dst is made or replaced; 'host' cannot be copied. */
ABOX_EXPORT int abox_template_copy(abox_ctx *ctx, const char *src, const char *dst, abox_error *err);

#ifdef __cplusplus
}
#endif
#endif
