/* abox create / exec / kill / ls / info — long-lived sandboxes. */
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "cli.h"

int cmd_create(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "template", required_argument, NULL, 't' },
		{ "metadata", required_argument, NULL, 'm' },
		{ "env", required_argument, NULL, 'e' },
		{ "memory", required_argument, NULL, 'M' },
		{ "disk", required_argument, NULL, 'D' },
		{ "layer", required_argument, NULL, 'L' },
		{ "pids", required_argument, NULL, 'P' },
		{ "cpus", required_argument, NULL, 'C' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "seccomp", required_argument, NULL, 'S' },
		{ "from", required_argument, NULL, 'F' },
		{ "auto-pause", no_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	abox_sandbox_opts so = ABOX_SANDBOX_OPTS_INIT;
	_cleanup_free_ const char **meta = calloc((size_t)argc + 1, sizeof(char *));
	_cleanup_free_ const char **env = calloc((size_t)argc + 1, sizeof(char *));
	size_t nmeta = 0, nenv = 0;
	int c;
	if (!meta || !env)
		return EXIT_ABOX;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+t:m:e:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			if (cli_opt_kv("create", "--env", optarg) < 0)
				return EXIT_ABOX;
			env[nenv++] = optarg;
			break;
		case 't': so.template_name = optarg; break;
		case 'm':
			if (cli_opt_kv("create", "--metadata", optarg) < 0)
				return EXIT_ABOX;
			meta[nmeta++] = optarg;
			break;
		case 'M':
			if (cli_opt_size("create", "--memory", optarg, &so.memory_bytes) < 0)
				return EXIT_ABOX;
			break;
		case 'D':
			if (cli_opt_size("create", "--disk", optarg, &so.disk_bytes) < 0)
				return EXIT_ABOX;
			break;
		case 'L':
			if (cli_opt_layer("create", optarg, &so.flags) < 0)
				return EXIT_ABOX;
			break;
		case 'P':
			if (cli_opt_count("create", "--pids", optarg, &so.pids) < 0)
				return EXIT_ABOX;
			break;
		case 'C':
			if (cli_opt_cpus("create", optarg, &so.cpu_millis) < 0)
				return EXIT_ABOX;
			break;
		case 'T':
			if (cli_opt_secs("create", "--timeout", optarg, &so.timeout_ms) < 0)
				return EXIT_ABOX;
			break;
		case 'S': so.seccomp_policy = optarg; break;
		case 'F': so.snapshot = optarg; break;
		case 'A': so.flags |= ABOX_SANDBOX_AUTO_PAUSE; break;
		case 'h':
			printf("usage: abox create [--template NAME | --from SNAPSHOT] [--metadata K=V]... [-e K=V]...\n"
			       "                   [--memory SIZE] [--disk SIZE] [--pids N] [--cpus N] [--timeout SECS]\n"
			       "                   [--auto-pause] [--seccomp FILE] [--layer disk|tmpfs]\n\n"
			       "Creates a long-lived sandbox and prints its id. It runs until `abox kill ID`\n"
			       "or its timeout, whether or not any abox process is running. --from starts it\n"
			       "with the files of a snapshot (id or name) on that snapshot's template.\n"
			       "--auto-pause: at its timeout it is paused with its memory (to disk when the\n"
			       "checkpointer works), not killed; aboxd or any `abox gc` does it.\n"
			       "--layer: its files on a disk of its own of --disk's size (the default: they\n"
			       "never count as its memory), or in memory ('tmpfs').\n");
			return 0;
		default:
			return EXIT_ABOX;
		}
	}
	if (optind < argc) {
		cli_err("create: unexpected argument '%s'", argv[optind]);
		return EXIT_ABOX;
	}
	so.metadata = nmeta ? meta : NULL;
	so.env = nenv ? env : NULL;
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox *sb;
	if (abox_sandbox_create(ctx, &so, &sb, &err) < 0) {
		abox_ctx_free(ctx);
		return cli_fail(&err);
	}
	printf("%s\n", abox_sandbox_id(sb));
	fflush(stdout);
	abox_sandbox_free(sb);
	(void)abox_gc_maybe(ctx, NULL, NULL); /* the cheap part of gc, on the way */
	abox_ctx_free(ctx);
	return 0;
}

