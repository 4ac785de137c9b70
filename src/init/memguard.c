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
 * would. A layer on a real filesystem is not checked: its page cache can
 * be written back and reclaimed.
 *
 * Runs in abox-init. The limit comes from init's "memory=N" argument. */
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

int memguard_room(size_t n)
{
	struct statfs sf;
	if (!limit_bytes || fstatfs(INIT_LAYER_FD, &sf) < 0 || (unsigned long)sf.f_type != TMPFS_MAGIC_)
		return 0;
	uint64_t used = (uint64_t)(sf.f_blocks - sf.f_bfree) * (uint64_t)sf.f_bsize;
	return used + n > limit_bytes ? -ENOSPC : 0;
}
