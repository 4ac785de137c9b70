/* metrics.c — Prometheus metrics on aboxd's admin listener: requests and
 * latencies by route, sandboxes by state, creates, errors. Routes are
 * paths with sandbox ids replaced by {id}, so their number stays small;
 * the access log names requests by the same routes (access_log.c).
 * It does not see requests come in: router.c counts each one at its
 * end. Runs in aboxd. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "daemon.h"
#include "metrics.h"

#define ROUTES_MAX 256
static const double buckets[] = { 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30 };
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))

struct route_stats {
	char name[128];
	uint64_t by_class[6]; /* 1xx..5xx */
	uint64_t hist[NBUCKETS + 1];
	double sum;
	uint64_t count;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct route_stats routes[ROUTES_MAX];
static size_t nroutes;
static uint64_t creates, errors5xx;

/* "/v2/sandboxes/abc.../connect" -> "/v2/sandboxes/{id}/connect" */
void metrics_route(const struct request *rq, char *out, size_t n)
{
	const char *plane = rq->port == DAEMON_ENVD_PORT ? "envd" : rq->port == DAEMON_CODE_PORT ? "code"
							  : rq->port			 ? "proxy"
											 : "control";
	size_t k = (size_t)snprintf(out, n, "%s %s ", plane, rq->method ? rq->method : "?");
	if (rq->port && rq->port != DAEMON_ENVD_PORT && rq->port != DAEMON_CODE_PORT) {
		snprintf(out + k, n - k, "*");
		return;
	}
	const char *u = rq->url ? rq->url : "";
	while (*u && k + 6 < n) {
		size_t seg = strcspn(u + 1, "/") + 1;
		bool id = seg == 21;
		for (size_t i = 1; id && i < seg; i++)
			id = (u[i] >= 'a' && u[i] <= 'z') || (u[i] >= '0' && u[i] <= '9');
		if (id)
			k += (size_t)snprintf(out + k, n - k, "/{id}");
		else
			k += (size_t)snprintf(out + k, n - k, "%.*s", (int)seg, u);
		u += seg;
		if (k >= n)
			break;
	}
}

void metrics_count(const struct request *rq, const char *route, double secs)
{
	pthread_mutex_lock(&lock);
	struct route_stats *st = NULL;
	for (size_t i = 0; i < nroutes && !st; i++)
		if (!strcmp(routes[i].name, route))
			st = &routes[i];
	if (!st && nroutes < ROUTES_MAX) {
		st = &routes[nroutes++];
		snprintf(st->name, sizeof(st->name), "%s", route);
	}
	if (st) {
		unsigned cls = rq->status / 100 < 6 ? rq->status / 100 : 0;
		st->by_class[cls]++;
		size_t b = 0;
		while (b < NBUCKETS && secs > buckets[b])
			b++;
		st->hist[b]++;
		st->sum += secs;
		st->count++;
	}
	if (rq->status == 201 && strstr(route, "control POST") && strstr(route, "sandboxes") &&
	    !strstr(route, "{id}"))
		creates++;
	if (rq->status >= 500)
		errors5xx++;
	pthread_mutex_unlock(&lock);
}

