/* libFuzzer: the body of E2B's POST /v2/templates/{id}/builds/{build} as
 * aboxd turns it into a Dockerfile (src/daemon/tbuild_steps.c). Must
 * never crash or leak; whatever Dockerfile it makes has one instruction
 * per line, each one the builder runs, and it parses (a client value
 * that could start an instruction of its own would fail here). */
#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "build/dockerfile.h"
#include "tbuild_steps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	json_object *o = json_tokener_parse(text);
	free(text);
	if (!o)
		return 0;
	struct tb_plan p;
	char err[512];
	if (tbuild_plan(o, "/nonexistent-uploads", &p, err, sizeof(err)) == 0) {
		struct dockerfile d;
		if (dockerfile_parse(p.dockerfile, strlen(p.dockerfile), &d, err, sizeof(err)) == 0) {
			/* one instruction per line: as many as the plan's lines */
			if (d.n != p.nlines)
				abort();
			dockerfile_free(&d);
		} else if (!strstr(err, "syntax") && !strstr(err, "heredoc")) {
			abort();
		}
		tbuild_plan_free(&p);
	}
	json_object_put(o);
	return 0;
}
