/* access_log.c — aboxd's access log: one JSON line per request (time,
 * route, path, status, duration, bytes in, the sandbox, the key's owner
 * tag), to a file or stderr. Routes are named as the metrics name them
 * (metrics.c). Nothing is kept: a line is written and flushed when its
 * request is over (router.c). Runs in aboxd. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "access_log.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* one line at a time */
static FILE *access_log;

int access_log_open(const char *path)
{
	/* a file, "-" for stderr, none when unset */
	if (path && !strcmp(path, "-"))
		access_log = stderr;
	else if (path && !(access_log = fopen(path, "ae"))) {
		fprintf(stderr, "aboxd: access log '%s': %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

void access_log_write(const struct request *rq, const char *route, double secs)
{
	if (!access_log)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char when[40];
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	json_object *o = json_object_new_object();
	char t[64];
	snprintf(t, sizeof(t), "%s.%03ldZ", when, ts.tv_nsec / 1000000);
	json_object_object_add(o, "time", json_object_new_string(t));
	json_object_object_add(o, "route", json_object_new_string(route));
	json_object_object_add(o, "path", json_object_new_string(rq->url ? rq->url : ""));
	json_object_object_add(o, "status", json_object_new_int((int)rq->status));
	json_object_object_add(o, "ms", json_object_new_double(secs * 1000.0));
	json_object_object_add(o, "bytesIn", json_object_new_int64((int64_t)rq->len));
	if (rq->sandbox[0])
		json_object_object_add(o, "sandbox", json_object_new_string(rq->sandbox));
	if (rq->owner[0])
		json_object_object_add(o, "keyOwner", json_object_new_string(rq->owner));
	pthread_mutex_lock(&lock);
	fprintf(access_log, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	fflush(access_log);
	pthread_mutex_unlock(&lock);
	json_object_put(o);
}
