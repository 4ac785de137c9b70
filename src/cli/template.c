/* abox template ls|import|build|pull|inspect|cp|rm: the root filesystems
 * sandboxes start from. */
#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "base/json.h"
#include "cli.h"

static const char usage_text[] =
	"usage: abox template ls\n"
	"       abox template import [OPTIONS] NAME SOURCE\n"
	"       abox template build [OPTIONS] NAME RECIPE\n"
	"       abox template build [OPTIONS] -f Dockerfile NAME [CONTEXT]\n"
	"       abox template pull [OPTIONS] REF [NAME]\n"
	"       abox template inspect [--json] NAME\n"
	"       abox template cp SOURCE NAME\n"
	"       abox template rm NAME...\n\n"
	"`host` (built in) is the default. SOURCE is a folder holding a root\n"
	"filesystem, a root filesystem tarball (.tar, .tar.gz, .tar.xz, .tar.zst,\n"
	".tar.bz2), an OCI image layout (folder or archive) or a `docker save`\n"
	"archive. Nothing in it is followed; entries that would land outside the\n"
	"template refuse the import; device nodes, setuid/setgid bits and file\n"
	"capabilities are left out. Importing an existing name makes a new\n"
	"version of it; sandboxes on the old one keep it until they end.\n"
	"`build` runs debootstrap (and apt-get for the recipe's `packages`) as a\n"
	"RECIPE says (see rootfs/) from this machine's Debian mirror, showing\n"
	"their output, and imports the result; a template the same recipe,\n"
	"mirror and options built is kept (--rebuild builds it again).\n"
	"`pull` fetches image REF (python:3.12, ghcr.io/o/r@sha256:..., a private\n"
	"registry's localhost:5000/x:y) for this machine's platform, checking\n"
	"every blob's digest; layers already here are not fetched again, and a\n"
	"pull that broke off resumes. NAME defaults to the image's name and tag\n"
	"(python-3-12) and is printed.\n"
	"`cp` copies template SOURCE (files, defaults, start command) to NAME, a\n"
	"template of its own from then on.\n\n"
	"`build -f` runs a Dockerfile without docker (docs/templates.md has the\n"
	"instructions it runs); CONTEXT defaults to the Dockerfile's folder.\n\n"
	"build -f options (and the pull options below, for the images FROM names):\n"
	"      --build-arg K=V    a value for ARG K (repeatable)\n"
	"      --target STAGE     build the stage named STAGE (default: the last)\n"
	"      --no-cache         run every step again\n"
	"      --network MODE     RUN steps' network: open (default) or none\n\n"
	"pull options:\n"
	"      --platform OS/ARCH[/VARIANT]  another platform's image (linux/arm64)\n"
	"      --authfile FILE    docker-style config.json with the registry's credentials\n"
	"                         (default: ~/.docker/config.json and where podman keeps them)\n"
	"      --username USER    with --password-stdin: credentials over the file's\n"
	"      --password-stdin   read the password from the first line of stdin\n"
	"      --ca-file FILE     PEM certificates to trust for the registry\n"
	"      --tls-verify=false accept any certificate (test registries only)\n"
	"      --plain-http       http://, never TLS (a registry on this machine that\n"
	"                         does not speak TLS is found so anyway)\n\n"
	"import/build/pull options (what sandboxes made from it start with; an\n"
	"image's config or the recipe gives the defaults):\n"
	"  -u, --user USER        default user of commands: user or root\n"
	"  -w, --workdir DIR      default working folder\n"
	"  -e, --env K=V          environment entry (repeatable)\n"
	"      --start CMD        run with sh -c in the background at every create\n"
	"      --ready-cmd CMD    create returns once CMD exits 0 ...\n"
	"      --ready-port PORT  ... or once PORT accepts on the sandbox's 127.0.0.1\n"
	"      --ready-timeout S  give up (and fail the create) after S seconds (60)\n"
	"      --max-size SIZE    refuse sources with more file data (64G)\n"
	"      --max-entries N    refuse sources with more entries (4000000)\n"
	"      --keep-setuid      keep setuid/setgid bits\n"
	"      --keep-devices     keep device nodes\n"
	"      --rebuild          build: even when the same recipe built the template\n";

