/* layer — templates: the read-only lower layers a sandbox root is made of.
 *
 * For now: the built-in `host` template, a small generated tree (a minimal
 * /etc, the top-level folders, the host's merged-/usr symlinks) whose big
 * system trees (/usr, and /lib... where they are real folders) are borrowed
 * from the host as read-only lowers of their own overlays.
 * Runs in the CLI/daemon. */
#ifndef ABOX_LAYER_H
#define ABOX_LAYER_H

#include "base/base.h"
#include "layer/template_meta.h"
#include "mount/rootfs.h"

struct template_info {
	char *root;                            /* lower directory (one immutable version) */
	int lock_fd;                           /* shared lock on that version while in use */
	char *trees[ROOTFS_MAX_TREES];         /* host trees to overlay ("usr") */
	unsigned ntrees;
	uid_t user_uid;
	gid_t user_gid;
	struct template_meta meta;             /* default user, env, start command... */
};

/* Finds template `name` under state_dir/templates, generating the host
 * template when it is missing or older than the host files it copies.
 * Unknown names are -ENOENT with a message naming the template. */
int template_open(const char *state_dir, const char *name, struct template_info *out, abox_error *err);
void template_info_free(struct template_info *t);
/* Opens one recorded version of template name (locked shared), as a
 * sandbox that stood on it must find it again: a checkpoint restore needs
 * the very files it was dumped with. */
int template_open_version(const char *name, const char *version_root, struct template_info *out, abox_error *err);
/* Removes versions of template `name` (NULL: of every template, removed
 * ones included) that are neither current nor in use (gc calls it).
 * Never blocks on a rebuild. */
void template_sweep(const char *state_dir, const char *name);

/* Top-level folders of the host that are system trees: borrowed through
 * overlays, or recreated as symlinks on merged-/usr hosts. */
#define HOST_TREES 7
extern const char *const host_trees[HOST_TREES];

/* Generates the host template into dir (which must not exist); exposed for
 * tests. host_root is "/" normally. */
int host_template_build(const char *host_root, const char *dir, abox_error *err);
/* Whether the built template in dir is complete and newer than the host
 * files it copied. */
bool host_template_fresh(const char *dir);

struct layer_copy_stats;
/* Template names: 1-63 of a-z 0-9 - _, starting with a letter or digit. */
bool template_name_ok(const char *name);
struct template_import_req {
	const char *unpack_helper;   /* abox-unpack, for archives and images */
	bool keep_setuid, keep_devices;
	bool rebuild; /* build: even when the current version is the same recipe's */
	uint64_t max_bytes, max_entries;
	void (*progress)(uint64_t entries, uint64_t bytes, unsigned layer, unsigned layers, void *ud);
	void *ud;
	/* set by the caller, over what an image's config says */
	const char *user, *workdir, *start_cmd, *ready_cmd;
	char *const *env;
	uint16_t ready_port;
	uint32_t ready_timeout_ms;
	const char *source;          /* recorded as where it came from; NULL: src */
	char *const *cmd; /* the template's command, over an image's Entrypoint + Cmd */
};
/* Imports src as a new version of template name: a folder holding a root
 * filesystem (copied without following anything in it, without device
 * nodes, setuid/setgid bits or file capabilities), or an archive or image
 * (through abox-unpack, with the same rules), plus the folders every root
 * needs and the metadata. Sandboxes running on an older version keep it
 * until they end. */
int template_import(const char *state_dir, const char *name, const char *src, const struct template_import_req *req,
		    struct template_meta *out, abox_error *err);
/* The same, for a caller that holds the templates lock (template_lock). */
int template_import_locked(const char *state_dir, const char *tdir, const char *name, const char *src,
			   const struct template_import_req *req, struct template_meta *out, abox_error *err);
/* Takes tdir/.lock exclusively (serializes builders); returns the fd. */
int template_lock(const char *tdir, abox_error *err);

