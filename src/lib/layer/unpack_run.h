/* unpack_run — runs abox-unpack (src/unpack) for an archive or image
 * import and reads its reports. The helper parses the hostile input in a
 * process of its own, with reduced capabilities; this side only reads
 * its short line reports.
 * Runs in the CLI/daemon. */
#ifndef ABOX_LAYER_UNPACK_RUN_H
#define ABOX_LAYER_UNPACK_RUN_H

#include <stdint.h>

#include "base/base.h"

struct unpack_run {
	const char *helper;   /* path of abox-unpack */
	const char *source;   /* archive, or a folder holding an image */
	const char *dest;     /* empty folder: gets the root filesystem */
	const char *scratch;  /* empty folder on dest's filesystem */
	bool keep_setuid, keep_devices;
	uint64_t max_bytes, max_entries; /* 0: the helper's defaults */
	void (*progress)(uint64_t entries, uint64_t bytes, unsigned layer, unsigned layers, void *ud);
	void *ud;

	/* results */
	char *config;         /* the image's {"user","workdir","env"} as JSON, or NULL */
	uint64_t entries, bytes, dropped;
};

/* Returns 0, 1 when source is a folder that holds no image, or a negative
 * errno with the helper's own message in err. */
int unpack_run(struct unpack_run *r, abox_error *err);
void unpack_run_free(struct unpack_run *r);

#endif
