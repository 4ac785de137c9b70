/* tbuild_int — what tbuild.c and tbuild_upload.c share: the builds and
 * upload links kept in memory (under tb_mu), where uploads lie. */
#ifndef ABOX_DAEMON_TBUILD_INT_H
#define ABOX_DAEMON_TBUILD_INT_H

#include <json-c/json.h>
#include <pthread.h>
#include <stdint.h>

#include "daemon.h"

#define TB_UPLOAD_TTL_MS (3600 * 1000) /* an upload link is good this long */

struct tb_upload {
	char token[33], owner[17], hash[65];
	int64_t until;
	struct tb_upload *next;
};

extern pthread_mutex_t tb_mu;
extern struct tb_upload *tb_uploads;

struct tbuild;
/* owner's build bid of template tid (bid NULL: any); under tb_mu */
struct tbuild *tb_find(const char *owner, const char *tid, const char *bid);
const char *tb_state_dir(void);
/* A JSON object file of the state folder (tags, the builds' index): its
 * object, or an empty one when it is missing or damaged (tlist.c). */
json_object *tb_object_load(const char *path, size_t max);
/* ... written whole (a temporary file renamed over it); 0 or -errno. */
int tb_object_save(const char *path, json_object *o);
/* Whether owner (an API key's owner tag) built template name (tlist.c). */
bool tb_owns(const char *owner, const char *name);
int64_t tb_now_ms(void);
/* STATE/daemon-uploads/OWNER[/HASH] */
void tb_upload_path(const char *owner, const char *hash, char *out, size_t n);
/* GET /templates/{id}/files/{hash} */
enum MHD_Result tb_files(struct request *rq, const char *tid, const char *hash);

#endif
