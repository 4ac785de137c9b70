/* remote/ops.c — the remote backend's table, and the context it opens:
 * the daemon's address, its key and the curl handle of the caller's
 * thread. Entries the remote API does not carry stay NULL and are refused
 * by name (api/). Not here: what each entry does (sandbox.c, query.c,
 * snapshot.c, proc.c, files.c). Runs in the caller's process. */
#include <errno.h>
#include <string.h>

#include "remote/remote.h"

/* Frees rm and what it holds (any part may be missing: a half-made one). */
static void remote_free(struct remote *rm)
{
	if (!rm)
		return;
	if (rm->easy)
		curl_easy_cleanup(rm->easy);
	free(rm->base);
	free(rm->unix_path);
	free(rm->key);
	free(rm);
}

static int r_open(abox_ctx *ctx, const char *url, const char *key, abox_error *err)
{
	static bool curl_ready;
	if (!curl_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
			return abox_error_setx(err, EIO, "remote: libcurl failed to initialise");
		curl_ready = true;
	}
	struct remote *rm = calloc(1, sizeof(*rm));
	if (!rm)
		return abox_error_set(err, ENOMEM, "remote");
	if (!strncmp(url, "unix:", 5)) {
		rm->unix_path = strdup(url + 5);
		rm->base = strdup("http://localhost");
	} else if (!strncmp(url, "http://", 7) || !strncmp(url, "https://", 8)) {
		rm->base = strdup(url);
		size_t n = rm->base ? strlen(rm->base) : 0;
		while (n > 8 && rm->base[n - 1] == '/')
			rm->base[--n] = '\0';
	} else {
		free(rm);
		return abox_error_setx(err, EINVAL, "remote URL '%s': want http://HOST:PORT or unix:/PATH", url);
	}
	rm->key = key && *key ? strdup(key) : NULL;
	rm->easy = curl_easy_init();
	if (!rm->base || !rm->easy || (key && *key && !rm->key)) {
		remote_free(rm);
		return abox_error_set(err, ENOMEM, "remote");
	}
	ctx->remote = rm;
	return 0;
}

static void r_close(abox_ctx *ctx)
{
	remote_free(ctx->remote);
	ctx->remote = NULL;
}

/* The daemon collects, reaps and keeps spare disks for its own
 * sandboxes: there is nothing for its client to do. */
static int r_gc(abox_ctx *ctx, bool maybe, unsigned *removed, abox_error *err)
{
	(void)ctx, (void)maybe, (void)err;
	if (removed)
		*removed = 0;
	return 0;
}

static int r_reap(abox_ctx *ctx, uint32_t steps, unsigned *paused, int64_t *next, abox_error *err)
{
	(void)ctx, (void)steps, (void)paused, (void)next, (void)err;
	return 0;
}

static int r_spare_disks(abox_ctx *ctx, uint64_t bytes, unsigned count, abox_error *err)
{
	(void)ctx, (void)bytes, (void)count, (void)err;
	return 0;
}

static const struct abox_backend_ops remote_ops_table = {
	.name = "a remote abox",
	.open = r_open,
	.close = r_close,
	.gc = r_gc,
	.reap = r_reap,
	.spare_disks = r_spare_disks,
	.create = remote_create,
	.connect = remote_connect,
	.info = remote_info,
	.list = remote_list,
	.query = remote_query,
	.kill = remote_kill,
	.release = remote_release,
	.set_timeout = remote_set_timeout,
	.pause = remote_pause,
	.resume = remote_resume,
	.metrics = remote_metrics,
	.snapshot = remote_snapshot,
	.fork = remote_fork,
	.snapshot_list = remote_snapshot_list,
	.snapshot_remove = remote_snapshot_remove,
	.proc_start = remote_proc_start,
	.proc_attach = remote_proc_attach,
	.proc_list = remote_proc_list,
	.proc_input = remote_proc_input,
	.proc_signal = remote_proc_signal,
	.proc_resize = remote_proc_resize,
	.proc_free = remote_proc_free,
	.truncate_finish = remote_truncate_finish,
	.file_read = remote_file_read,
	.file_write = remote_file_write,
	.file_stat = remote_file_stat,
	.file_list = remote_file_list,
	.file_mkdir = remote_file_mkdir,
	.file_move = remote_file_move,
	.file_remove = remote_file_remove,
	.watch_start = remote_watch_start,
	.watch_stop = remote_watch_stop,
};

const struct abox_backend_ops *remote_backend(void)
{
	return &remote_ops_table;
}