static void size_text(uint64_t b, char *out, size_t n)
{
	if (b >= 10ull << 20)
		snprintf(out, n, "%.1f MB", (double)b / 1e6);
	else if (b >= 10000)
		snprintf(out, n, "%.1f kB", (double)b / 1e3);
	else
		snprintf(out, n, "%llu bytes", (unsigned long long)b);
}

/* A layer's download: a line of its own once done, a live one on a tty. */
static void show_pull(const abox_template_progress *p, bool tty)
{
	char got[32], all[32];
	size_text(p->pulled, got, sizeof(got));
	size_text(p->pull_size, all, sizeof(all));
	if (strcmp(p->pull_state, "pulling") == 0) {
		if (tty) {
			fprintf(stderr, "\rlayer %u/%u: %s of %s   ", p->layer, p->layers, got, all);
			fflush(stderr);
		}
		return;
	}
	const char *what = strcmp(p->pull_state, "cached") == 0 ? "already here" : p->pull_state;
	fprintf(stderr, "%slayer %u/%u: %s, %s\n", tty ? "\r\033[K" : "", p->layer, p->layers, all, what);
}

static void show_progress(const abox_template_progress *p, void *ud)
{
	bool tty = ud != NULL;
	if (p->pull_state) {
		show_pull(p, tty);
		return;
	}
	if (p->message) {
		fprintf(stderr, "%s%s\n", tty ? "\r\033[K" : "", p->message);
		return;
	}
	if (!tty)
		return;
	char sz[32];
	snprintf(sz, sizeof(sz), "%llu bytes", (unsigned long long)p->bytes);
	if (p->layers)
		fprintf(stderr, "\rimporting: layer %u/%u, %llu entries, %s   ", p->layer, p->layers,
			(unsigned long long)p->entries, sz);
	else
		fprintf(stderr, "\rimporting: %llu entries, %s   ", (unsigned long long)p->entries, sz);
	fflush(stderr);
}

enum make_kind {
	MAKE_IMPORT,
	MAKE_BUILD,
	MAKE_PULL
};

