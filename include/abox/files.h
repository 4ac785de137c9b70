/* abox/files.h — files inside a sandbox, done by abox-init as a user;
 * metadata; watches. Part of the public API; abox/abox.h includes every
 * part. */
#ifndef ABOX_FILES_H
#define ABOX_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <abox/common.h>
#include <abox/error.h>
#include <abox/version.h>
#include <abox/sandbox.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- files -----------------------------------------------------------
 *
 * Done by abox-init inside the sandbox, as `user` (NULL: "user") with that
 * user's permissions; paths are resolved in the sandbox's own tree only.
 * `user` and `root` are uid 1000 and 0; any other name is a user of the
 * sandbox's own /etc/passwd (with its groups), -ABOX_ENOUSER when it has
 * none. A relative path (and "~", "~/x") is below the user's home.
 * Errors carry the kernel's errno: -ENOENT not found, -EACCES permission
 * denied, -ENOTDIR, -EISDIR, -EEXIST, -ENOSPC, ... An empty file reads as
 * 0 bytes, never as an error. */

typedef enum abox_file_type {
	ABOX_FILE_REGULAR = 1,
	ABOX_FILE_DIR = 2,
	ABOX_FILE_SYMLINK = 3,
	ABOX_FILE_OTHER = 4,
} abox_file_type;

typedef struct abox_file_info {
	char path[4096];
	char name[256];
	abox_file_type type;
	uint64_t size;
	uint32_t mode;     /* permission bits */
	uint32_t uid, gid;
	int64_t mtime_ms;  /* Unix time in ms */
	char target[4096]; /* a symlink's target, else "" */
} abox_file_info;

/* Chunks of a file as they are read (at most 64 KiB each, valid during the
 * call). Return non-zero to stop (the read then fails with -ECANCELED). */
typedef int (*abox_data_fn)(const void *data, size_t len, void *userdata);

ABOX_EXPORT int abox_file_read(abox_sandbox *sb, const char *path, const char *user, abox_data_fn fn,
			       void *userdata, uint64_t *size, abox_error *err);
/* Writes (creates or truncates) a file from memory; with parents, missing
 * folders are made first. */
ABOX_EXPORT int abox_file_write(abox_sandbox *sb, const char *path, const char *user, const void *data,
				size_t len, int parents, abox_error *err);
/* The same from a host file descriptor, in bounded chunks (any size). */
ABOX_EXPORT int abox_file_write_fd(abox_sandbox *sb, const char *path, const char *user, int fd,
				   int parents, uint64_t *size, abox_error *err);
ABOX_EXPORT int abox_file_stat(abox_sandbox *sb, const char *path, const char *user, abox_file_info *out,
			       abox_error *err);
/* 1 in *exists when the path exists (a dangling symlink exists). */
ABOX_EXPORT int abox_file_exists(abox_sandbox *sb, const char *path, const char *user, int *exists,
				 abox_error *err);
/* Entries below path down to depth levels (1 = the folder's own entries).
 * *out is a malloc'd array of *n entries (free()). */
ABOX_EXPORT int abox_file_list(abox_sandbox *sb, const char *path, const char *user, unsigned depth,
			       abox_file_info **out, size_t *n, abox_error *err);
/* Limits of a listing: a depth above ABOX_FILE_LIST_MAX_DEPTH is refused
 * (-EINVAL), and a tree with more than ABOX_FILE_LIST_MAX_ENTRIES entries
 * fails with -E2BIG before any entry is given. */
#define ABOX_FILE_LIST_MAX_DEPTH 16
#define ABOX_FILE_LIST_MAX_ENTRIES 100000
/* One entry of a listing, valid during the call. Non-zero stops the
 * listing (it then fails with -ECANCELED). */
typedef int (*abox_file_entry_fn)(const abox_file_info *entry, void *userdata);
/* The same entries as abox_file_list, handed to fn one by one as they
 * arrive: memory stays constant whatever the tree's size. */
ABOX_EXPORT int abox_file_list_each(abox_sandbox *sb, const char *path, const char *user, unsigned depth,
				    abox_file_entry_fn fn, void *userdata, abox_error *err);
/* mkdir -p; *made (may be NULL) is 1 when it did not exist. */
ABOX_EXPORT int abox_file_mkdir(abox_sandbox *sb, const char *path, const char *user, int *made,
				abox_error *err);
