/* abox snapshot ID / abox snapshots ls|rm: immutable copies of a
 * sandbox's files, to create sandboxes from (`abox create --from`). */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "cli.h"

static json_object *to_json(const abox_snapshot_info *s)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_string(s->id));
	json_object_object_add(o, "name", s->name[0] ? json_object_new_string(s->name) : NULL);
	json_object_object_add(o, "parent", s->parent[0] ? json_object_new_string(s->parent) : NULL);
	json_object_object_add(o, "template", json_object_new_string(s->template_name));
	json_object_object_add(o, "createdMs", json_object_new_int64(s->created_ms));
	json_object_object_add(o, "bytes", json_object_new_uint64(s->bytes));
	json_object_object_add(o, "depth", json_object_new_int((int)s->depth));
	json_object_object_add(o, "memory", json_object_new_boolean(s->memory));
	return o;
}

/* An argument of snapshot or fork that is none of its options: --help
 * (or -h), which prints help and returns 1; the one operand, the
 * sandbox's ID (0); else a mistake said with the verb's usage (-1). */
static int other_arg(const char *verb, const char *usage, const char *help, const char *arg, const char **id)
{
	if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
		fputs(help, stdout);
		return 1;
	}
	if (arg[0] == '-' || *id) {
		cli_err("%s: unexpected argument '%s' (usage: %s)", verb, arg, usage);
		return -1;
	}
	*id = arg;
	return 0;
}

/* After the arguments: the sandbox they named, opened; none named is a
 * mistake said with full_usage. */
static int open_named(const char *verb, const char *full_usage, const char *id, struct cli_sandbox *s)
{
	if (!id) {
		cli_err("%s: usage: %s", verb, full_usage);
		return EXIT_ABOX;
	}
	return cli_open(id, s);
}

static const char snapshot_help[] =
	"usage: abox snapshot [--name NAME] [--memory] [--json] ID\n\n"
	"Copies the files of sandbox ID into a new snapshot and prints its id. The\n"
	"sandbox is frozen during the copy, which costs in proportion to what it\n"
	"changed. `abox create --from SNAPSHOT` starts sandboxes from it.\n"
	"--memory also checkpoints its processes (with the checkpointer, CRIU):\n"
	"sandboxes created from the snapshot get them back, running on from\n"
	"there. ID runs on.\n";

static const char fork_help[] =
	"usage: abox fork [--count N] [--timeout SECS] [--memory] [--json] ID\n\n"
	"Makes N (1-64, default 1) new sandboxes with the files ID has now: one\n"
	"snapshot (a brief freeze; ID keeps running), then N creates with ID's\n"
	"limits, seccomp policy, environment and metadata. Prints one line per fork:\n"
	"its id, or `error: REASON`. --timeout defaults to what is left of ID's.\n"
	"--memory: every fork also gets ID's processes, restored from one\n"
	"checkpoint (the checkpointer, CRIU), each running on its own.\n";

int cmd_snapshot(int argc, char **argv)
{
	const char *name = NULL, *id = NULL;
	bool json = false;
	uint32_t sflags = 0;
	int k = 0;
	for (int i = 1; i < argc && k == 0; i++) {
		if (strcmp(argv[i], "--name") == 0 && i + 1 < argc)
			name = argv[++i];
		else if (strcmp(argv[i], "--memory") == 0)
			sflags |= ABOX_SNAPSHOT_MEMORY;
		else if (strcmp(argv[i], "--json") == 0)
			json = true;
		else
			k = other_arg("snapshot", "abox snapshot [--name NAME] ID", snapshot_help, argv[i],
				      &id);
	}
	if (k != 0)
		return k < 0 ? EXIT_ABOX : 0;
	_cleanup_(cli_close) struct cli_sandbox s = { 0 };
	int rc = open_named("snapshot", "abox snapshot [--name NAME] [--json] ID", id, &s);
	if (rc)
		return rc;
	abox_error err = ABOX_ERROR_INIT;
	abox_snapshot_info in = { .version = ABOX_SNAPSHOT_INFO_VERSION };
	if (abox_sandbox_snapshot_flags(s.sb, name, sflags, &in, &err) < 0)
		return cli_fail(&err);
	if (json)
		cli_print_json(to_json(&in), JSON_C_TO_STRING_PLAIN);
	else
		printf("%s\n", in.id);
	return 0;
}

