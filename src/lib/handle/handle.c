/* handle/handle.c — what both backends and the public API share about
 * the objects behind the handles: the context's log, the end of a
 * process handle, the answer for a call a backend does not offer. Kept below api/ and the backends, so a
 * backend never calls up into the public API's files (api/ calls down through the backend table; local/ and
 * remote/ call this). Runs in the caller's process. */
#include <stdio.h>

#include "backend.h"

void backend_log(abox_ctx *ctx, abox_log_level lvl, const char *fmt, ...)
{
	if (!ctx || !ctx->log || (ctx->log_max && lvl > ctx->log_max))
		return;
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ctx->log(lvl, buf, ctx->log_userdata);
}

void proc_handle_free(abox_proc *p)
{
	if (!p)
		return;
	if (p->sb && p->sb->ctx->be->proc_free)
		p->sb->ctx->be->proc_free(p);
	proto_outq_free(&p->stdin_q);
	truncate_free(p);
	if (p->sb && p->sb->active == p)
		p->sb->active = NULL;
	free(p);
}

int backend_unsupported(const abox_ctx *ctx, const char *what, abox_error *err)
{
	return abox_error_setx(err, EOPNOTSUPP, "%s: not available through %s", what, ctx->be->name);
}
