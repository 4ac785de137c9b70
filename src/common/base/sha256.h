/* sha256 — the digest OCI and docker images name their blobs by (FIPS
 * 180-4). Used to check that a blob is what its manifest says before it
 * is unpacked: a tampered or truncated image is refused, not half used. */
#ifndef ABOX_BASE_SHA256_H
#define ABOX_BASE_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
	uint32_t h[8];
	uint64_t len;     /* bytes hashed so far */
	uint8_t buf[64];  /* a partial block */
	size_t fill;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t n);
/* Writes the digest as 64 lowercase hex digits and a NUL. */
void sha256_hex(struct sha256 *s, char out[65]);

#endif
