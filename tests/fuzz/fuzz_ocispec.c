/* libFuzzer: an OCI bundle's config.json as abox's OCI runtime mode reads
 * it (src/lib/oci/spec.c), and the same bytes as an exec's process file
 * (`abox oci exec --process`). Must never crash, leak or read out of
 * bounds; whatever it accepts has a root path, mount destinations that
 * are absolute without '..', and a process that names a program with an
 * absolute cwd. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "oci/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct oci_process p;
	abox_error perr = ABOX_ERROR_INIT;
	if (oci_process_parse((const char *)data, size, "fuzz", &p, &perr) < 0) {
		if (!perr.msg[0])
			abort();
	} else {
		if (!p.args || !p.args[0] || !p.cwd || p.cwd[0] != '/')
			abort();
		oci_process_free(&p);
	}
	struct oci_spec s;
	abox_error err = ABOX_ERROR_INIT;
	if (oci_spec_parse((const char *)data, size, "fuzz", &s, &err) < 0) {
		if (!err.msg[0])
			abort(); /* a refusal always says why */
		return 0;
	}
	if (!s.root_path || !s.root_path[0] || (s.process.present && (!s.process.args || !s.process.args[0])))
		abort();
	for (size_t i = 0; i < s.nmounts; i++)
		if (s.mounts[i].destination[0] != '/' || strstr(s.mounts[i].destination, "/../"))
			abort();
	oci_spec_free(&s);
	return 0;
}
