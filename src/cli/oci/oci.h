/* oci — `abox oci`, the OCI runtime command line (runc's contract, which
 * containerd's runc shim and go-runc speak): global options, the log
 * runc's callers read, and the verbs. Reached as `abox oci ...`, or as a
 * program named abox-oci or runc (a symlink to abox), so containerd's
 * BinaryName can point at it. */
#ifndef ABOX_CLI_OCI_H
#define ABOX_CLI_OCI_H

#include <stdbool.h>

struct oci_globals {
	const char *root; /* --root: where containers' state lives */
	const char *log_path; /* --log (NULL: stderr) */
	bool log_json; /* --log-format json */
	bool debug, systemd_cgroup;
	const char *rootless; /* --rootless true|false|auto */
};

extern struct oci_globals oci_g;

/* An error, one line to the log (--log, or stderr): JSON {"level","msg",
 * "time"} with --log-format json, else text; when the log is a file, said
 * on stderr too (what runc does: its callers read either). Returns 1. */
int oci_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The verbs (argv[0] is the verb). */
int oci_spec(int argc, char **argv);

/* `abox oci ARGS` (argv[0] is "oci", "abox-oci" or "runc"). */
int cmd_oci(int argc, char **argv);

#endif