struct start_seen {
	int pid;
	bool ended;
	int code;
	const char *error;
};

static void on_start(const abox_event *ev, void *ud)
{
	struct start_seen *s = ud;
	if (ev->type == ABOX_EVENT_START)
		s->pid = ev->pid;
	else if (ev->type == ABOX_EVENT_END) {
		s->ended = true;
		s->code = ev->exit_code;
		if (ev->error) {
			s->error = "failed";
			cli_err("%s", ev->error);
		}
	}
}

/* Dispatches until the process's start (or end) event. */
static int wait_started(abox_proc *p, struct start_seen *s, abox_error *err)
{
	while (!s->pid && !s->ended) {
		int r = abox_proc_dispatch(p, on_start, s, err);
		if (r < 0)
			return r;
		if (r > 0 || s->pid || s->ended)
			break;
		struct pollfd pf = { .fd = abox_proc_fd(p), .events = (short)abox_proc_events(p) };
		if (!abox_proc_buffered(p))
			(void)poll(&pf, 1, 1000);
	}
	return 0;
}

/* Starts a process and leaves it running: prints its pid once it runs. */
static int detach_start(abox_sandbox *sb, const abox_proc_opts *po)
{
	abox_error err = ABOX_ERROR_INIT;
	abox_proc *p;
	if (abox_proc_start(sb, po, &p, &err) < 0)
		return cli_fail(&err);
	struct start_seen s = { 0 };
	if (wait_started(p, &s, &err) < 0) {
		abox_proc_free(p);
		return cli_fail(&err);
	}
	/* an exec failure shows as start + end together */
	(void)abox_proc_dispatch(p, on_start, &s, NULL);
	abox_proc_free(p);
	if (s.ended && s.error)
		return s.code; /* it could not start (126/127) */
	printf("%d\n", s.pid);
	return 0;
}

