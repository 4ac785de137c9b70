/* local/identity.c — who a sandbox is on the host: its own user
 * namespace, when asked for or the state folder's default (userns.json),
 * on a range of host ids taken from the pool (store/uidpool.h) and
 * recorded (in the runtime folder) under its id before anything runs with them.
 * Runs in the CLI/daemon. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "local/local.h"
#include "store/uidpool.h"

static int probe(const char *state, abox_error *why)
{
	if (!userns_supported())
		return abox_error_setx(why, EOPNOTSUPP, "this kernel cannot make user namespaces");
	int r = userns_idmap_probe(state, why);
	return r < 0 ? r : userns_idmap_probe("/usr", why);
}

int local_userns_probe(abox_ctx *ctx, bool fresh, abox_error *why)
{
	/* the state folder may not exist yet: its nearest existing parent
	 * is the filesystem it will be made on */
	char where[4096];
	safe_snprintf(where, sizeof(where), "%s", ctx->state_dir);
	struct stat sd, su;
	for (char *slash; stat(where, &sd) < 0 && (slash = strrchr(where, '/')) && slash != where;)
		*slash = '\0';
	if (stat(where, &sd) < 0 || stat("/usr", &su) < 0)
		return probe(where, why);
	/* A mount's abilities do not change while it is mounted, and the
	 * runtime folder is emptied by a reboot (a new kernel): one probe
	 * per boot and pair of filesystems that can, a stat after that. */
	char memo[4200];
	safe_snprintf(memo, sizeof(memo), "%s/userns-probe-%llx-%llx", ctx->runtime_dir,
		      (unsigned long long)sd.st_dev, (unsigned long long)su.st_dev);
	/* only a success is kept: a failure may pass (a clone refused for
	 * want of memory, a sysctl changed), and is probed again */
	if (!fresh && access(memo, F_OK) == 0)
		return 0;
	abox_error e = ABOX_ERROR_INIT;
	int r = probe(where, &e);
	char tmp[4300];
	safe_snprintf(tmp, sizeof(tmp), "%s.%d", memo, (int)getpid());
	/* best effort: without a runtime folder yet, the next create probes
	 * again */
	int fd = r < 0 ? -1 : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd >= 0) {
		bool done = write_full(fd, "ok", 2) == 0;
		close(fd);
		if (!done || rename(tmp, memo) < 0)
			unlink(tmp);
	}
	if (r < 0 && why)
		*why = e;
	return r;
}

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
	/* On by default but impossible here: the sandbox runs without one
	 * (what --userns off gives) rather than not at all, and says so.
	 * Asked for by name (--userns on), it fails instead, naming why. */
	abox_error why = ABOX_ERROR_INIT;
	if (!(flags & ABOX_SANDBOX_USERNS) && local_userns_probe(ctx, false, &why) < 0) {
		backend_log(ctx, ABOX_LOG_WARNING,
			    "sandbox %s has no user namespace: %s; its root is host root with fewer "
			    "capabilities and its user host uid 1000 (see abox doctor; \"default\": \"off\" "
			    "in %s/userns.json makes that the rule and ends this warning)",
			    id, why.msg, ctx->state_dir);
		return 0;
	}
	uint32_t b;
	if ((r = uidpool_take(ctx->runtime_dir, &cfg, id, &b, err)) < 0)
		return r;
	if ((r = userns_begin(b, cfg.limits, j, err)) < 0) {
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
	if (fd < 0 && j->limit_failed < 0)
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
