/* template_meta — what a template says about the sandboxes made from it:
 * the default user, working folder and environment of their commands, a
 * start command init runs at create, and how to tell it is ready. Also
 * where the template came from and how big it is.
 *
 * Stored beside the version it describes, as NAME.GEN.json in the
 * templates folder (not inside the version: that folder is the sandbox's
 * root, and the sandbox has no business seeing or changing it). Written
 * once, before the version becomes current; never changed after.
 * Runs in the CLI/daemon. */
#ifndef ABOX_LAYER_TEMPLATE_META_H
#define ABOX_LAYER_TEMPLATE_META_H

#include <stdint.h>

#include "base/base.h"

#define TEMPLATE_READY_TIMEOUT_MS 60000u

struct template_meta {
	char *source;               /* what it was imported from */
	int64_t created_ms;
	uint64_t entries, bytes, dropped;
	char *user;                 /* "root" or "user"; NULL: "user" */
	char *workdir;              /* NULL: the user's home */
	char **env;                 /* K=V, NULL-terminated, or NULL */
	char *start_cmd;            /* sh -c, at create; NULL: none */
	char *ready_cmd;            /* create waits until it exits 0 ... */
	uint16_t ready_port;        /* ... or until this port accepts */
	uint32_t ready_timeout_ms;  /* 0: TEMPLATE_READY_TIMEOUT_MS */
	char **cmd; /* the image's Entrypoint + Cmd (a default command), or NULL */
};

/* Reads the metadata of the version at version_path; a version without
 * any (the host template, older imports) gives an empty one and 0. */
int template_meta_read(const char *version_path, struct template_meta *m, abox_error *err);
/* Writes it (temp + fsync + rename). */
int template_meta_write(const char *version_path, const struct template_meta *m, abox_error *err);
void template_meta_free(struct template_meta *m);

/* The user an image's config names, as abox's: "" / root / 0 -> "root",
 * user / 1000 -> "user"; anything else -> NULL (not one abox has). */
const char *template_user_from_image(const char *image_user);

#endif
