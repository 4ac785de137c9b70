/* src/cli/opts.c — option values shared by the verbs: sizes, CPU
 * shares, seconds, users, environment, and the options of a new sandbox
 * that run and create share. Each names the option and what a good value
 * looks like. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>

#include "base/base.h"
#include "cli.h"

int cli_opt_size(const char *verb, const char *opt, const char *val, uint64_t *out)
{
	uint64_t v;
	if (parse_size(val, &v) < 0 || v == 0) {
		cli_err("%s: %s '%s': expected a size like 512M or 2G", verb, opt, val);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_opt_count(const char *verb, const char *opt, const char *val, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(val, &end, 10);
	if (end == val || *end || v == 0 || v > (1ULL << 22) || val[0] == '-') {
		cli_err("%s: %s '%s': expected a positive number", verb, opt, val);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_opt_layer(const char *verb, const char *val, uint32_t *flags)
{
	*flags &= ~(ABOX_SANDBOX_LAYER_DISK | ABOX_SANDBOX_LAYER_TMPFS);
	if (strcmp(val, "disk") == 0)
		*flags |= ABOX_SANDBOX_LAYER_DISK;
	else if (strcmp(val, "tmpfs") == 0)
		*flags |= ABOX_SANDBOX_LAYER_TMPFS;
	else {
		cli_err("%s: --layer '%s' is neither 'disk' nor 'tmpfs'", verb, val);
		return -1;
	}
	return 0;
}

int cli_opt_cpus(const char *verb, const char *val, uint32_t *out)
{
	char *end;
	double v = strtod(val, &end);
	if (end == val || *end || !isfinite(v) || v <= 0 || v > 1024 || (uint32_t)(v * 1000 + 0.5) == 0) {
		cli_err("%s: --cpus '%s': expected a positive number like 0.5 or 2", verb, val);
		return -1;
	}
	*out = (uint32_t)(v * 1000 + 0.5);
	return 0;
}

int cli_opt_secs(const char *verb, const char *opt, const char *val, uint32_t *ms)
{
	char *end;
	double v = strtod(val, &end);
	if (end == val || *end || !isfinite(v) || v <= 0 || v > 4294967.0 || (uint32_t)(v * 1000 + 0.5) == 0) {
		cli_err("%s: %s '%s': expected seconds, e.g. 30 or 2.5", verb, opt, val);
		return -1;
	}
	*ms = (uint32_t)(v * 1000 + 0.5);
	return 0;
}

int cli_opt_kv(const char *verb, const char *opt, const char *val, const char **list, size_t *n)
{
	if (!strchr(val, '=') || val[0] == '=') {
		cli_err("%s: %s '%s': expected KEY=VALUE", verb, opt, val);
		return -1;
	}
	list[(*n)++] = val;
	return 0;
}

int cli_opt_truncate(const char *verb, const char *val, abox_proc_opts *po)
{
	unsigned long t = 0, h = 0, l = 0;
	char extra;
	int k = sscanf(val, "%lu:%lu:%lu%c", &t, &h, &l, &extra);
	if ((k != 1 && k != 3) || t == 0 || t > (1ul << 30) || h > (1ul << 30) || l > (1ul << 30)) {
		cli_err("%s: --truncate '%s': expected THRESHOLD or THRESHOLD:HEAD:TAIL (bytes)", verb, val);
		return -1;
	}
	po->truncate_threshold = (uint32_t)t;
	po->truncate_head = (uint32_t)h;
	po->truncate_tail = (uint32_t)l;
	return 0;
}

int cli_opt_size_rc(const char *verb, const char *val, abox_proc_opts *po)
{
	unsigned rows = 0, cols = 0;
	char extra;
	if (val) {
		if (sscanf(val, "%ux%u%c", &rows, &cols, &extra) != 2 || !rows || !cols || rows > 1000 || cols > 1000) {
			cli_err("%s: --size '%s': expected ROWSxCOLS, e.g. 24x80", verb, val);
			return -1;
		}
	} else {
		struct winsize ws;
		if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
			rows = ws.ws_row;
			cols = ws.ws_col;
		} else {
			rows = 24;
			cols = 80;
		}
	}
	po->pty_rows = (uint16_t)rows;
	po->pty_cols = (uint16_t)cols;
	return 0;
}

int cli_sandbox_opt(const char *verb, int c, const char *val, struct cli_new_sandbox *ns)
{
	abox_sandbox_opts *so = &ns->so;
	int r = 0;
	switch (c) {
	case 't':
		so->template_name = val;
		break;
	case 'e':
		r = cli_opt_kv(verb, "--env", val, ns->env, &ns->nenv);
		break;
	case 'M':
		r = cli_opt_size(verb, "--memory", val, &so->memory_bytes);
		break;
	case 'D':
		r = cli_opt_size(verb, "--disk", val, &so->disk_bytes);
		break;
	case 'L':
		r = cli_opt_layer(verb, val, &so->flags);
		break;
	case 'P':
		r = cli_opt_count(verb, "--pids", val, &so->pids);
		break;
	case 'C':
		r = cli_opt_cpus(verb, val, &so->cpu_millis);
		break;
	case 'T':
		r = cli_opt_secs(verb, "--timeout", val, &so->timeout_ms);
		break;
	case 'S':
		so->seccomp_policy = val;
		break;
	case 'Y':
		so->flags &= ~(ABOX_SANDBOX_USERNS | ABOX_SANDBOX_NO_USERNS);
		if (!strcmp(val, "on"))
			so->flags |= ABOX_SANDBOX_USERNS;
		else if (!strcmp(val, "off"))
			so->flags |= ABOX_SANDBOX_NO_USERNS;
		else {
			cli_err("%s: --userns '%s': expected on or off", verb, val);
			r = -1;
		}
		break;
	case 'Q':
		if (!strcmp(val, "on"))
			so->flags &= ~ABOX_SANDBOX_NO_SUDO;
		else if (!strcmp(val, "off"))
			so->flags |= ABOX_SANDBOX_NO_SUDO;
		else {
			cli_err("%s: --sudo '%s': expected on or off", verb, val);
			r = -1;
		}
		break;
	case 'N':
		if (!strcmp(val, "none"))
			ns->net.mode = ABOX_NET_NONE;
		else if (!strcmp(val, "open"))
			ns->net.mode = ABOX_NET_OPEN;
		else if (!strcmp(val, "filtered"))
			ns->net.mode = ABOX_NET_FILTERED;
		else {
			cli_err("%s: --net '%s': expected none, open or filtered", verb, val);
			r = -1;
		}
		ns->net_given = true;
		break;
	case 'O':
		ns->allow[ns->nallow++] = val;
		break;
	case 'X':
		ns->deny[ns->ndeny++] = val;
		break;
	default:
		return 0;
	}
	return r < 0 ? -1 : 1;
}

int cli_new_init(struct cli_new_sandbox *ns, int argc)
{
	*ns = (struct cli_new_sandbox){ .so = ABOX_SANDBOX_OPTS_INIT, .net = ABOX_NET_OPTS_INIT };
	ns->env = calloc((size_t)argc + 1, sizeof(char *));
	ns->allow = calloc((size_t)argc + 1, sizeof(char *));
	ns->deny = calloc((size_t)argc + 1, sizeof(char *));
	if (!ns->env || !ns->allow || !ns->deny) {
		cli_new_free(ns);
		return -1;
	}
	return 0;
}

void cli_new_free(struct cli_new_sandbox *ns)
{
	free(ns->env);
	free(ns->allow);
	free(ns->deny);
	ns->env = NULL;
	ns->allow = ns->deny = NULL;
}

int cli_new_finish(const char *verb, struct cli_new_sandbox *ns)
{
	ns->so.env = ns->nenv ? ns->env : NULL;
	bool lists = ns->nallow || ns->ndeny;
	if (lists && !ns->net_given)
		ns->net.mode = ABOX_NET_FILTERED;
	if (lists && ns->net.mode != ABOX_NET_FILTERED) {
		cli_err("%s: --allow-out and --deny-out go with --net filtered", verb);
		return -1;
	}
	if (ns->net.mode == ABOX_NET_FILTERED && !ns->ndeny)
		ns->deny[ns->ndeny++] = "0.0.0.0/0";
	ns->net.allow_out = ns->nallow ? ns->allow : NULL;
	ns->net.deny_out = ns->ndeny ? ns->deny : NULL;
	ns->so.net = ns->net.mode == ABOX_NET_NONE ? NULL : &ns->net;
	return 0;
}
