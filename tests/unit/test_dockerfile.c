/* Unit tests of the Dockerfile parser (src/lib/build/dockerfile.c):
 * continuations, comments and directives, flags, JSON and shell forms,
 * word splitting and variable expansion as docker does them, and what is
 * refused by name. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "build/dockerfile.h"

static struct dockerfile parse_ok(const char *text)
{
	struct dockerfile d;
	char err[512] = "";
	int r = dockerfile_parse(text, strlen(text), &d, err, sizeof(err));
	cr_assert_eq(r, 0, "%s", err);
	return d;
}

static void refused(const char *text, const char *why)
{
	struct dockerfile d;
	char err[512] = "";
	cr_assert_eq(dockerfile_parse(text, strlen(text), &d, err, sizeof(err)), -1, "accepted: %s", text);
	cr_assert(strstr(err, why), "'%s' does not say '%s'", err, why);
}

Test(dockerfile, instructions_lines_flags_and_forms)
{
	struct dockerfile d = parse_ok("# syntax=docker/dockerfile:1\n"
				       "# a comment\n"
				       "ARG V=1\n"
				       "from base AS b\n"
				       "RUN echo one \\\n"
				       "  # a comment inside\n"
				       "  two\n"
				       "COPY --from=b --chown=1:2 a b /c/\n"
				       "CMD [\"/bin/x\", \"-y\"]\n"
				       "ENTRYPOINT [not json\n");
	cr_assert_eq(d.n, 6);
	cr_assert_eq(d.v[0].kind, DF_ARG);
	cr_assert_eq(d.v[1].kind, DF_FROM);
	cr_assert_eq(d.v[1].line, 4);
	cr_assert_eq(d.v[2].kind, DF_RUN);
	cr_assert_eq(d.v[2].line, 5);
	cr_assert_str_eq(d.v[2].rest, "echo one    two");
	cr_assert_str_eq(df_flag(d.v[3].flags, "from"), "b");
	cr_assert_str_eq(df_flag(d.v[3].flags, "chown"), "1:2");
	cr_assert_null(df_flag(d.v[3].flags, "chmod"));
	cr_assert_str_eq(d.v[3].rest, "a b /c/");
	cr_assert_not_null(d.v[4].json);
	cr_assert_str_eq(d.v[4].json[1], "-y");
	cr_assert_null(d.v[5].json, "invalid JSON is the shell form, as in docker");
	dockerfile_free(&d);
	d = parse_ok("# escape=`\nFROM x\nRUN a `\n b\n");
	cr_assert_str_eq(d.v[1].rest, "a   b");
	dockerfile_free(&d);
}

Test(dockerfile, refused_by_name)
{
	refused("FROM x\nHEALTHCHECK CMD true\n", "HEALTHCHECK is not supported");
	refused("FROM x\nvolume /v\n", "VOLUME is not supported");
	refused("FROM x\nMAINTAINER me\n", "MAINTAINER is not supported");
	refused("FROM x\nRUN --mount=type=cache,target=/c make\n", "RUN --mount is not supported");
	refused("FROM x\nRUN --network=host curl x\n", "RUN --network is not supported");
	refused("FROM x\nCOPY --exclude=*.md . /\n", "COPY --exclude is not supported");
	refused("FROM x\nRUN <<EOF\necho\nEOF\n", "heredocs");
	refused("FROM x\nBOGUS y\n", "unknown instruction 'BOGUS'");
	refused("RUN x\n", "starts with FROM");
	refused("# syntax=example/frontend\nFROM x\n", "syntax");
	refused("", "no instructions");
	refused("FROM x\nCOPY\n", "needs arguments");
	refused("FROM x\nSHELL /bin/bash -c\n", "JSON array");
	char nul[] = "FROM x\0\n";
	struct dockerfile d;
	char err[256];
	cr_assert_eq(dockerfile_parse(nul, sizeof(nul) - 1, &d, err, sizeof(err)), -1);
}

static const char *vars(const char *name, void *ud)
{
	(void)ud;
	if (!strcmp(name, "A"))
		return "alpha";
	if (!strcmp(name, "EMPTY"))
		return "";
	return NULL;
}

static void expands(const char *in, const char *want)
{
	char err[256] = "";
	char *x = df_expand(in, vars, NULL, err, sizeof(err));
	cr_assert_not_null(x, "%s: %s", in, err);
	cr_assert_str_eq(x, want, "%s", in);
	free(x);
}

Test(dockerfile, expansion_as_docker_does_it)
{
	expands("$A ${A} x$A-y", "alpha alpha xalpha-y");
	expands("${NOPE:-dflt} ${A:-dflt} ${EMPTY:-e}", "dflt alpha e");
	expands("${A:+set} ${NOPE:+set}.", "set .");
	expands("'$A' \"$A\" \\$A", "'$A' \"alpha\" $A");
	expands("${NOPE:-${A}}", "alpha");
	expands("$ $1 cost", "$ $1 cost");
	char err[256];
	cr_assert_null(df_expand("${A", vars, NULL, err, sizeof(err)));
	cr_assert_null(df_expand("${A?x}", vars, NULL, err, sizeof(err)));
}

Test(dockerfile, words_split_like_a_shell)
{
	char **w = df_words("a \"b c\" 'd e' f\\ g \"h\\\"i\"");
	cr_assert_not_null(w);
	cr_assert_eq(strv_length(w), 5);
	cr_assert_str_eq(w[1], "b c");
	cr_assert_str_eq(w[2], "d e");
	cr_assert_str_eq(w[3], "f g");
	cr_assert_str_eq(w[4], "h\"i");
	strv_free(w);
	cr_assert_null(df_words("a \"unterminated"));
}
