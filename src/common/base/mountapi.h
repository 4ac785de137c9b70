/* mountapi — the new mount API's constants and struct mount_attr, for C
 * libraries whose headers predate them (glibc before 2.36). Used where
 * abox makes idmapped mounts (mount/rootfs.c, spawn/userns.c). */
#ifndef ABOX_BASE_MOUNTAPI_H
#define ABOX_BASE_MOUNTAPI_H

#include <fcntl.h>
#include <stdint.h>

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOVE_MOUNT_T_EMPTY_PATH
#define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
struct mount_attr {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};
#endif

#endif
