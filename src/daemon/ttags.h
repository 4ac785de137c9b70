/* ttags — E2B's template tags (the Template SDK's Template.build to
 * "name:tag" or with tags, assignTags, removeTags, getTags):
 *
 *   POST   /templates/tags            a tag's build given to more tags
 *   DELETE /templates/tags            tags removed
 *   GET    /templates/{name}/tags     a name's tags and their builds
 *
 * and what "name:tag" and "name:BUILD_ID" stand for when a sandbox is
 * made. Tags are kept apart: each is a template of its own, so moving
 * or removing one never changes what another starts.
 * Runs in aboxd. */
#ifndef ABOX_DAEMON_TTAGS_H
#define ABOX_DAEMON_TTAGS_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "daemon.h"

/* A tag as E2B spells them: 1-128 of A-Z a-z 0-9 . _ -, not starting
 * with . _ -, and not a build id (name:BUILD_ID names a build). */
bool tt_tag_ok(const char *tag);
/* The template (of abox) that holds tag of name into out (64 bytes at
 * least); -1 when name is too long to carry a tag other than "default". */
int tt_template(const char *name, const char *tag, char *out, size_t n);
/* What name:tag stands for: the template of the tag, or of a tag that
 * has build id tag; a name no template has when neither exists. */
const char *tt_resolve(const char *name, const char *tag, char *out, size_t n);
/* The tags a build gets: the one in name ("n:tag") and those of the
 * body b's "tags", each once; "default" when neither has any. NULL and
 * why when one is malformed or n too long to carry it. */
char **tt_build_tags(json_object *b, const char *name, const char *n, char *why, size_t wn);
/* Records that build bid has tags (NULL-terminated); 0 or -errno. */
int tt_record(const char *name, char *const *tags, const char *bid);
/* The build id of tag of name into out; 0, or -1 when it has no such tag. */
int tt_build_of(const char *name, const char *tag, char *out, size_t n);
/* Whether name has a tag whose template is there. */
bool tt_has_tags(const char *name);
/* Removes name and all its tags (owner's only): DELETE /templates/{name}. */
int tt_forget(abox_ctx *ctx, const char *owner, const char *name, abox_error *err);
/* The routes above (under control_authorized); *handled false when u is
 * none of them. */
enum MHD_Result tt_route(struct request *rq, const char *m, const char *u, bool *handled);

#endif
