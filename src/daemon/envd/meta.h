/* meta.h — E2B's file metadata on the envd plane (meta.c). */
#ifndef ABOX_DAEMON_META_H
#define ABOX_DAEMON_META_H

#include "daemon.h"

#define META_MAX_PAIRS 64
#define META_MAX_KEY 128
#define META_MAX_VALUE 4096

struct file_meta {
	size_t n;
	char *kv[2 * META_MAX_PAIRS]; /* key, value, ... (keys lower case) */
};

/* The request's X-Metadata-* headers; -EINVAL with the reason in why
 * when one is malformed or there are too many. */
int meta_from_request(struct request *rq, struct file_meta *m, char *why, size_t whylen);
void meta_free(struct file_meta *m);
/* {key: value} or NULL when there is none. */
json_object *meta_json(const struct file_meta *m);
/* Adds "metadata" to every entry (objects with "path") that has some. */
void meta_add_to_entries(abox_sandbox *sb, const char *user, json_object *entries);
void meta_add_to_entry(abox_sandbox *sb, const char *user, json_object *entry);
/* Validates the headers before anything is written: 0, or -EINVAL (why). */
int meta_check(struct request *rq, char *why, size_t whylen);
/* Keeps the request's metadata on path (nothing when it has none). */
int meta_apply(abox_sandbox *sb, struct request *rq, const char *path, abox_error *err);
/* An upload's answer for one file: "metadata" as it was sent. */
void meta_add_written(struct request *rq, json_object *info);

#endif