/* Prometheus text exposition of everything above, plus sandboxes by state. */
static char *render(void)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		return NULL;
	unsigned running = 0, paused = 0;
	abox_ctx *ctx = request_ctx();
	abox_sandbox_info *v = NULL;
	size_t n = 0;
	abox_list_opts lo = ABOX_LIST_OPTS_INIT;
	if (ctx && abox_sandbox_query(ctx, &lo, &v, &n, NULL, NULL) >= 0) {
		for (size_t i = 0; i < n; i++) {
			running += v[i].state == ABOX_STATE_RUNNING;
			paused += v[i].state == ABOX_STATE_PAUSED;
			abox_sandbox_info_clear(&v[i]);
		}
		free(v);
	}
	abox_net_totals nt = { .version = ABOX_NET_TOTALS_VERSION };
	bool have_net = ctx && abox_net_totals_get(ctx, &nt, NULL) >= 0;
	abox_ctx_free(ctx);
	fprintf(f, "# HELP abox_sandboxes Sandboxes by state.\n# TYPE abox_sandboxes gauge\n");
	fprintf(f, "abox_sandboxes{state=\"running\"} %u\nabox_sandboxes{state=\"paused\"} %u\n", running, paused);
	if (have_net) {
		/* egress, summed over the sandboxes abox-netd serves (per
		 * sandbox: GET /sandboxes/{id} and `abox network ID`) */
		fprintf(f,
			"# HELP abox_net_sandboxes Sandboxes with networking.\n# TYPE abox_net_sandboxes "
			"gauge\n"
			"abox_net_sandboxes %u\n",
			nt.sandboxes);
		fprintf(f,
			"# HELP abox_net_bytes Bytes through the interfaces of the sandboxes there are now "
			"(out: "
			"sent by them).\n"
			"# TYPE abox_net_bytes gauge\nabox_net_bytes{direction=\"out\"} %llu\n"
			"abox_net_bytes{direction=\"in\"} %llu\n",
			(unsigned long long)nt.tx_bytes, (unsigned long long)nt.rx_bytes);
		fprintf(f,
			"# HELP abox_net_dns_queries_total DNS questions sandboxes asked.\n"
			"# TYPE abox_net_dns_queries_total counter\nabox_net_dns_queries_total %llu\n",
			(unsigned long long)nt.dns_queries);
		fprintf(f,
			"# HELP abox_net_proxy_connections_total Connections decided by name.\n"
			"# TYPE abox_net_proxy_connections_total counter\nabox_net_proxy_connections_total "
			"%llu\n",
			(unsigned long long)nt.proxy_connections);
		fprintf(f, "# HELP abox_net_refused_total Egress refused, by why (dns, proxy: by name; the "
			   "rest: "
			   "packets refused by the table).\n# TYPE abox_net_refused_total counter\n");
		const struct {
			const char *why;
			uint64_t n;
		} rs[] = { { "dns", nt.dns_refused },         { "dns_rebinding", nt.dns_rebind_dropped },
			   { "proxy", nt.proxy_refused },     { "host", nt.refused_host },
			   { "private", nt.refused_private }, { "smtp", nt.refused_smtp },
			   { "policy", nt.refused_policy } };
		for (size_t i = 0; i < sizeof(rs) / sizeof(rs[0]); i++)
			fprintf(f, "abox_net_refused_total{reason=\"%s\"} %llu\n", rs[i].why,
				(unsigned long long)rs[i].n);
	}
	pthread_mutex_lock(&lock);
	fprintf(f, "# HELP abox_creates_total Sandboxes created through the API.\n# TYPE abox_creates_total counter\n");
	fprintf(f, "abox_creates_total %llu\n", (unsigned long long)creates);
	fprintf(f, "# HELP abox_errors_total Requests answered 5xx.\n# TYPE abox_errors_total counter\n");
	fprintf(f, "abox_errors_total %llu\n", (unsigned long long)errors5xx);
	fprintf(f, "# HELP abox_requests_total Requests by route and status class.\n# TYPE abox_requests_total counter\n");
	for (size_t i = 0; i < nroutes; i++)
		for (unsigned c = 1; c < 6; c++)
			if (routes[i].by_class[c])
				fprintf(f, "abox_requests_total{route=\"%s\",code=\"%uxx\"} %llu\n", routes[i].name, c,
					(unsigned long long)routes[i].by_class[c]);
	fprintf(f, "# HELP abox_request_seconds Request latency by route.\n# TYPE abox_request_seconds histogram\n");
	for (size_t i = 0; i < nroutes; i++) {
		uint64_t acc = 0;
		for (size_t b = 0; b < NBUCKETS; b++) {
			acc += routes[i].hist[b];
			fprintf(f, "abox_request_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n", routes[i].name, buckets[b],
				(unsigned long long)acc);
		}
		fprintf(f, "abox_request_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n", routes[i].name,
			(unsigned long long)routes[i].count);
		fprintf(f, "abox_request_seconds_sum{route=\"%s\"} %g\n", routes[i].name, routes[i].sum);
		fprintf(f, "abox_request_seconds_count{route=\"%s\"} %llu\n", routes[i].name,
			(unsigned long long)routes[i].count);
	}
	pthread_mutex_unlock(&lock);
	fclose(f);
	return out;
}

enum MHD_Result metrics_admin(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
			  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	(void)cls;
	(void)version;
	(void)upload;
	(void)upload_size;
	(void)con_cls;
	if (strcmp(method, "GET") != 0 || strcmp(url, "/metrics") != 0) {
		struct MHD_Response *r = MHD_create_response_from_buffer(10, (void *)"not found\n", MHD_RESPMEM_PERSISTENT);
		enum MHD_Result q = MHD_queue_response(conn, 404, r);
		MHD_destroy_response(r);
		return q;
	}
	char *body = render();
	if (!body)
		return MHD_NO;
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4");
	enum MHD_Result q = MHD_queue_response(conn, 200, r);
	MHD_destroy_response(r);
	return q;
}
