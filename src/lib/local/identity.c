/* local/identity.c — who a sandbox is on the host: its own user
 * namespace, when asked for or the state folder's default (userns.json),
 * on a range of host ids taken from the pool (store/uidpool.h) and
 * recorded (in the runtime folder) under its id before anything runs with them.
 * Runs in the CLI/daemon. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "local/local.h"
#include "store/uidpool.h"

int local_userns_begin(abox_ctx *ctx, const char *id, uint32_t flags, struct userns_job *j, abox_error *err)
{
	*j = (struct userns_job){ .pid = -1, .ready_fd = -1 };
	if (flags & ABOX_SANDBOX_NO_USERNS)
		return 0;
	struct uidpool_cfg cfg;
	int r = uidpool_config(ctx->state_dir, &cfg, err);
	if (r < 0)
		return r;
	/* ABOX_USERNS=on|off: this process's default over userns.json's */
	const char *env = getenv("ABOX_USERNS");
	bool on = env && !strcmp(env, "on") ? true : env && !strcmp(env, "off") ? false : cfg.default_on;
	if (!(flags & ABOX_SANDBOX_USERNS) && !on)
		return 0;
	uint32_t b;
	if ((r = uidpool_take(ctx->runtime_dir, &cfg, id, &b, err)) < 0)
		return r;
	if ((r = userns_begin(b, j, err)) < 0) {
		uidpool_give(ctx->runtime_dir, b, id);
		return r;
	}
	backend_log(ctx, ABOX_LOG_DEBUG, "create %s: user namespace on host ids %u-%u", id, b,
		    b + UIDPOOL_RANGE - 1);
	return 0;
}

int local_userns_finish(abox_ctx *ctx, struct userns_job *j, abox_error *err)
{
	if (j->pid <= 0)
		return -1;
	int fd = userns_finish(j, err);
	if (fd < 0)
		return abox_error_prefix(err,
					 "a host that cannot make user namespaces needs --userns off or "
					 "\"default\": \"off\" in %s/userns.json",
					 ctx->state_dir);
	return fd;
}

int local_userns_no_checkpoint(const char *what, const abox_sandbox *sb, abox_error *err)
{
	return abox_error_setx(
		err, EOPNOTSUPP,
		"%s %s: memory checkpoints of sandboxes with a user namespace are not supported yet "
		"(create it with --userns off for those); a pause keeps its memory frozen in place",
		what, sb->id);
}