int cmd_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "user", required_argument, NULL, 'u' },
		{ "cwd", required_argument, NULL, 'w' },
		{ "env", required_argument, NULL, 'e' },
		{ "interactive", no_argument, NULL, 'i' },
		{ "detach", no_argument, NULL, 'd' },
		{ "tag", required_argument, NULL, 'T' },
		{ "truncate", required_argument, NULL, 'R' },
		{ "tty", no_argument, NULL, 't' },
		{ "size", required_argument, NULL, 'Z' },
		{ "json", no_argument, NULL, 'J' },
		{ "idempotent", no_argument, NULL, 'I' },
		{ "check", no_argument, NULL, 'C' },
		{ "timeout", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	abox_proc_opts po = ABOX_PROC_OPTS_INIT;
	bool detach = false, tty = false, json = false, check = false;
	const char *size = NULL;
	_cleanup_free_ const char **env = calloc((size_t)argc + 1, sizeof(char *));
	size_t nenv = 0;
	int c;
	if (!env)
		return EXIT_ABOX;
	optind = 1;
parse:
	while ((c = getopt_long(argc, argv, "+u:w:e:idth", longopts, NULL)) != -1) {
		switch (c) {
		case 't': tty = true; break;
		case 'Z': size = optarg; tty = true; break;
		case 'J': json = true; break;
		case 'I': po.flags |= ABOX_PROC_IDEMPOTENT; break;
		case 'C': check = true; break;
		case 'O':
			if (cli_opt_secs("exec", "--timeout", optarg, &po.timeout_ms) < 0)
				return EXIT_ABOX;
			break;
		case 'd': detach = true; break;
		case 'T': po.tag = optarg; break;
		case 'R':
			if (cli_opt_truncate("exec", optarg, &po) < 0)
				return EXIT_ABOX;
			break;
		case 'u': po.user = optarg; break;
		case 'w': po.cwd = optarg; break;
		case 'e':
			if (cli_opt_kv("exec", "--env", optarg) < 0)
				return EXIT_ABOX;
			env[nenv++] = optarg;
			break;
		case 'i': po.flags |= ABOX_PROC_STDIN; break;
		case 'h':
			printf("usage: abox exec [-u USER] [-w DIR] [-e K=V]... [-i] [-d] [--tag TAG] ID [--] CMD [ARG...]\n\n"
			       "Runs CMD in the running sandbox ID. Exit status as for `abox run`.\n"
			       "  -d, --detach   start it in the background, print its pid and return\n"
			       "                 (`abox attach ID PID|TAG` follows it again)\n"
			       "      --tag TAG  a name to find it by (attach, signal, ps)\n"
			       "  -t, --tty      give it a terminal (raw keys; follows our window size)\n"
			       "      --json     print one JSON object at the end: exitCode, stdout, stderr,\n"
			       "                 truncated, their lengths and the paths of the full output\n"
			       "      --size RxC the terminal's size (default: ours, or 24x80)\n"
			       "      --idempotent  CMD may run twice: with --remote, a start that failed\n"
			       "                 on a transient error (daemon unreachable, 502/503/504)\n"
			       "                 is tried again; without it a start is never repeated\n"
			       "      --timeout SECS  kill CMD and its process group after SECS seconds\n"
			       "                 (exit status 124), also when detached\n"
			       "      --check    a non-zero exit is reported as a failure on stderr\n"
			       "                 (\"abox: exec: CMD exited with N\"), the status stays N\n"
			       "      --truncate N[:HEAD:TAIL]\n"
			       "                 when stdout+stderr exceed N bytes, print each stream cut to\n"
			       "                 its first HEAD and last TAIL bytes (default N/2 each) with a\n"
			       "                 marker; the complete output stays in /tmp/abox/cmd/<uuid>/\n");
			return 0;
		default:
			return EXIT_ABOX;
		}
	}
	if (optind >= argc) {
		cli_err("exec: missing sandbox id (usage: abox exec [OPTIONS] ID -- CMD [ARG...])");
		return EXIT_ABOX;
	}
	/* `abox exec ID --json -- CMD`: options after the ID, closed by a
	 * "--", are taken as options too (the order people type), by moving
	 * the ID behind them. Without a "--" after them, what follows the ID
	 * is the command, as documented. */
	if (optind + 1 < argc && argv[optind + 1][0] == '-' && strcmp(argv[optind + 1], "--") != 0) {
		int dash = optind + 2;
		while (dash < argc && strcmp(argv[dash], "--") != 0)
			dash++;
		if (dash < argc) {
			char *idarg = argv[optind];
			memmove(argv + optind, argv + optind + 1, (size_t)(dash - optind - 1) * sizeof(char *));
			argv[dash - 1] = idarg;
			goto parse;
		}
	}
	const char *id = argv[optind++];
	if (optind < argc && strcmp(argv[optind], "--") == 0)
		optind++;
	if (optind >= argc) {
		cli_err("exec: missing command (usage: abox exec [OPTIONS] ID -- CMD [ARG...])");
		return EXIT_ABOX;
	}
	po.argv = (const char *const *)argv + optind;
	po.env = nenv ? env : NULL;
	if (tty && cli_opt_size_rc("exec", size, &po) < 0)
		return EXIT_ABOX;
	if (json && tty) {
		cli_err("exec: --json and --tty do not go together");
		return EXIT_ABOX;
	}
	if (json && !po.truncate_threshold) {
		/* a JSON result holds the output: bound what it may hold */
		po.truncate_threshold = 16u << 20;
	}
	if (tty && !detach)
		po.flags |= ABOX_PROC_STDIN;

	if (cli_signals_block() < 0)
		return EXIT_ABOX;
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox *sb;
	if (abox_sandbox_connect(ctx, id, &sb, &err) < 0) {
		abox_ctx_free(ctx);
		return cli_fail(&err);
	}
	if (detach) {
		if (po.flags & ABOX_PROC_STDIN) {
			cli_err("exec: --detach and --interactive do not go together");
			abox_sandbox_free(sb);
			abox_ctx_free(ctx);
			return EXIT_ABOX;
		}
		int rc = detach_start(sb, &po);
		abox_sandbox_free(sb);
		abox_ctx_free(ctx);
		return rc;
	}
	char membuf[32];
	format_size(abox_sandbox_memory_limit(sb), membuf, sizeof(membuf));
	struct cli_proc_opts o = { .memory_text = membuf, .truncated = po.truncate_threshold != 0, .tty = tty,
				   .json = json, .argv0 = po.argv[0] };
	int rc = cli_run_process(sb, &po, &o);
	if (check && rc != 0 && rc != EXIT_ABOX)
		cli_err("exec: %s exited with %d", po.argv[0], rc);
	abox_sandbox_free(sb);
	(void)abox_gc_maybe(ctx, NULL, NULL); /* the cheap part of gc, on the way */
	abox_ctx_free(ctx);
	return rc;
}

