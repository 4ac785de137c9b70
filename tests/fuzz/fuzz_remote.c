/* libFuzzer target: what libabox's remote backend decodes from a daemon's
 * process stream — Connect envelopes arriving in arbitrary pieces, their
 * JSON, and each event (a process's, or a WatchDir stream's) turned into
 * an init frame. The first byte sets the piece size and the kind. Must never crash, hang or leak, whatever answers at the
 * daemon's address. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"
#include "remote/stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t piece = (size_t)(data[0] >> 1) + 1;
	bool watch = data[0] & 1; /* a WatchDir stream, else process events */
	data++;
	size--;
	struct envq q = { 0 };
	int pid = 0;
	for (size_t off = 0; off < size;) {
		size_t n = size - off < piece ? size - off : piece;
		if (envq_push(&q, data + off, n) < 0)
			break;
		off += n;
		for (;;) {
			uint8_t flags;
			json_object *o;
			char why[160];
			int k = envq_next(&q, &flags, &o, why, sizeof(why));
			if (k <= 0) {
				if (k < 0)
					off = size; /* the stream is over after garbage */
				break;
			}
			if (flags & 0x02) {
				const char *code, *msg;
				(void)remote_end_error(o, &code, &msg);
			} else {
				struct proto_msg m;
				bool end;
				bool started;
				int k2 = watch ? remote_watch_frame(o, 7, "/home/user/w", &started, &m)
					       : remote_event_frame(o, 7, &pid, &end, &m);
				if (k2 == 1) {
					/* every frame it makes must fit: a failed one would
					 * read as a closed handle */
					if (m.failed)
						abort();
					proto_msg_free(&m);
				}
			}
			json_object_put(o);
		}
	}
	envq_free(&q);
	return 0;
}
