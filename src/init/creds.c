/* creds.c — abox-init's own process attributes that the kernel resets
 * behind its back: not dumpable, and the parent-death signal that ties
 * an ephemeral sandbox to its creator. Runs only inside the sandbox, as
 * its PID 1. */
#include <signal.h>
#include <stdbool.h>
#include <sys/prctl.h>

#include "init.h"

bool creator_bound = true;

void init_creds_changed(void)
{
	/* a process of the same uid (sandbox root) could otherwise ptrace
	 * PID 1 when fs.suid_dumpable is 1 */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (creator_bound)
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
}
