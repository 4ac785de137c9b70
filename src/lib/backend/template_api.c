/* Templates through the library. */
#include "backend/backend.h"
#include "layer/copy.h"

int abox_template_import(abox_ctx *ctx, const char *name, const char *dir, abox_error *err)
{
	struct layer_copy_stats st;
	int r = template_import_dir(ctx->state_dir, name, dir, &st, err);
	if (r >= 0)
		backend_log(ctx, ABOX_LOG_DEBUG, "template %s imported: %llu entries, %llu bytes, %llu devices left out",
			    name, (unsigned long long)st.entries, (unsigned long long)st.data_bytes,
			    (unsigned long long)st.dropped);
	return r;
}

int abox_template_list(abox_ctx *ctx, char ***names, abox_error *err)
{
	return template_list(ctx->state_dir, names, err);
}

int abox_template_remove(abox_ctx *ctx, const char *name, abox_error *err)
{
	return template_remove(ctx->state_dir, name, err);
}
