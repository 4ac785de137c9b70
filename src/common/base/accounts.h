/* base/accounts.h — the users and groups of a sandbox, read from its own
 * /etc/passwd and /etc/group text (never the host's: getpwnam() would
 * answer with the host's accounts and its NSS modules).
 *
 * Pure functions over a buffer the caller read: init reads the sandbox's
 * files (src/init/users.c), the library parses what init sent. The text
 * is untrusted (a sandbox's root writes it): every field is bounded, an
 * entry that does not parse is skipped, never half-used. Runs anywhere. */
#ifndef ABOX_BASE_ACCOUNTS_H
#define ABOX_BASE_ACCOUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ACCT_NAME_MAX 32   /* longest user or group name (useradd's limit) */
#define ACCT_HOME_MAX 1024 /* longest home folder accepted */
#define ACCT_ID_MAX 65535  /* ids a sandbox may use (what a user namespace maps) */
#define ACCT_FILE_MAX (256u << 10) /* passwd or group text read at most */

struct acct_user {
	char name[ACCT_NAME_MAX + 1];
	uint32_t uid, gid;
	char home[ACCT_HOME_MAX + 1];
};

/* Whether name can be a user or group name: 1-32 of [A-Za-z0-9_.-] (and a
 * last '$'), not starting with '-' or '.'. Anything else (':', '/', ',',
 * spaces, control bytes) could shift the fields of a signed text or a
 * passwd line, so it is refused before it is looked up anywhere. */
bool acct_name_ok(const char *name);

/* The passwd entry of name: 0 and *out, or -ENOENT (none), -ERANGE (its
 * uid or gid is outside 0..ACCT_ID_MAX: refused rather than cut, since
 * (uid_t)-1 means "unchanged" to setresuid). */
int acct_find_user(const char *text, size_t len, const char *name, struct acct_user *out);

/* The name of id in passwd or group text (both have the id as the third
 * field): 0 and out, or -ENOENT. */
int acct_name_of(const char *text, size_t len, uint32_t id, char *out, size_t n);

/* The supplementary groups of user name in group text (the groups that
 * list it as a member), primary first: the count (at most max). */
size_t acct_groups(const char *text, size_t len, const char *name, uint32_t primary, uint32_t *out, size_t max);

#endif
