/* base64 for proto3 JSON bytes fields. */
#ifndef ABOX_BASE_BASE64_H
#define ABOX_BASE_BASE64_H

#include <stddef.h>

/* malloc'd, NUL-terminated; NULL when out of memory. */
char *base64_encode(const void *data, size_t n);
/* 0 and a malloc'd buffer, or -1 for input that is not base64. */
int base64_decode(const char *s, unsigned char **out, size_t *n);

#endif