ABOX_EXPORT int abox_file_move(abox_sandbox *sb, const char *from, const char *to, const char *user,
			       abox_error *err);
/* Removes a file or a whole folder. */
ABOX_EXPORT int abox_file_remove(abox_sandbox *sb, const char *path, const char *user, abox_error *err);

/* File metadata (what E2B calls it): user-defined key/value pairs kept as
 * the file's "user.e2b.<key>" extended attributes, done as user.
 * abox_file_meta_set sets n pairs (kv[2i] the key, kv[2i+1] its value) on
 * path, leaving its other pairs. abox_file_meta_get calls fn once per pair
 * of every path of paths[] that has any (index: the path's position;
 * strings valid during the call; return non-zero to stop); a path that
 * cannot be read has none. Sandboxes started by an abox without metadata
 * support, and remote ones, answer -ENOTSUP. */
typedef int (*abox_meta_fn)(size_t index, const char *key, const char *value, void *userdata);
ABOX_EXPORT int abox_file_meta_set(abox_sandbox *sb, const char *path, const char *user, const char *const *kv,
				   size_t n, abox_error *err);
ABOX_EXPORT int abox_file_meta_get(abox_sandbox *sb, const char *const *paths, size_t n, const char *user,
				   abox_meta_fn fn, void *userdata, abox_error *err);

/* The sandbox's own users and groups: its /etc/passwd and /etc/group as
 * they are now, read by abox-init (never the host's accounts). Users
 * made inside (useradd) are valid `user` arguments of every call here.
 * *out is owned by the caller (abox_accounts_free). Remote sandboxes
 * answer -ENOTSUP. */
typedef struct abox_accounts abox_accounts;
ABOX_EXPORT int abox_accounts_read(abox_sandbox *sb, abox_accounts **out, abox_error *err);
/* A user by name: 0 with its uid, gid and home (valid until the next
 * abox_accounts_user call on a or its free;
 * any of them may be NULL), or -ABOX_ENOUSER. */
ABOX_EXPORT int abox_accounts_user(const abox_accounts *a, const char *name, uint32_t *uid, uint32_t *gid,
				   const char **home);
/* The name of a uid or gid into buf: 0, or -ENOENT when none has it. */
ABOX_EXPORT int abox_accounts_user_name(const abox_accounts *a, uint32_t uid, char *buf, size_t n);
ABOX_EXPORT int abox_accounts_group_name(const abox_accounts *a, uint32_t gid, char *buf, size_t n);
ABOX_EXPORT void abox_accounts_free(abox_accounts *a);

typedef enum abox_fs_event_type {
	ABOX_FS_CREATE = 1,
	ABOX_FS_WRITE = 2,
	ABOX_FS_REMOVE = 3,
	ABOX_FS_RENAME = 4,
	ABOX_FS_CHMOD = 5,
} abox_fs_event_type;

/* One change below a watched folder; path is valid during the call.
 * Return non-zero to stop watching. */
typedef int (*abox_fs_event_fn)(abox_fs_event_type type, const char *path, void *userdata);

/* Watches a folder (and, with recursive, every folder below it, new ones
 * included) as user, calling fn for each change until fn returns
 * non-zero or timeout_ms passes (-1: no limit). Returns 0 then. */
ABOX_EXPORT int abox_file_watch(abox_sandbox *sb, const char *path, const char *user, int recursive,
				int timeout_ms, abox_fs_event_fn fn, void *userdata, abox_error *err);
/* The same for your own event loop: a watch on its own sandbox handle
 * (other requests on that handle would wait behind its events). Poll
 * abox_watch_fd for POLLIN, then abox_watch_dispatch delivers what
 * arrived without blocking: 0 when done for now, 1 when fn said stop,
 * -EPIPE when the sandbox went away. abox_watch_free stops the watch;
 * free it before its handle. */
typedef struct abox_watch abox_watch;
ABOX_EXPORT int abox_watch_start(abox_sandbox *sb, const char *path, const char *user, int recursive,
				 abox_watch **out, abox_error *err);
ABOX_EXPORT int abox_watch_fd(const abox_watch *w);
ABOX_EXPORT int abox_watch_dispatch(abox_watch *w, abox_fs_event_fn fn, void *userdata, abox_error *err);
ABOX_EXPORT void abox_watch_free(abox_watch *w);

#ifdef __cplusplus
}
#endif
#endif
