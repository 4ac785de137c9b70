/* abox network — a long-lived sandbox's egress: shown (policy, address,
 * counters) or replaced. */
#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/json.h"
#include "cli.h"

static const char *mode_name(uint32_t m)
{
	return m == ABOX_NET_OPEN ? "open" : m == ABOX_NET_FILTERED ? "filtered" : "none";
}

static void print_list(const char *what, char **v)
{
	printf("%s", what);
	for (size_t i = 0; v && v[i]; i++)
		printf("%s%s", i ? ", " : " ", v[i]);
	printf("%s\n", v && v[0] ? "" : " -");
}

static int show(abox_ctx *ctx, const char *id, bool json)
{
	abox_error err = ABOX_ERROR_INIT;
	abox_net_info ni = { .version = ABOX_NET_INFO_VERSION };
	if (abox_sandbox_network(ctx, id, &ni, &err) < 0)
		return cli_fail(&err);
	if (json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "mode", json_object_new_string(mode_name(ni.mode)));
		json_object_object_add(o, "allowOut", js_strv_array(ni.allow_out));
		json_object_object_add(o, "denyOut", js_strv_array(ni.deny_out));
		if (ni.address[0]) {
			json_object_object_add(o, "address", json_object_new_string(ni.address));
			json_object_object_add(o, "gateway", json_object_new_string(ni.gateway));
		}
		if (ni.proxy[0])
			json_object_object_add(o, "proxy", json_object_new_string(ni.proxy));
		json_object_object_add(o, "txBytes", json_object_new_uint64(ni.tx_bytes));
		json_object_object_add(o, "rxBytes", json_object_new_uint64(ni.rx_bytes));
		json_object_object_add(o, "dnsQueries", json_object_new_uint64(ni.dns_queries));
		json_object_object_add(o, "dnsRefused", json_object_new_uint64(ni.dns_refused));
		json_object_object_add(o, "proxyConnections", json_object_new_uint64(ni.proxy_connections));
		json_object_object_add(o, "proxyRefused", json_object_new_uint64(ni.proxy_refused));
		cli_print_json(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
	} else {
		printf("mode:      %s\n", mode_name(ni.mode));
		if (ni.mode == ABOX_NET_FILTERED) {
			print_list("allow out:", ni.allow_out);
			print_list("deny out: ", ni.deny_out);
		}
		if (ni.address[0])
			printf("address:   %s (gateway and DNS %s)\n", ni.address, ni.gateway);
		if (ni.proxy[0])
			printf("relayed:   proxy only, at %s (no CAP_NET_ADMIN on this host)\n", ni.proxy);
		printf("traffic:   %llu bytes out, %llu in\n", (unsigned long long)ni.tx_bytes,
		       (unsigned long long)ni.rx_bytes);
		printf("dns:       %llu queries, %llu refused\n", (unsigned long long)ni.dns_queries,
		       (unsigned long long)ni.dns_refused);
		if (ni.mode == ABOX_NET_FILTERED || ni.proxy[0])
			printf("%s %llu connections, %llu refused\n",
			       ni.proxy[0] ? "relayed:  " : "by name:  ",
			       (unsigned long long)ni.proxy_connections,
			       (unsigned long long)ni.proxy_refused);
	}
	abox_net_info_clear(&ni);
	return 0;
}

int cmd_network(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "net", required_argument, NULL, 'N' },
		{ "allow-out", required_argument, NULL, 'O' },
		{ "deny-out", required_argument, NULL, 'X' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	_cleanup_(cli_new_free) struct cli_new_sandbox ns;
	if (cli_new_init(&ns, argc) < 0)
		return EXIT_ABOX;
	bool json = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'h':
			printf("usage: abox network [--json] ID\n"
			       "       abox network ID --net open|filtered [--allow-out X]... [--deny-out "
			       "X]...\n\n"
			       "Shows a long-lived sandbox's egress (its policy, address and counters), or\n"
			       "replaces its policy at once: flows to what the new one denies are cut.\n"
			       "A sandbox made with --net none has no interface to give a policy "
			       "to.\n\n" CLI_NET_USAGE);
			return 0;
		case 'N':
		case 'O':
		case 'X':
			if (cli_sandbox_opt("network", c, optarg, &ns) < 0)
				return EXIT_ABOX;
			break;
		default:
			return EXIT_ABOX;
		}
	}
	if (optind + 1 != argc) {
		cli_err("network: expected one sandbox id (usage: abox network [--json] ID [--net MODE "
			"...])");
		return EXIT_ABOX;
	}
	const char *id = argv[optind];
	bool change = ns.net_given || ns.nallow || ns.ndeny;
	if (!change) {
		abox_ctx *ctx;
		if (cli_ctx(&ctx) != 0)
			return EXIT_ABOX;
		int rc = show(ctx, id, json);
		abox_ctx_free(ctx);
		return rc;
	}
	if (cli_new_finish("network", &ns) < 0)
		return EXIT_ABOX;
	_cleanup_(cli_close) struct cli_sandbox s = { 0 };
	int rc = cli_open(id, &s);
	if (rc)
		return rc;
	abox_error err = ABOX_ERROR_INIT;
	if (abox_sandbox_set_network(s.sb, &ns.net, &err) < 0)
		return cli_fail(&err);
	return 0;
}
