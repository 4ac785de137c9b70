/* entry.c — envd's EntryInfo of a file in proto3 JSON (name, type, path,
 * size, mode and permissions, owner and group by name, modification
 * time, symlink target), as Stat, ListDir and the watch events carry it.
 * It reads nothing itself: the names come from the sandbox's accounts
 * the caller read. Runs in aboxd. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/accounts.h"
#include "envd.h"

static void perms(uint32_t mode, abox_file_type t, char out[11])
{
	out[0] = t == ABOX_FILE_DIR ? 'd' : t == ABOX_FILE_SYMLINK ? 'l' : '-';
	const char *rwx = "rwxrwxrwx";
	for (int i = 0; i < 9; i++)
		out[1 + i] = mode & (1u << (8 - i)) ? rwx[i] : '-';
	out[10] = '\0';
}

/* The name the sandbox's own files give an id; its number when none
 * does (as envd does when a lookup fails). */
static json_object *id_name(const abox_accounts *acc, uint32_t id, bool group)
{
	char name[ACCT_NAME_MAX + 1];
	int r = acc ? (group ? abox_accounts_group_name(acc, id, name, sizeof(name))
			     : abox_accounts_user_name(acc, id, name, sizeof(name)))
		    : -ENOENT;
	if (r < 0 && (id == 0 || id == 1000)) /* the template contract's two */
		snprintf(name, sizeof(name), "%s", id == 0 ? "root" : "user");
	else if (r < 0)
		snprintf(name, sizeof(name), "%u", id);
	return json_object_new_string(name);
}

json_object *entry_json(const abox_file_info *f, const abox_accounts *acc)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(f->name));
	/* A symlink's type goes as its number (FILE_TYPE_SYMLINK = 3), not its
	 * name: proto3 JSON allows both, and SDKs generated before symlinks
	 * existed, parsed by older protobuf runtimes (Debian 12's), reject the
	 * unknown name for the whole listing but keep an unknown number. Newer
	 * SDKs read 3 as a symlink either way. */
	if (f->type == ABOX_FILE_SYMLINK)
		json_object_object_add(o, "type", json_object_new_int(3));
	else
		json_object_object_add(o, "type", json_object_new_string(f->type == ABOX_FILE_DIR ? "FILE_TYPE_DIRECTORY"
												  : "FILE_TYPE_FILE"));
	json_object_object_add(o, "path", json_object_new_string(f->path));
	char size[32], p[11], t[40];
	snprintf(size, sizeof(size), "%llu", (unsigned long long)f->size); /* int64: a string in proto3 JSON */
	json_object_object_add(o, "size", json_object_new_string(size));
	json_object_object_add(o, "mode", json_object_new_int((int)f->mode));
	perms(f->mode, f->type, p);
	json_object_object_add(o, "permissions", json_object_new_string(p));
	json_object_object_add(o, "owner", id_name(acc, f->uid, false));
	json_object_object_add(o, "group", id_name(acc, f->gid, true));
	time_t s = (time_t)(f->mtime_ms / 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	size_t l = strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(t + l, sizeof(t) - l, ".%03dZ", (int)(f->mtime_ms % 1000));
	json_object_object_add(o, "modifiedTime", json_object_new_string(t));
	if (f->target[0])
		json_object_object_add(o, "symlinkTarget", json_object_new_string(f->target));
	return o;
}
