/* abox/common.h — what every part of abox's API shares. */
#ifndef ABOX_COMMON_H
#define ABOX_COMMON_H

/* Sandbox and snapshot ids: ABOX_ID_LEN characters of [a-z0-9]; a buffer
 * that holds one as a C string is ABOX_ID_LEN + 1 bytes. */
#define ABOX_ID_LEN 20

#endif