/* A build recipe (a .recipe file of rootfs/): debootstrap settings and metadata. */
struct template_recipe {
	char *suite, *variant, *include, *packages, *mirror, *components;
	char *user, *workdir, **env, *start_cmd, *ready_cmd;
	uint16_t ready_port;
	uint32_t ready_timeout_ms;
};
/* Parses recipe text strictly (errors name path:line). */
int template_recipe_parse(const char *path, const char *text, struct template_recipe *r, abox_error *err);
void template_recipe_free(struct template_recipe *r);
/* The Debian mirror of this machine's apt sources (malloc'd), or NULL. */
char *template_host_mirror(void);
/* Builds template name from the recipe at recipe_path with debootstrap
 * (in a mount namespace of its own), then imports the result like a
 * folder; every line debootstrap prints goes to log. */
int template_build(const char *state_dir, const char *name, const char *recipe_path,
		   const struct template_import_req *req, void (*log)(const char *line, void *ud), void *ud,
		   struct template_meta *out, abox_error *err);

/* Installs packages (comma-separated) with apt-get in the Debian root a
 * recipe's debootstrap made, in a mount namespace of its own; every line
 * apt prints goes to log. */
int template_apt_install(const char *root, const char *packages, void (*log)(const char *line, void *ud),
			 void *ud, abox_error *err);
/* Adds the account of the sandboxes' default user (`user`, uid and gid
 * 1000, home /home/user) to the passwd, group and shadow files of a root
 * a build made, unless it has an account of that name or id. */
int template_add_user(const char *root, abox_error *err);
/* In a build helper's child (after fork): stdin /dev/null, stdout and
 * stderr to out, a plain Debian environment, then bin; never returns. */
void template_child_exec(int out, const char *bin, const char *const *argv) __attribute__((noreturn));
/* Reads a helper's output lines into log and waits for it (see
 * template_build.c). */
int template_child_lines(int fd, pid_t child, void (*log)(const char *line, void *ud), void *ud, char *last,
			 size_t last_size, abox_error *err);

/* A pull from a registry (abox-pull's options). */
struct template_pull_req {
	const char *pull_helper; /* abox-pull */
	const char *platform, *auth_file, *username, *password, *ca_file;
	bool plain_http, no_verify;
	/* each layer's download (state "pulling", "pulled", "cached",
	 * "resumed"), or a message (state NULL: "resolved NAME@DIGEST", a note) */
	void (*progress)(unsigned layer, unsigned layers, uint64_t done, uint64_t total, const char *state,
			 const char *message, void *ud);
	void *ud;
};
/* Pulls ref with abox-pull into the blob store (STATE/blobs) and a pull
 * folder (in STATE/pull), then imports it as template name (req as for
 * template_import; its source: the resolved reference with its digest). */
int template_pull(const char *state_dir, const char *name, const char *ref, const struct template_pull_req *q,
		  const struct template_import_req *req, struct template_meta *out, abox_error *err);

/* Copies template src's current version (its files and metadata) as a
 * new version of template dst, which need not exist; 'host' is refused. */
int template_copy(const char *state_dir, const char *src, const char *dst, abox_error *err);
/* Forgets template name; versions in use are swept once unused. */
int template_remove(const char *state_dir, const char *name, abox_error *err);
/* "host" first, then every imported template (NULL-terminated). */
int template_list(const char *state_dir, char ***names, abox_error *err);


/* For builders (template_store.c, template_import.c). */
typedef int (*template_build_fn)(const char *dir, void *ud, abox_error *err);
/* Builds a new version of template name with fn in a .build folder (the
 * caller holds templates/.lock), writes meta beside it, then makes it the
 * current one and sweeps the versions nobody uses. */
int template_publish(const char *state_dir, const char *tdir, const char *name, template_build_fn fn, void *ud,
		     const struct template_meta *meta, abox_error *err);
/* The folders every sandbox root needs (mount points, /tmp, the home of
 * `user`), made where an image lacks them, following nothing. */
int template_add_skeleton(int root, abox_error *err);

#endif