static int do_import(abox_ctx *ctx, int argc, char **argv, enum make_kind kind)
{
	bool build = kind == MAKE_BUILD;
	static const struct option opts[] = {
		{ "user", required_argument, NULL, 'u' },
		{ "workdir", required_argument, NULL, 'w' },
		{ "env", required_argument, NULL, 'e' },
		{ "start", required_argument, NULL, 'S' },
		{ "ready-cmd", required_argument, NULL, 'C' },
		{ "ready-port", required_argument, NULL, 'P' },
		{ "ready-timeout", required_argument, NULL, 'T' },
		{ "max-size", required_argument, NULL, 'B' },
		{ "max-entries", required_argument, NULL, 'N' },
		{ "keep-setuid", no_argument, NULL, 's' },
		{ "keep-devices", no_argument, NULL, 'd' },
		{ "rebuild", no_argument, NULL, 'R' },
		{ "platform", required_argument, NULL, 1 },
		{ "authfile", required_argument, NULL, 2 },
		{ "username", required_argument, NULL, 3 },
		{ "password-stdin", no_argument, NULL, 4 },
		{ "ca-file", required_argument, NULL, 5 },
		{ "tls-verify", required_argument, NULL, 6 },
		{ "plain-http", no_argument, NULL, 7 },
		{ "file", required_argument, NULL, 'f' },
		{ "build-arg", required_argument, NULL, 9 },
		{ "target", required_argument, NULL, 10 },
		{ "no-cache", no_argument, NULL, 11 },
		{ "network", required_argument, NULL, 12 },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	abox_template_opts o = ABOX_TEMPLATE_OPTS_INIT;
	abox_pull_opts po = ABOX_PULL_OPTS_INIT;
	abox_dockerfile_opts dfo = ABOX_DOCKERFILE_OPTS_INIT;
	abox_net_opts net = ABOX_NET_OPTS_INIT;
	const char *dockerfile = NULL;
	const char **bargs = calloc((size_t)argc + 1, sizeof(char *));
	size_t nbargs = 0;
	bool pw_stdin = false;
	const char *pull_opt = NULL; /* the first registry option given */
	int li = 0;
	const char **env = calloc((size_t)argc + 1, sizeof(char *));
	size_t nenv = 0;
	int c, rc = 0;
	uint64_t v;
	optind = 1;
	while (rc == 0 && (c = getopt_long(argc, argv, "+u:w:e:f:h", opts, &li)) != -1) {
		switch (c) {
		case 'u': o.user = optarg; break;
		case 'w': o.workdir = optarg; break;
		case 'e':
			if (cli_opt_kv("template import", "--env", optarg, env, &nenv) < 0)
				rc = EXIT_ABOX;
			break;
		case 'S': o.start_cmd = optarg; break;
		case 'C': o.ready_cmd = optarg; break;
		case 'P':
			if (cli_opt_count("template import", "--ready-port", optarg, &v) < 0 || !v || v > 65535) {
				cli_err("template import: --ready-port '%s': expected 1-65535", optarg);
				rc = EXIT_ABOX;
			}
			o.ready_port = (uint16_t)v;
			break;
		case 'T':
			if (cli_opt_secs("template import", "--ready-timeout", optarg, &o.ready_timeout_ms) < 0)
				rc = EXIT_ABOX;
			break;
		case 'B':
			if (cli_opt_size("template import", "--max-size", optarg, &o.max_bytes) < 0)
				rc = EXIT_ABOX;
			break;
		case 'N':
			if (cli_opt_count("template import", "--max-entries", optarg, &o.max_entries) < 0)
				rc = EXIT_ABOX;
			break;
		case 's': o.flags |= ABOX_TEMPLATE_KEEP_SETUID; break;
		case 'd': o.flags |= ABOX_TEMPLATE_KEEP_DEVICES; break;
		case 'R':
			if (!build) {
				cli_err("template import: --rebuild is an option of 'template build'");
				rc = EXIT_ABOX;
			}
			o.flags |= ABOX_TEMPLATE_REBUILD;
			break;
		case 1:
			po.platform = optarg;
			break;
		case 2:
			po.auth_file = optarg;
			break;
		case 3:
			po.username = optarg;
			break;
		case 4:
			pw_stdin = true;
			break;
		case 5:
			po.ca_file = optarg;
			break;
		case 6:
			if (strcmp(optarg, "false") != 0 && strcmp(optarg, "true") != 0) {
				cli_err("template pull: --tls-verify '%s': expected true or false", optarg);
				rc = EXIT_ABOX;
			} else if (strcmp(optarg, "false") == 0) {
				po.flags |= ABOX_PULL_TLS_NO_VERIFY;
			}
			break;
		case 7:
			po.flags |= ABOX_PULL_PLAIN_HTTP;
			break;
		case 'f':
			dockerfile = optarg;
			break;
		case 9:
			if (!strchr(optarg, '=') || optarg[0] == '=') {
				cli_err("template build: --build-arg '%s': expected NAME=VALUE", optarg);
				rc = EXIT_ABOX;
			}
			bargs[nbargs++] = optarg;
			break;
		case 10:
			dfo.target = optarg;
			break;
		case 11:
			dfo.flags |= ABOX_DOCKERFILE_NO_CACHE;
			break;
		case 12:
			if (strcmp(optarg, "none") != 0 && strcmp(optarg, "open") != 0) {
				cli_err("template build: --network '%s': expected none or open", optarg);
				rc = EXIT_ABOX;
			}
			net.mode = strcmp(optarg, "open") == 0 ? ABOX_NET_OPEN : ABOX_NET_NONE;
			dfo.net = &net;
			break;
		case 'h': fputs(usage_text, stdout); free(env); return 0;
		default: rc = EXIT_ABOX;
		}
		if (rc == 0 && (c == 'f' || (c >= 9 && c <= 12)) && !build) {
			cli_err("template %s: %s is an option of 'template build -f'",
				kind == MAKE_PULL ? "pull" : "import", argv[optind - 1]);
			rc = EXIT_ABOX;
		}
		if (c >= 1 && c <= 7 && !pull_opt)
			pull_opt = opts[li].name;
	}
	/* the registry's options: a pull's, and a Dockerfile's FROM image's */
	if (rc == 0 && pull_opt && kind != MAKE_PULL && !dockerfile) {
		cli_err("template %s: --%s is an option of 'template pull' and 'template build -f'",
			build ? "build" : "import", pull_opt);
		rc = EXIT_ABOX;
	}
	if (rc == 0 && (kind == MAKE_PULL || dockerfile) && (pw_stdin != (po.username != NULL))) {
		cli_err("template pull: --username and --password-stdin go together");
		rc = EXIT_ABOX;
	}
	char *password = NULL;
	if (rc == 0 && pw_stdin && !(password = line_read(stdin))) {
		cli_err("template pull: --password-stdin: no password on stdin");
		rc = EXIT_ABOX;
	}
	po.password = password;
	if (rc == 0 && !dockerfile && (dfo.flags || dfo.target || dfo.net || nbargs)) {
		cli_err("template build: --build-arg, --target, --no-cache and --network go with -f "
			"Dockerfile");
		rc = EXIT_ABOX;
	}
	/* pull: REF [NAME]; build -f: NAME [CONTEXT]; else NAME SOURCE */
	int want = kind == MAKE_PULL || dockerfile ? argc - optind : 2;
	if (rc == 0 && (argc - optind != want || want < 1 || want > 2)) {
		fputs(usage_text, stderr);
		rc = EXIT_ABOX;
	}
	if (rc) {
		free(env);
		free(bargs);
		free(password);
		return rc;
	}
	dfo.build_args = nbargs ? bargs : NULL;
	o.env = nenv ? env : NULL;
	bool tty = isatty(STDERR_FILENO);
	o.progress = show_progress;
	o.userdata = tty ? (void *)1 : NULL;
	abox_error err = ABOX_ERROR_INIT;
	int r;
	char name[64];
	if (kind == MAKE_PULL) {
		const char *ref = argv[optind];
		r = optind + 1 < argc ? (int)(snprintf(name, sizeof(name), "%s", argv[optind + 1]) < 0)
				      : abox_template_ref_name(ref, name, sizeof(name), &err);
		if (r == 0)
			r = abox_template_pull(ctx, name, ref, &o, &po, &err);
	} else if (dockerfile) {
		dfo.context = optind + 1 < argc ? argv[optind + 1] : NULL;
		dfo.pull = &po; /* for FROM's image (and COPY --from's) */
		r = abox_template_build_dockerfile(ctx, argv[optind], dockerfile, &o, &dfo, &err);
	} else {
		r = build ? abox_template_build(ctx, argv[optind], argv[optind + 1], &o, &err)
			  : abox_template_import_ex(ctx, argv[optind], argv[optind + 1], &o, &err);
	}
	if (tty)
		fputs("\r\033[K", stderr);
	free(env);
	free(bargs);
	if (password) {
		explicit_bzero(password, strlen(password));
		free(password);
	}
	if (r < 0)
		return cli_fail(&err);
	if (kind == MAKE_PULL)
		printf("%s\n", name); /* the template's name (it may have been made from REF) */
	return 0;
}

static int do_inspect(abox_ctx *ctx, const char *name, bool json)
{
	abox_template_info t = { .version = ABOX_TEMPLATE_INFO_VERSION };
	abox_error err = ABOX_ERROR_INIT;
	if (abox_template_inspect(ctx, name, &t, &err) < 0)
		return cli_fail(&err);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(t.name));
	json_object_object_add(o, "version", json_object_new_string(t.current));
	if (t.created_ms)
		json_object_object_add(o, "createdMs", json_object_new_int64(t.created_ms));
	js_put_str(o, "source", t.source);
	if (t.created_ms) {
		json_object_object_add(o, "entries", json_object_new_uint64(t.entries));
		json_object_object_add(o, "bytes", json_object_new_uint64(t.bytes));
		json_object_object_add(o, "leftOut", json_object_new_uint64(t.dropped));
	}
	json_object_object_add(o, "user", json_object_new_string(t.user));
	js_put_str(o, "workdir", t.workdir);
	json_object_object_add(o, "env", js_strv_array(t.env));
	js_put_str(o, "startCmd", t.start_cmd);
	js_put_str(o, "readyCmd", t.ready_cmd);
	if (t.ready_port)
		json_object_object_add(o, "readyPort", json_object_new_int(t.ready_port));
	if (t.ready_timeout_ms)
		json_object_object_add(o, "readyTimeoutMs", json_object_new_int64(t.ready_timeout_ms));
	if (t.cmd)
		json_object_object_add(o, "cmd", js_strv_array(t.cmd));
	if (json) {
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	} else {
		char when[32] = "-", sz[32];
		if (t.created_ms)
			cli_utc(t.created_ms, when, sizeof(when));
		snprintf(sz, sizeof(sz), "%llu bytes", (unsigned long long)t.bytes);
		printf("name:      %s\nversion:   %s\ncreated:   %s\n", t.name, t.current, when);
		if (t.source)
			printf("source:    %s\n", t.source);
		if (t.created_ms)
			printf("contents:  %llu entries, %s of data, %llu left out\n", (unsigned long long)t.entries, sz,
			       (unsigned long long)t.dropped);
		printf("user:      %s\nworkdir:   %s\n", t.user, t.workdir ? t.workdir : "(the user's home)");
		for (size_t i = 0; t.env && t.env[i]; i++)
			printf("%s%s\n", i ? "           " : "env:       ", t.env[i]);
		for (size_t i = 0; t.cmd && t.cmd[i]; i++)
			printf("%s%s%s", i ? " " : "command:   ", t.cmd[i],
			       t.cmd[i + 1] ? "" : "  (abox run's default)\n");
		if (t.start_cmd)
			printf("start:     %s\n", t.start_cmd);
		if (t.ready_cmd)
			printf("ready:     when `%s` succeeds (within %u s)\n", t.ready_cmd, t.ready_timeout_ms / 1000);
		if (t.ready_port)
			printf("ready:     when port %u accepts (within %u s)\n", t.ready_port, t.ready_timeout_ms / 1000);
	}
	json_object_put(o);
	abox_template_info_clear(&t);
	return 0;
}

