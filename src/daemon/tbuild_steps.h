/* tbuild_steps — E2B's template build steps (the body of POST
 * /v2/templates/{id}/builds/{build}) as a Dockerfile for abox's builder:
 * fromImage/fromTemplate, RUN (with its user), ENV, WORKDIR, USER and
 * COPY of uploaded files. Pure; runs in aboxd and its fuzz target. */
#ifndef ABOX_DAEMON_TBUILD_STEPS_H
#define ABOX_DAEMON_TBUILD_STEPS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct tb_plan {
	char *dockerfile;
	char **archives; /* "HASH=PATH" of the uploads COPY steps use */
	unsigned *line_step; /* [line] -> step (1-based; 0: FROM, "base") */
	size_t nlines;
	bool force; /* the build asked for no cache at all (a forced step: from it on) */
	char *start, *ready; /* startCmd, readyCmd */
	char *user, *pass; /* fromImageRegistry */
};

/* 0, or -1 with the reason (naming the step) in err. uploads: the
 * owner's upload folder (COPY's files must be there). */
int tbuild_plan(json_object *body, const char *uploads, struct tb_plan *p, char *err, size_t errlen);
void tbuild_plan_free(struct tb_plan *p);

#endif
