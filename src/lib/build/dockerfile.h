/* dockerfile — the Dockerfile subset `abox template build -f` runs, as
 * text: instructions with their line, flags and arguments (shell or
 * JSON form), words split as docker splits them, and variables expanded
 * as docker expands them ($V, ${V}, ${V:-default}, ${V:+alternate}).
 * Pure parsing of a file the user (or a Template SDK client) wrote: the
 * builder (build.c) decides what each instruction does.
 * Runs in the CLI/daemon. */
#ifndef ABOX_BUILD_DOCKERFILE_H
#define ABOX_BUILD_DOCKERFILE_H

#include <stdbool.h>
#include <stddef.h>

#define DF_MAX_BYTES (1u << 20) /* a Dockerfile larger than this is refused */
#define DF_MAX_INSTRUCTIONS 1000

enum df_kind {
	DF_FROM,
	DF_RUN,
	DF_COPY,
	DF_ADD,
	DF_ENV,
	DF_ARG,
	DF_WORKDIR,
	DF_USER,
	DF_LABEL,
	DF_CMD,
	DF_ENTRYPOINT,
	DF_EXPOSE,
	DF_SHELL,
};

struct df_inst {
	enum df_kind kind;
	unsigned line; /* where it starts (1-based) */
	char *text; /* as written, continuation lines joined (for messages and cache keys) */
	char **flags; /* leading --name[=value] flags, NULL-terminated */
	char *rest; /* what follows the flags */
	char **json; /* rest as a JSON array of strings (exec form), or NULL */
};

struct dockerfile {
	struct df_inst *v;
	size_t n;
};

/* Parses text. Unknown and unsupported instructions (HEALTHCHECK,
 * ONBUILD, VOLUME, STOPSIGNAL, MAINTAINER, heredocs, RUN --mount ...)
 * are refused by name with their line. 0, or -1 with the reason in err. */
int dockerfile_parse(const char *text, size_t len, struct dockerfile *out, char *err, size_t errlen);
void dockerfile_free(struct dockerfile *d);
const char *df_kind_name(enum df_kind k);

/* The value of a variable, or NULL when unset. */
typedef const char *(*df_lookup_fn)(const char *name, void *ud);
/* s with variables expanded (malloc'd), or NULL with the reason in err
 * (an unterminated ${, a bad name). Inside '...' nothing is expanded;
 * \$ is a literal $. Quotes are kept (df_words removes them). */
char *df_expand(const char *s, df_lookup_fn lookup, void *ud, char *err, size_t errlen);
/* s split into words at blanks outside quotes, quotes removed, \ escapes
 * the next character; NULL-terminated, or NULL for an unterminated
 * quote. */
char **df_words(const char *s);
/* The value of flag name ("--from=x" -> "x") among flags, "" for a flag
 * without a value, NULL when absent. */
const char *df_flag(char *const *flags, const char *name);

#endif
