/* abox ls / info / metrics / ps — what sandboxes there are and what
 * they are doing. */
#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "cli.h"

static const char *cli_state_name(abox_sandbox_state s)
{
	return s == ABOX_STATE_RUNNING ? "running" : s == ABOX_STATE_PAUSED ? "paused" : "dead";
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
	if (!ms)
		safe_snprintf(buf, n, "-");
	else
		cli_utc(ms, buf, n);
}

/* What info, metrics and ps do with their sandbox: s holds a context, and
 * for the verbs that open it, the sandbox. */
typedef int (*id_verb_fn)(struct cli_sandbox *s, const char *id, bool json, uint32_t interval_ms);

/* info, metrics and ps: [--json] ID, and --interval SECS where interval_ms
 * is not NULL (its default there); then a context, the sandbox itself
 * opened with open, and run. */
static int id_verb(int argc, char **argv, const char *verb, const char *usage, uint32_t *interval_ms,
		   bool open, id_verb_fn run)
{
	const char *id = NULL;
	bool json = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (interval_ms && strcmp(argv[i], "--interval") == 0 && i + 1 < argc) {
			if (cli_opt_secs(verb, "--interval", argv[++i], interval_ms) < 0)
				return EXIT_ABOX;
		} else if (!id)
			id = argv[i];
		else {
			cli_err("%s: unexpected argument '%s'", verb, argv[i]);
			return EXIT_ABOX;
		}
	}
	if (!id) {
		cli_err("%s: missing sandbox id (usage: %s)", verb, usage);
		return EXIT_ABOX;
	}
	_cleanup_(cli_close) struct cli_sandbox s = { 0 };
	int rc = open ? cli_open(id, &s) : (cli_ctx(&s.ctx) != 0 ? EXIT_ABOX : 0);
	return rc ? rc : run(&s, id, json, interval_ms ? *interval_ms : 0);
}

static int info(struct cli_sandbox *s, const char *id, bool json, uint32_t interval_ms)
{
	(void)interval_ms;
	abox_error err = ABOX_ERROR_INIT;
	abox_sandbox_info in = { .version = ABOX_SANDBOX_INFO_VERSION };
	if (abox_sandbox_info_get(s->ctx, id, &in, &err) < 0)
		return cli_fail(&err);
	if (json) {
		cli_print_json(info_json(&in), JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
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

int cmd_info(int argc, char **argv)
{
	return id_verb(argc, argv, "info", "abox info [--json] ID", NULL, false, info);
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
			if (cli_opt_kv("ls", "--metadata", optarg, meta, &nmeta) < 0)
				return EXIT_ABOX;
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
		cli_print_json(out, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
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

static int metrics(struct cli_sandbox *s, const char *id, bool json, uint32_t interval_ms)
{
	/* two samples: the CPU share is measured over the interval */
	abox_error err = ABOX_ERROR_INIT;
	abox_metrics m = { .version = ABOX_METRICS_VERSION };
	int r = abox_sandbox_metrics(s->sb, &m, &err);
	if (r >= 0) {
		struct timespec ts = { interval_ms / 1000, (long)(interval_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		r = abox_sandbox_metrics(s->sb, &m, &err);
	}
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
		abox_net_info ni = { .version = ABOX_NET_INFO_VERSION };
		if (abox_sandbox_network(s->ctx, id, &ni, NULL) >= 0 && ni.mode != ABOX_NET_NONE) {
			json_object_object_add(o, "netTxBytes", json_object_new_uint64(ni.tx_bytes));
			json_object_object_add(o, "netRxBytes", json_object_new_uint64(ni.rx_bytes));
			json_object_object_add(o, "dnsRefused", json_object_new_uint64(ni.dns_refused));
			json_object_object_add(o, "proxyRefused", json_object_new_uint64(ni.proxy_refused));
		}
		abox_net_info_clear(&ni);
		cli_print_json(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
	} else {
		char mu[32], ml[32], du[32], dl[32];
		format_size(m.mem_used, mu, sizeof(mu));
		format_size(m.mem_limit, ml, sizeof(ml));
		format_size(m.disk_used, du, sizeof(du));
		format_size(m.disk_limit, dl, sizeof(dl));
		printf("cpu:    %.1f%% (%.3f s used)\nmemory: %s of %s\ndisk:   %s of %s\npids:   %llu\n", m.cpu_pct,
		       m.cpu_used_usec == UINT64_MAX ? 0.0 : (double)m.cpu_used_usec / 1e6, mu, ml, du, dl,
		       (unsigned long long)m.pids);
		abox_net_info ni = { .version = ABOX_NET_INFO_VERSION };
		if (abox_sandbox_network(s->ctx, id, &ni, NULL) >= 0 && ni.mode != ABOX_NET_NONE)
			printf("net:    %llu bytes out, %llu in; refused: %llu names, %llu connections by "
			       "name\n",
			       (unsigned long long)ni.tx_bytes, (unsigned long long)ni.rx_bytes,
			       (unsigned long long)ni.dns_refused, (unsigned long long)ni.proxy_refused);
		abox_net_info_clear(&ni);
	}
	return 0;
}

static int ps(struct cli_sandbox *s, const char *id, bool json, uint32_t interval_ms)
{
	(void)id;
	(void)interval_ms;
	abox_error err = ABOX_ERROR_INIT;
	abox_proc_info *v = NULL;
	size_t n = 0;
	if (abox_proc_list(s->sb, &v, &n, &err) < 0)
		return cli_fail(&err);
	json_object *arr = json ? json_object_new_array() : NULL;
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
		cli_print_json(arr, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
	free(v);
	return 0;
}

int cmd_metrics(int argc, char **argv)
{
	uint32_t interval_ms = 200;
	return id_verb(argc, argv, "metrics", "abox metrics [--json] [--interval SECS] ID", &interval_ms,
		       true, metrics);
}

int cmd_ps(int argc, char **argv)
{
	return id_verb(argc, argv, "ps", "abox ps [--json] ID", NULL, true, ps);
}