static const char *cli_state_name(abox_sandbox_state s)
{
	return s == ABOX_STATE_RUNNING ? "running" : s == ABOX_STATE_PAUSED ? "paused" : "dead";
}

int cmd_kill(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		FILE *f = argc < 2 ? stderr : stdout;
		fprintf(f, "usage: abox kill ID...\n\nKills every process of each sandbox and removes its mounts, cgroups,\nsockets and state.\n");
		return argc < 2 ? EXIT_ABOX : 0;
	}
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	int rc = 0;
	for (int i = 1; i < argc; i++) {
		abox_error err = ABOX_ERROR_INIT;
		abox_sandbox *sb;
		int r = abox_sandbox_connect(ctx, argv[i], &sb, &err);
		if (r == -ESRCH) {
			/* recorded but dead: what is left is gc's to remove */
			(void)abox_gc(ctx, NULL, NULL);
			continue;
		}
		if (r < 0) {
			rc = cli_fail(&err);
			continue;
		}
		if (abox_sandbox_kill(sb, &err) < 0)
			rc = cli_fail(&err);
		abox_sandbox_free(sb);
	}
	(void)abox_gc_maybe(ctx, NULL, NULL); /* the cheap part of gc, on the way */
	abox_ctx_free(ctx);
	return rc;
}

static json_object *info_json(const abox_sandbox_info *in)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_string(in->id));
	json_object_object_add(o, "state", json_object_new_string(cli_state_name(in->state)));
	json_object_object_add(o, "template", json_object_new_string(in->template_name));
	json_object_object_add(o, "pid", json_object_new_int(in->pid));
	json_object_object_add(o, "createdMs", json_object_new_int64(in->created_ms));
	json_object_object_add(o, "deadlineMs", json_object_new_int64(in->deadline_ms));
	json_object_object_add(o, "memoryBytes", json_object_new_uint64(in->memory_bytes));
	json_object_object_add(o, "diskBytes", json_object_new_uint64(in->disk_bytes));
	json_object_object_add(o, "pids", json_object_new_uint64(in->pids));
	json_object_object_add(o, "cpus", json_object_new_double(in->cpu_millis / 1000.0));
	json_object *m = json_tokener_parse(in->metadata_json ? in->metadata_json : "{}");
	json_object_object_add(o, "metadata", m ? m : json_object_new_object());
	return o;
}