static int list(abox_ctx *ctx, bool json)
{
	abox_error err = ABOX_ERROR_INIT;
	abox_snapshot_info *v;
	size_t n;
	if (abox_snapshot_list(ctx, &v, &n, &err) < 0)
		return cli_fail(&err);
	if (json) {
		json_object *a = json_object_new_array();
		for (size_t i = 0; i < n; i++)
			json_object_array_add(a, to_json(&v[i]));
		cli_print_json(a, JSON_C_TO_STRING_PLAIN);
	} else {
		printf("%-20s  %-16s  %-20s  %-8s  %-10s  %-6s  %s\n", "ID", "NAME", "PARENT", "TEMPLATE", "SIZE",
		       "MEMORY", "CREATED");
		for (size_t i = 0; i < n; i++) {
			char t[32], sz[32];
			cli_utc(v[i].created_ms, t, sizeof(t));
			snprintf(sz, sizeof(sz), "%llu", (unsigned long long)v[i].bytes);
			printf("%-20s  %-16s  %-20s  %-8s  %-10s  %-6s  %s\n", v[i].id, v[i].name[0] ? v[i].name : "-",
			       v[i].parent[0] ? v[i].parent : "-", v[i].template_name, sz, v[i].memory ? "yes" : "no", t);
		}
	}
	free(v);
	return 0;
}

int cmd_snapshots(int argc, char **argv)
{
	const char *op = argc > 1 ? argv[1] : NULL;
	if (!op || strcmp(op, "--help") == 0 || strcmp(op, "-h") == 0 ||
	    (strcmp(op, "ls") != 0 && strcmp(op, "rm") != 0)) {
		fprintf(op && op[0] == '-' ? stdout : stderr,
			"usage: abox snapshots ls [--json]\n"
			"       abox snapshots rm SNAPSHOT...   (refused while a sandbox or snapshot uses it)\n");
		return op && op[0] == '-' ? 0 : EXIT_ABOX;
	}
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	int rc = 0;
	if (strcmp(op, "ls") == 0) {
		rc = list(ctx, argc > 2 && strcmp(argv[2], "--json") == 0);
	} else if (argc < 3) {
		cli_err("snapshots rm: name at least one snapshot");
		rc = EXIT_ABOX;
	} else {
		rc = cli_remove_each(ctx, argv + 2, argc - 2, abox_snapshot_remove);
	}
	abox_ctx_free(ctx);
	return rc;
}

int cmd_fork(int argc, char **argv)
{
	const char *id = NULL;
	uint64_t count = 1;
	uint32_t timeout_ms = 0, fflags = 0;
	bool json = false;
	int k = 0;
	for (int i = 1; i < argc && k == 0; i++) {
		if (strcmp(argv[i], "--memory") == 0) {
			fflags |= ABOX_FORK_MEMORY;
		} else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
			if (cli_opt_count("fork", "--count", argv[++i], &count) < 0)
				return EXIT_ABOX;
		} else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
			if (cli_opt_secs("fork", "--timeout", argv[++i], &timeout_ms) < 0)
				return EXIT_ABOX;
		} else if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else {
			k = other_arg("fork", "abox fork [--count N] ID", fork_help, argv[i], &id);
		}
	}
	if (k != 0)
		return k < 0 ? EXIT_ABOX : 0;
	if (id && (count < 1 || count > 64)) {
		cli_err("fork: --count must be between 1 and 64");
		return EXIT_ABOX;
	}
	_cleanup_(cli_close) struct cli_sandbox s = { 0 };
	int rc = open_named("fork", "abox fork [--count N] [--timeout SECS] [--json] ID", id, &s);
	if (rc)
		return rc;
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox *forks[64];
	abox_error errs[64];
	int made = abox_sandbox_fork_flags(s.sb, (unsigned)count, timeout_ms, fflags, forks, errs, &err);
	if (made < 0)
		return cli_fail(&err);
	json_object *a = json ? json_object_new_array() : NULL;
	for (unsigned i = 0; i < count; i++) {
		if (a) {
			json_object *o = json_object_new_object();
			if (forks[i])
				json_object_object_add(o, "id",
						       json_object_new_string(abox_sandbox_id(forks[i])));
			else
				json_object_object_add(o, "error", json_object_new_string(errs[i].msg));
			json_object_array_add(a, o);
		} else if (forks[i]) {
			printf("%s\n", abox_sandbox_id(forks[i]));
		} else {
			printf("error: %s\n", errs[i].msg);
		}
		if (forks[i])
			abox_sandbox_free(forks[i]);
	}
	if (a)
		cli_print_json(a, JSON_C_TO_STRING_PLAIN);
	return (unsigned)made < count ? EXIT_ABOX : 0;
}
