/* unpack — turns a root filesystem archive or a container image into a
 * folder, for `abox template import`.
 *
 * Everything read here is hostile: archives come from anywhere. The
 * writer therefore never resolves a path the archive gave it by path:
 * every entry's folder is walked one component at a time from the
 * destination's fd with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_XDEV), so `../`, absolute names, a symlink the archive made
 * earlier (symlink-then-write) or a hardlink to a file outside can never
 * reach beyond the destination. Such entries refuse the whole archive,
 * with the entry named: a half-imported image is worse than none.
 * Device nodes and setuid/setgid bits are dropped unless asked for;
 * sizes, entry counts, path depth and JSON sizes are bounded.
 *
 * Runs in abox-unpack, a helper process with reduced capabilities. */
#ifndef ABOX_UNPACK_H
#define ABOX_UNPACK_H

#include <stdbool.h>
#include <stdint.h>

struct archive;

#define UNPACK_MAX_DEPTH 256       /* path components of one entry */
#define UNPACK_MAX_LAYERS 512      /* layers of one image */
#define UNPACK_MAX_JSON (16u << 20) /* manifests, indexes, configs */

struct unpack {
	int root;                /* the destination folder */
	uint64_t max_bytes;      /* file data, all layers together */
	uint64_t max_entries;    /* archive entries, all layers together */
	bool keep_setuid;
	bool keep_devices;

	uint64_t entries;
	uint64_t bytes;
	uint64_t dropped;        /* device nodes, sockets, setuid bits left out */
	unsigned layer, layers;  /* progress through an image */
	void (*progress)(struct unpack *u);
	uint64_t next_report;    /* entries+bytes/64KiB at which to call progress */

	/* the image's config, as JSON (user, workdir, env), or NULL */
	char *config;

	/* the last opened parent folder, reused while entries stay in it */
	char *cache_path;
	int cache_fd;

	char err[1024];
};

/* Sets up u to write into root (an fd it does not own). */
void unpack_init(struct unpack *u, int root);
void unpack_done(struct unpack *u);

/* Records a failure; returns -1. */
int unpack_fail(struct unpack *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Opens a libarchive reader over fd for the tar family with the built-in
 * decompressors only (never one that runs an external program). */
struct archive *unpack_reader(int fd);
/* The same reader, not yet opened (for a caller's read callback). */
struct archive *unpack_reader_new(void);

/* Writes every entry of a into u->root. layer: a container image layer,
 * whose .wh. entries delete what earlier layers made (done in a first
 * pass, pass_whiteouts) instead of being written. */
int unpack_entries(struct unpack *u, struct archive *a, bool layer, bool pass_whiteouts);

/* The file at fd (an archive): a root filesystem tarball, or an OCI image
 * layout or `docker save` archive, found by its top-level files. scratch
 * is an empty folder (fd) on the destination's filesystem for the image's
 * blobs. */
int unpack_file(struct unpack *u, int fd, int scratch);

/* An image already in a folder: OCI layout (oci-layout, index.json) or a
 * `docker save` tree (manifest.json). Returns 1 when dir holds neither. */
int unpack_image_dir(struct unpack *u, int dir);

#endif
