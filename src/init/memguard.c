/* abox-init/memguard.c — keeps init's own writes into a writable layer
 * that lives in memory (tmpfs) within the sandbox's memory limit.
 *
 * Pages of a tmpfs are charged to the cgroup of the process that writes
 * them. Commands write into their own cgroup (see child.c), but files
 * init writes for the host (uploads, a command's kept output) are charged
 * to init's, which has only the sandbox's limit plus a bounded headroom
 * (cgroup.h, CG_INIT_HEADROOM). Past that the kernel's OOM killer would
 * pick among init and the commands, and on a host that withholds
 * CAP_SYS_RESOURCE init's score cannot be lowered: a 600 MB upload into a
 * 512 MB sandbox would take init, the sandbox and all its files with it.
 * So before each piece init writes, the layer's use plus that piece must
 * stay within the limit, or the write fails with ENOSPC, as a full disk
 * would. Files on a real filesystem are not checked: their page cache can
 * be written back and reclaimed.
 *
 * Runs in abox-init. The limit comes from init's "memory=N" argument. */
#include <sys/stat.h>
#include <sys/statfs.h>

#include "base/base.h"
#include "init.h"
#include "proto/messages.h"

#define TMPFS_MAGIC_ 0x01021994u /* no kernel headers in init's build */

static uint64_t limit_bytes;

void memguard_set_limit(uint64_t bytes)
{
	limit_bytes = bytes;
}

/* Bytes in use on the tmpfs fd is on, 0 for other filesystems. */
static uint64_t tmpfs_used(int fd, dev_t *dev)
{
	struct statfs sf;
	struct stat st;
	if (fstatfs(fd, &sf) < 0 || (unsigned long)sf.f_type != TMPFS_MAGIC_ || fstat(fd, &st) < 0)
		return 0;
	*dev = st.st_dev;
	return (uint64_t)(sf.f_blocks - sf.f_bfree) * (uint64_t)sf.f_bsize;
}

int memguard_room(int fd, size_t n)
{
	if (!limit_bytes)
		return 0;
	dev_t layer = 0, target = 0;
	uint64_t used = tmpfs_used(INIT_LAYER_FD, &layer);
	/* a file on another tmpfs (/dev/shm) is charged to init just the
	 * same: both count */
	uint64_t other = tmpfs_used(fd, &target);
	if (other && target != layer)
		used += other;
	else if (!other && !used)
		return 0; /* nothing in memory is being written */
	return used + n > limit_bytes ? -ENOSPC : 0;
}
