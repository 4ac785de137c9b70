/* What the libFuzzer targets share. */
#ifndef ABOX_FUZZ_H
#define ABOX_FUZZ_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A NUL-terminated copy of the size bytes at data (malloc'd), or NULL
 * when memory runs out. */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
	char *z = malloc(size + 1);
	if (z) {
		memcpy(z, data, size);
		z[size] = '\0';
	}
	return z;
}

#endif
