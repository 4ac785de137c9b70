/* mount/mountinfo — reads and parses /proc/<pid>/mountinfo exactly as the
 * kernel writes it (fs/proc_namespace.c, show_mountinfo):
 *
 *   id parent major:minor root mount-point mount-options [optional...] - fstype source super-options
 *
 * Fields are separated by one space; root, mount point, fstype and source
 * have space, tab, newline and backslash written as \ooo (\040 \011 \012
 * \134), so no field holds a raw separator. Zero or more optional fields
 * ("shared:4", "master:2", "propagate_from:1", "unbindable") run up to a
 * lone "-". Nothing is assumed about the filesystem: an nsfs root reads
 * "net:[4026532281]", a source may be empty ("" was given to mount(2)),
 * and the super options are the rest of the line (a filesystem that does
 * not escape its options may put spaces there).
 *
 * What it does not do: decide anything about cgroups (cgroup/layout.c) or
 * build the sandbox's mounts (rootfs.c).
 * Runs in the CLI and the daemon, never between clone and exec. */
#ifndef ABOX_MOUNT_MOUNTINFO_H
#define ABOX_MOUNT_MOUNTINFO_H

#include <stddef.h>

#include "base/base.h"

/* A mount table bigger than this is refused: the text comes from our own
 * /proc, but a runaway table (a mount propagation storm) must not make us
 * allocate without bound. */
#define MOUNTINFO_MAX (16u << 20)

struct mountinfo_entry {
	unsigned id, parent;
	unsigned major, minor;
	char *root;        /* unescaped; "/..." for most filesystems, not for nsfs */
	char *mount_point; /* unescaped, absolute */
	char *mount_opts;  /* per-mount options ("rw,nosuid,relatime") */
	char *optional;    /* the optional fields, space-separated; "" when none */
	char *fstype;      /* unescaped, e.g. "cgroup2", "fuse.sshfs" */
	char *source;      /* unescaped, may be "" */
	char *super_opts;  /* the rest of the line, as written */
};

/* Parses one line (without its '\n') in place: the entry's strings point
 * into line. -EINVAL when the line is not in the kernel's format. */
int mountinfo_parse_line(char *line, struct mountinfo_entry *e);

/* Calls fn for every line of text (modified in place); an empty last line
 * is allowed. Stops at fn's first negative return and returns it. A
 * malformed line fails with -EPROTO and its number in err. */
int mountinfo_parse(char *text, int (*fn)(const struct mountinfo_entry *e, void *ud), void *ud,
		    abox_error *err);

/* Reads a mountinfo file whole. The kernel hands it out a page or so per
 * read(2), taking the namespace lock for each, so a table that changes
 * meanwhile can be read half before and half after the change; the file
 * reports any change since it was opened through poll(2) (POLLPRI), so a
 * read that saw one is done again (a few times; then the last read is
 * kept, each of its lines still whole). A regular file (fake trees in
 * tests) is read once. *out is malloc'd and NUL-terminated. */
int mountinfo_read(const char *path, char **out, size_t *len, abox_error *err);

#endif