static void fmt_time(int64_t ms, char *buf, size_t n)
{
	if (!ms) {
		safe_snprintf(buf, n, "-");
		return;
	}
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int cmd_info(int argc, char **argv)
{
	bool json = false;
	const char *id = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (!id)
			id = argv[i];
		else {
			cli_err("info: unexpected argument '%s'", argv[i]);
			return EXIT_ABOX;
		}
	}
	if (!id) {
		cli_err("info: missing sandbox id (usage: abox info [--json] ID)");
		return EXIT_ABOX;
	}
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox_info in = { .version = ABOX_SANDBOX_INFO_VERSION };
	int r = abox_sandbox_info_get(ctx, id, &in, &err);
	abox_ctx_free(ctx);
	if (r < 0)
		return cli_fail(&err);
	if (json) {
		json_object *o = info_json(&in);
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		char created[32], deadline[32], mem[32], disk[32];
		fmt_time(in.created_ms, created, sizeof(created));
		fmt_time(in.deadline_ms, deadline, sizeof(deadline));
		format_size(in.memory_bytes, mem, sizeof(mem));
		format_size(in.disk_bytes, disk, sizeof(disk));
		printf("id:        %s\nstate:     %s\ntemplate:  %s\ncreated:   %s\ndeadline:  %s\n"
		       "limits:    memory %s, disk %s, pids %llu, cpus %.2f\nmetadata:  %s\n",
		       in.id, cli_state_name(in.state), in.template_name, created,
		       deadline, mem, disk, (unsigned long long)in.pids, in.cpu_millis / 1000.0, in.metadata_json);
	}
	abox_sandbox_info_clear(&in);
	return 0;
}