int cmd_template(int argc, char **argv)
{
	const char *op = argc > 1 ? argv[1] : NULL;
	bool help = op && (strcmp(op, "--help") == 0 || strcmp(op, "-h") == 0);
	bool known = op && (strcmp(op, "ls") == 0 || strcmp(op, "import") == 0 || strcmp(op, "rm") == 0 ||
			    strcmp(op, "inspect") == 0 || strcmp(op, "build") == 0 ||
			    strcmp(op, "pull") == 0 || strcmp(op, "cp") == 0);
	bool inspect_json = known && strcmp(op, "inspect") == 0 && argc == 4 && strcmp(argv[2], "--json") == 0;
	if (!known || (strcmp(op, "rm") == 0 && argc < 3) || (strcmp(op, "cp") == 0 && argc != 4) ||
	    (strcmp(op, "inspect") == 0 && argc != 3 && !inspect_json)) {
		fputs(usage_text, help ? stdout : stderr);
		return help ? 0 : EXIT_ABOX;
	}
	abox_ctx *ctx;
	if (cli_ctx(&ctx) != 0)
		return EXIT_ABOX;
	abox_error err = ABOX_ERROR_INIT;
	int rc = 0;
	if (strcmp(op, "ls") == 0) {
		char **names;
		if (abox_template_list(ctx, &names, &err) < 0) {
			rc = cli_fail(&err);
		} else {
			for (size_t i = 0; names[i]; i++) {
				printf("%s\n", names[i]);
				free(names[i]);
			}
			free(names);
		}
	} else if (strcmp(op, "import") == 0 || strcmp(op, "build") == 0 || strcmp(op, "pull") == 0) {
		enum make_kind k = op[0] == 'i' ? MAKE_IMPORT : op[0] == 'b' ? MAKE_BUILD : MAKE_PULL;
		rc = do_import(ctx, argc - 1, argv + 1, k);
	} else if (strcmp(op, "inspect") == 0) {
		rc = do_inspect(ctx, argv[argc - 1], inspect_json);
	} else if (strcmp(op, "cp") == 0) {
		if (abox_template_copy(ctx, argv[2], argv[3], &err) < 0)
			rc = cli_fail(&err);
	} else {
		rc = cli_remove_each(ctx, argv + 2, argc - 2, abox_template_remove);
	}
	abox_ctx_free(ctx);
	return rc;
}
