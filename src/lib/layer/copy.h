/* copy — exact copy of a writable layer into a new layer (snapshots, fork,
 * pause without memory).
 *
 * The source is a sandbox's upper directory: written by untrusted code, so
 * it is walked only through directory fds, never by path, and nothing in
 * it is ever followed (symlinks are copied as symlinks). The caller keeps
 * the sandbox frozen while copying, so the tree cannot change under us.
 *
 * Kept exactly: file types (including overlay whiteouts, which are 0:0
 * character devices, fifos and sockets), ownership, modes with setuid and
 * setgid bits, extended attributes of files and folders (overlay's
 * trusted.* and user.* markers such as opaque folders among them),
 * hardlinks within the tree, holes of sparse files, and modification
 * times. Device nodes other than whiteouts are left out (counted in
 * dropped): they would be live nodes on the host's filesystem.
 * Regular files are reflinked where the filesystem can, else copied
 * in-kernel segment by segment (only data, never holes).
 * Runs in the CLI/daemon, as root. */
#ifndef ABOX_LAYER_COPY_H
#define ABOX_LAYER_COPY_H

#include <stdint.h>

#include "base/base.h"

/* Folders deeper than this are refused (one fd per level while walking). */
#define LAYER_COPY_MAX_DEPTH 256

struct layer_copy_stats {
	uint64_t entries;     /* everything created, the root excluded */
	uint64_t data_bytes;  /* bytes of file data copied or reflinked */
	uint64_t hardlinks;   /* entries made as links to an earlier copy */
	uint64_t reflinked;   /* files cloned instead of copied */
	uint64_t dropped;     /* device nodes, other filesystems' folders left out (imports) */
};

/* Copies the contents of src_dir into dst_dir, which must exist and be
 * empty; the root's own owner, mode, xattrs and times are copied too.
 * stats may be NULL. On failure dst_dir holds a partial copy the caller
 * removes. */
int layer_copy_tree(int src_dir, int dst_dir, struct layer_copy_stats *stats, abox_error *err);

/* Applies the layer at upper_dir onto dst_dir as overlayfs would show the
 * two stacked (upper on top): folders merge unless the upper one is
 * opaque, other entries replace, whiteouts delete (and stay, to hide the
 * template's file). Used to flatten snapshot chains. */
int layer_merge_tree(int upper_dir, int dst_dir, struct layer_copy_stats *stats, abox_error *err);

/* The two above for the writable layer of a sandbox with a user
 * namespace (id_base: its first host id): owners and file capabilities
 * stored relative to the sandbox (store/uidpool.h). */
int layer_copy_tree_ids(int src_dir, int dst_dir, uint32_t id_base, struct layer_copy_stats *stats,
			abox_error *err);
int layer_merge_tree_ids(int upper_dir, int dst_dir, uint32_t id_base, struct layer_copy_stats *stats,
			 abox_error *err);

/* layer_copy_tree for a tree from outside (a template import): device
 * nodes are left out, setuid/setgid bits and security.capability dropped,
 * so nothing in a template can raise privileges or reach host devices;
 * folders on other filesystems (mount points) and the destination itself
 * are not entered. */
int layer_import_tree(int src_dir, int dst_dir, struct layer_copy_stats *stats, abox_error *err);

#endif
