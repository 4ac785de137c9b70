/* api/template.c — the public template calls: checks, then the
 * context's backend. Runs in the caller's process. */
#include "api/api.h"
#include "base/imageref.h"

int abox_template_build(abox_ctx *ctx, const char *name, const char *recipe, const abox_template_opts *opts,
			abox_error *err)
{
	API_NEED(ctx, "template build");
	return API_CALL(ctx, template_build, "template build", ctx, name, recipe, opts, err);
}

int abox_template_import_ex(abox_ctx *ctx, const char *name, const char *source, const abox_template_opts *opts,
			    abox_error *err)
{
	API_NEED(ctx, "template import");
	return API_CALL(ctx, template_import, "template import", ctx, name, source, opts, err);
}

int abox_template_import(abox_ctx *ctx, const char *name, const char *source, abox_error *err)
{
	return abox_template_import_ex(ctx, name, source, NULL, err);
}

int abox_template_build_dockerfile(abox_ctx *ctx, const char *name, const char *dockerfile,
				   const abox_template_opts *opts, const abox_dockerfile_opts *df,
				   abox_error *err)
{
	API_NEED(ctx, "template build");
	return API_CALL(ctx, template_dockerfile, "template build", ctx, name, dockerfile, opts, df, err);
}

int abox_template_pull(abox_ctx *ctx, const char *name, const char *ref, const abox_template_opts *opts,
		       const abox_pull_opts *pull, abox_error *err)
{
	API_NEED(ctx, "template pull");
	return API_CALL(ctx, template_pull, "template pull", ctx, name, ref, opts, pull, err);
}

int abox_template_ref_name(const char *ref, char *out, size_t outlen, abox_error *err)
{
	struct image_ref r;
	char why[512];
	if (!out || outlen == 0)
		return abox_error_setx(err, EINVAL, "template ref name: no room for the name");
	if (ref_parse(ref, &r, why, sizeof(why)) < 0)
		return abox_error_setx(err, EINVAL, "%s", why);
	ref_template_name(&r, out, outlen);
	return 0;
}

int abox_template_inspect(abox_ctx *ctx, const char *name, abox_template_info *out, abox_error *err)
{
	API_NEED(ctx, "template inspect");
	return API_CALL(ctx, template_inspect, "template inspect", ctx, name, out, err);
}

int abox_template_list(abox_ctx *ctx, char ***names, abox_error *err)
{
	API_NEED(ctx, "template list");
	return API_CALL(ctx, template_list, "template list", ctx, names, err);
}

int abox_template_remove(abox_ctx *ctx, const char *name, abox_error *err)
{
	API_NEED(ctx, "template remove");
	return API_CALL(ctx, template_remove, "template remove", ctx, name, err);
}

int abox_template_copy(abox_ctx *ctx, const char *src, const char *dst, abox_error *err)
{
	API_NEED(ctx, "template copy");
	if (!src || !dst)
		return abox_error_setx(err, EINVAL, "template copy: no source or destination name");
	return API_CALL(ctx, template_copy, "template copy", ctx, src, dst, err);
}