int cmd_ls(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "state", required_argument, NULL, 's' },
		{ "metadata", required_argument, NULL, 'm' },
		{ "limit", required_argument, NULL, 'l' },
		{ "next-token", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	abox_list_opts lo = ABOX_LIST_OPTS_INIT;
	_cleanup_free_ const char **meta = calloc((size_t)argc + 1, sizeof(char *));
	size_t nmeta = 0;
	bool json = false;
	int c;
	if (!meta)
		return EXIT_ABOX;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		uint64_t v;
		switch (c) {
		case 'j': json = true; break;
		case 's':
			if (strcmp(optarg, "running") == 0)
				lo.state = ABOX_STATE_RUNNING;
			else if (strcmp(optarg, "dead") == 0)
				lo.state = ABOX_STATE_DEAD;
			else if (strcmp(optarg, "paused") == 0)
				lo.state = ABOX_STATE_PAUSED;
			else {
				cli_err("ls: --state '%s': expected running, paused or dead", optarg);
				return EXIT_ABOX;
			}
			break;
		case 'm':
			if (cli_opt_kv("ls", "--metadata", optarg) < 0)
				return EXIT_ABOX;
			meta[nmeta++] = optarg;
			break;
		case 'l':
			if (cli_opt_count("ls", "--limit", optarg, &v) < 0)
				return EXIT_ABOX;
			lo.limit = (uint32_t)v;
			break;
		case 'n': lo.next_token = optarg; break;
		case 'h':
			printf("usage: abox ls [--json] [--state running|paused|dead] [--metadata K=V]... [--limit N] [--next-token T]\n\n"
			       "Lists long-lived sandboxes in id order. With --limit, the token for the\n"
			       "next page is printed to stderr (\"next-token: T\") or, with --json, as\n"
			       "\"nextToken\".\n");
			return 0;
		default:
			return EXIT_ABOX;
		}
	}
	if (optind < argc) {
		cli_err("ls: unexpected argument '%s'", argv[optind]);
		return EXIT_ABOX;
	}
	lo.metadata = nmeta ? meta : NULL;
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox_info *v = NULL;
	size_t n = 0;
	char *next = NULL;
	int r = abox_sandbox_query(ctx, &lo, &v, &n, &next, &err);
	abox_ctx_free(ctx);
	if (r < 0)
		return cli_fail(&err);
	if (json) {
		json_object *arr = json_object_new_array();
		for (size_t i = 0; i < n; i++)
			json_object_array_add(arr, info_json(&v[i]));
		json_object *out = arr;
		if (lo.limit) {
			out = json_object_new_object();
			json_object_object_add(out, "sandboxes", arr);
			json_object_object_add(out, "nextToken", next ? json_object_new_string(next) : NULL);
		}
		printf("%s\n", json_object_to_json_string_ext(out, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(out);
	} else {
		printf("%-20s  %-8s  %-10s  %-20s  %s\n", "ID", "STATE", "TEMPLATE", "CREATED", "METADATA");
		for (size_t i = 0; i < n; i++) {
			char created[32];
			fmt_time(v[i].created_ms, created, sizeof(created));
			printf("%-20s  %-8s  %-10s  %-20s  %s\n", v[i].id,
			       cli_state_name(v[i].state), v[i].template_name, created,
			       v[i].metadata_json);
		}
		if (next)
			fprintf(stderr, "next-token: %s\n", next);
	}
	for (size_t i = 0; i < n; i++)
		abox_sandbox_info_clear(&v[i]);
	free(v);
	free(next);
	return 0;
}

int cmd_set_timeout(int argc, char **argv)
{
	if (argc != 3) {
		cli_err("set-timeout: usage: abox set-timeout ID SECS (from now; 0 = no timeout)");
		return EXIT_ABOX;
	}
	uint32_t ms = 0;
	if (strcmp(argv[2], "0") != 0 && cli_opt_secs("set-timeout", "SECS", argv[2], &ms) < 0)
		return EXIT_ABOX;
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox *sb;
	int rc = 0;
	if (abox_sandbox_connect(ctx, argv[1], &sb, &err) < 0) {
		rc = cli_fail(&err);
	} else {
		if (abox_sandbox_set_timeout(sb, ms, &err) < 0)
			rc = cli_fail(&err);
		abox_sandbox_free(sb);
	}
	abox_ctx_free(ctx);
	return rc;
}

int cmd_metrics(int argc, char **argv)
{
	bool json = false;
	const char *id = NULL;
	uint32_t interval_ms = 200;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--interval") == 0 && i + 1 < argc) {
			if (cli_opt_secs("metrics", "--interval", argv[++i], &interval_ms) < 0)
				return EXIT_ABOX;
		} else if (!id)
			id = argv[i];
		else {
			cli_err("metrics: unexpected argument '%s'", argv[i]);
			return EXIT_ABOX;
		}
	}
	if (!id) {
		cli_err("metrics: missing sandbox id (usage: abox metrics [--json] [--interval SECS] ID)");
		return EXIT_ABOX;
	}
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox *sb;
	if (abox_sandbox_connect(ctx, id, &sb, &err) < 0) {
		abox_ctx_free(ctx);
		return cli_fail(&err);
	}
	/* two samples: the CPU share is measured over the interval */
	abox_metrics m = { .version = ABOX_METRICS_VERSION };
	int r = abox_sandbox_metrics(sb, &m, &err);
	if (r >= 0) {
		struct timespec ts = { interval_ms / 1000, (long)(interval_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		r = abox_sandbox_metrics(sb, &m, &err);
	}
	abox_sandbox_free(sb);
	abox_ctx_free(ctx);
	if (r < 0)
		return cli_fail(&err);
	if (json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "timestampMs", json_object_new_int64(m.timestamp_ms));
		if (m.cpu_used_usec != UINT64_MAX)
			json_object_object_add(o, "cpuUsedUsec", json_object_new_uint64(m.cpu_used_usec));
		json_object_object_add(o, "cpuUsedPct", json_object_new_double(m.cpu_pct));
		json_object_object_add(o, "memUsed", json_object_new_uint64(m.mem_used));
		json_object_object_add(o, "memTotal", json_object_new_uint64(m.mem_limit));
		json_object_object_add(o, "diskUsed", json_object_new_uint64(m.disk_used));
		json_object_object_add(o, "diskTotal", json_object_new_uint64(m.disk_limit));
		json_object_object_add(o, "pids", json_object_new_uint64(m.pids));
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		char mu[32], ml[32], du[32], dl[32];
		format_size(m.mem_used, mu, sizeof(mu));
		format_size(m.mem_limit, ml, sizeof(ml));
		format_size(m.disk_used, du, sizeof(du));
		format_size(m.disk_limit, dl, sizeof(dl));
		printf("cpu:    %.1f%% (%.3f s used)\nmemory: %s of %s\ndisk:   %s of %s\npids:   %llu\n", m.cpu_pct,
		       m.cpu_used_usec == UINT64_MAX ? 0.0 : (double)m.cpu_used_usec / 1e6, mu, ml, du, dl,
		       (unsigned long long)m.pids);
	}
	return 0;
}

/* PID or TAG: digits are a pid. */
static void target(const char *arg, int *pid, const char **tag)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (*arg && !*end && v > 0 && v < INT32_MAX) {
		*pid = (int)v;
		*tag = NULL;
	} else {
		*pid = 0;
		*tag = arg;
	}
}

int cmd_ps(int argc, char **argv)
{
	bool json = false;
	const char *id = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (!id)
			id = argv[i];
		else {
			cli_err("ps: unexpected argument '%s'", argv[i]);
			return EXIT_ABOX;
		}
	}
	if (!id) {
		cli_err("ps: missing sandbox id (usage: abox ps [--json] ID)");
		return EXIT_ABOX;
	}
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox *sb;
	abox_proc_info *v = NULL;
	size_t n = 0;
	int r = abox_sandbox_connect(ctx, id, &sb, &err);
	if (r >= 0) {
		r = abox_proc_list(sb, &v, &n, &err);
		abox_sandbox_free(sb);
	}
	abox_ctx_free(ctx);
	if (r < 0)
		return cli_fail(&err);
	json_object *arr = json_object_new_array();
	if (!json)
		printf("%-8s  %-8s  %-6s  %-16s  %s\n", "PID", "STATE", "EXIT", "TAG", "COMMAND");
	for (size_t i = 0; i < n; i++) {
		if (json) {
			json_object *o = json_object_new_object();
			json_object_object_add(o, "pid", json_object_new_int(v[i].pid));
			json_object_object_add(o, "tag", json_object_new_string(v[i].tag));
			json_object_object_add(o, "cmd", json_object_new_string(v[i].cmd));
			json_object_object_add(o, "running", json_object_new_boolean(v[i].running));
			if (!v[i].running) {
				json_object_object_add(o, "exitCode", json_object_new_int(v[i].exit_code));
				json_object_object_add(o, "signal", json_object_new_int(v[i].signal));
			}
			json_object_array_add(arr, o);
		} else {
			char code[16] = "-";
			if (!v[i].running)
				snprintf(code, sizeof(code), "%d", v[i].exit_code);
			printf("%-8d  %-8s  %-6s  %-16s  %s\n", v[i].pid, v[i].running ? "running" : "exited", code,
			       v[i].tag[0] ? v[i].tag : "-", v[i].cmd);
		}
	}
	if (json)
		printf("%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(arr);
	free(v);
	return 0;
}

int cmd_attach(int argc, char **argv)
{
	if (argc != 3) {
		cli_err("attach: usage: abox attach ID PID|TAG");
		return EXIT_ABOX;
	}
	int pid;
	const char *tag;
	target(argv[2], &pid, &tag);
	if (cli_signals_block() < 0)
		return EXIT_ABOX;
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox *sb;
	if (abox_sandbox_connect(ctx, argv[1], &sb, &err) < 0) {
		abox_ctx_free(ctx);
		return cli_fail(&err);
	}
	abox_proc *p;
	int rc;
	if (abox_proc_attach(sb, pid, tag, &p, &err) < 0) {
		rc = cli_fail(&err);
	} else {
		char membuf[32];
		format_size(abox_sandbox_memory_limit(sb), membuf, sizeof(membuf));
		struct cli_proc_opts o = { .memory_text = membuf };
		rc = cli_follow(p, false, &o);
	}
	abox_sandbox_free(sb);
	abox_ctx_free(ctx);
	return rc;
}

static int signal_number(const char *s)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = { { "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT }, { "KILL", SIGKILL },
		      { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "TERM", SIGTERM }, { "CONT", SIGCONT },
		      { "STOP", SIGSTOP }, { "TSTP", SIGTSTP }, { "WINCH", SIGWINCH }, { "ALRM", SIGALRM } };
	char *end;
	long v = strtol(s, &end, 10);
	if (*s && !*end)
		return v > 0 && v < 65 ? (int)v : -1;
	if (strncmp(s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i].name) == 0)
			return names[i].sig;
	return -1;
}

int cmd_signal(int argc, char **argv)
{
	if (argc < 3 || argc > 4) {
		cli_err("signal: usage: abox signal ID PID|TAG [SIGNAL] (default TERM; sent to its process group)");
		return EXIT_ABOX;
	}
	int sig = argc == 4 ? signal_number(argv[3]) : SIGTERM;
	if (sig < 0) {
		cli_err("signal: unknown signal '%s'", argv[3]);
		return EXIT_ABOX;
	}
	int pid;
	const char *tag;
	target(argv[2], &pid, &tag);
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox *sb;
	int rc = 0;
	if (abox_sandbox_connect(ctx, argv[1], &sb, &err) < 0) {
		rc = cli_fail(&err);
	} else {
		abox_proc *p;
		/* attach, then signal through the handle: the same lookup by
		 * pid or tag, and a clear error for an unknown one */
		if (abox_proc_attach(sb, pid, tag, &p, &err) < 0) {
			rc = cli_fail(&err);
		} else {
			struct start_seen s = { 0 };
			if (wait_started(p, &s, &err) < 0)
				rc = cli_fail(&err);
			if (rc == 0 && s.ended) {
				cli_err("signal: process %s has ended (exit %d)", argv[2], s.code);
				rc = EXIT_ABOX;
			} else if (rc == 0 && abox_proc_signal(p, sig, &err) < 0) {
				rc = cli_fail(&err);
			}
			abox_proc_free(p);
		}
		abox_sandbox_free(sb);
	}
	abox_ctx_free(ctx);
	return rc;
}

int cmd_shell(int argc, char **argv)
{
	if (argc < 2 || argc > 3 || argv[1][0] == '-') {
		cli_err("shell: usage: abox shell ID [root|user]");
		return EXIT_ABOX;
	}
	char *args[] = { (char *)"exec", (char *)"-t", (char *)"-u", (char *)(argc == 3 ? argv[2] : "user"),
			 argv[1], (char *)"--", (char *)"/bin/bash", (char *)"-l", NULL };
	return cmd_exec(8, args);
}

int cmd_resize(int argc, char **argv)
{
	unsigned rows, cols;
	char extra;
	if (argc != 4 || sscanf(argv[3], "%ux%u%c", &rows, &cols, &extra) != 2) {
		cli_err("resize: usage: abox resize ID PID|TAG ROWSxCOLS");
		return EXIT_ABOX;
	}
	int pid;
	const char *tag;
	target(argv[2], &pid, &tag);
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox *sb;
	int rc = 0;
	if (abox_sandbox_connect(ctx, argv[1], &sb, &err) < 0) {
		rc = cli_fail(&err);
	} else {
		abox_proc *p;
		if (abox_proc_attach(sb, pid, tag, &p, &err) < 0) {
			rc = cli_fail(&err);
		} else {
			struct start_seen s = { 0 };
			if (wait_started(p, &s, &err) < 0)
				rc = cli_fail(&err);
			if (rc == 0 && s.ended) {
				cli_err("resize: process %s has ended", argv[2]);
				rc = EXIT_ABOX;
			} else if (rc == 0 && abox_proc_resize(p, (uint16_t)rows, (uint16_t)cols, &err) < 0) {
				rc = cli_fail(&err);
			}
			abox_proc_free(p);
		}
		abox_sandbox_free(sb);
	}
	abox_ctx_free(ctx);
	return rc;
}
