/* Unit tests of proto/: encoding, strict decoding, fd passing. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "proto/messages.h"
#include "proto/proto.h"

static int pair[2];

static void setup(void)
{
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
}

static void teardown(void)
{
	close(pair[0]);
	close(pair[1]);
}

TestSuite(proto, .init = setup, .fini = teardown);

Test(proto, round_trip_fields)
{
	struct proto_msg m;
	proto_msg_init(&m, MSG_REQ_EXEC, 42);
	proto_put_str(&m, F_ARG, "python3");
	proto_put_str(&m, F_ARG, "-c");
	proto_put_u64(&m, F_UID, 1000);
	proto_put_i64(&m, F_EXIT_CODE, -3);
	proto_put_bytes(&m, F_DATA, "", 0);
	cr_assert_eq(proto_send(pair[0], &m), 0);
	proto_msg_free(&m);

	struct proto_reader r;
	proto_reader_init(&r, pair[1]);
	struct proto_frame f;
	cr_assert_eq(proto_recv(&r, &f), 1);
	cr_assert_eq(f.type, MSG_REQ_EXEC);
	cr_assert_eq(f.id, 42);
	size_t off = 0;
	struct proto_field fl;
	char *s;
	cr_assert_eq(proto_field_next(&f, &off, &fl), 1);
	cr_assert_eq(fl.tag, F_ARG);
	cr_assert_eq(proto_field_strdup(&fl, &s), 0);
	cr_assert_str_eq(s, "python3");
	free(s);
	cr_assert_eq(proto_field_next(&f, &off, &fl), 1);
	cr_assert_eq(proto_field_next(&f, &off, &fl), 1);
	uint64_t v;
	cr_assert_eq(proto_field_u64(&fl, &v), 0);
	cr_assert_eq(v, 1000);
	cr_assert_eq(proto_field_next(&f, &off, &fl), 1);
	int64_t sv;
	cr_assert_eq(proto_field_i64(&fl, &sv), 0);
	cr_assert_eq(sv, -3);
	cr_assert_eq(proto_field_next(&f, &off, &fl), 1);
	cr_assert_eq(fl.len, 0);
	cr_assert_eq(proto_field_next(&f, &off, &fl), 0);
	proto_reader_free(&r);
}

Test(proto, fds_travel_with_their_frame)
{
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct proto_msg a, b;
	proto_msg_init(&a, MSG_HELLO, 1);
	proto_put_u64(&a, F_VERSION, 1);
	cr_assert_eq(proto_send(pair[0], &a), 0);
	proto_msg_init(&b, MSG_EV_OK, 2);
	proto_put_fd(&b, devnull);
	cr_assert_eq(proto_send(pair[0], &b), 0);
	proto_msg_free(&a);
	proto_msg_free(&b);

	struct proto_reader r;
	proto_reader_init(&r, pair[1]);
	struct proto_frame f;
	cr_assert_eq(proto_recv(&r, &f), 1);
	cr_assert_eq(f.nfds, 0);
	cr_assert_eq(proto_recv(&r, &f), 1);
	cr_assert_eq(f.id, 2);
	cr_assert_eq(f.nfds, 1);
	struct stat s1, s2;
	fstat(devnull, &s1);
	fstat(f.fds[0], &s2);
	cr_assert_eq(s1.st_rdev, s2.st_rdev);
	cr_assert(fcntl(f.fds[0], F_GETFD) & FD_CLOEXEC, "received fds are close-on-exec");
	close(f.fds[0]);
	close(devnull);
	proto_reader_free(&r);
}

Test(proto, many_frames_in_one_read)
{
	for (int i = 0; i < 100; i++) {
		struct proto_msg m;
		proto_msg_init(&m, MSG_EV_STDOUT, (uint32_t)i);
		proto_put_bytes(&m, F_DATA, "abc", 3);
		cr_assert_eq(proto_send(pair[0], &m), 0);
		proto_msg_free(&m);
	}
	struct proto_reader r;
	proto_reader_init(&r, pair[1]);
	for (int i = 0; i < 100; i++) {
		struct proto_frame f;
		cr_assert_eq(proto_recv(&r, &f), 1);
		cr_assert_eq(f.id, (uint32_t)i);
	}
	proto_reader_free(&r);
}

Test(proto, big_frame_is_reassembled)
{
	size_t n = 900 * 1024;
	char *big = malloc(n);
	for (size_t i = 0; i < n; i++)
		big[i] = (char)(i * 7);
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_STDOUT, 9);
	proto_put_bytes(&m, F_DATA, big, n);
	/* the socket buffer is smaller than the frame: send from a child */
	pid_t p = fork();
	if (p == 0)
		_exit(proto_send(pair[0], &m) == 0 ? 0 : 1);
	struct proto_reader r;
	proto_reader_init(&r, pair[1]);
	struct proto_frame f;
	cr_assert_eq(proto_recv(&r, &f), 1);
	size_t off = 0;
	struct proto_field fl;
	cr_assert_eq(proto_field_next(&f, &off, &fl), 1);
	cr_assert_eq(fl.len, n);
	cr_assert_eq(memcmp(fl.val, big, n), 0);
	int st;
	waitpid(p, &st, 0);
	cr_assert_eq(WEXITSTATUS(st), 0);
	proto_msg_free(&m);
	proto_reader_free(&r);
	free(big);
}

Test(proto, oversized_payload_is_refused)
{
	struct proto_msg m;
	proto_msg_init(&m, MSG_EV_STDOUT, 1);
	char *big = calloc(1, PROTO_MAX_PAYLOAD);
	proto_put_bytes(&m, F_DATA, big, PROTO_MAX_PAYLOAD);
	cr_assert_eq(proto_send(pair[0], &m), -EMSGSIZE);
	proto_msg_free(&m);
	free(big);
}

Test(proto, decoder_rejects_bad_headers)
{
	uint8_t h[PROTO_HDR_SIZE] = { 0 };
	struct proto_frame f;
	size_t used;
	/* length past the limit */
	h[0] = 0xff, h[1] = 0xff, h[2] = 0xff, h[3] = 0x7f;
	cr_assert_eq(proto_decode(h, sizeof(h), &f, &used), -EMSGSIZE);
	memset(h, 0, sizeof(h));
	h[6] = PROTO_MAX_FDS + 1;
	cr_assert_eq(proto_decode(h, sizeof(h), &f, &used), -EPROTO);
	memset(h, 0, sizeof(h));
	h[7] = 1; /* reserved flags */
	cr_assert_eq(proto_decode(h, sizeof(h), &f, &used), -EPROTO);
	memset(h, 0, sizeof(h));
	cr_assert_eq(proto_decode(h, 5, &f, &used), 0, "short header needs more bytes");
	h[0] = 10;
	cr_assert_eq(proto_decode(h, sizeof(h), &f, &used), 0, "payload not there yet");
}

Test(proto, field_overrun_is_an_error)
{
	uint8_t payload[] = { 3, 0, 100, 0, 0, 0, 'a' };
	struct proto_frame f = { .payload = payload, .len = sizeof(payload) };
	size_t off = 0;
	struct proto_field fl;
	cr_assert_eq(proto_field_next(&f, &off, &fl), -EPROTO);
	uint8_t p2[] = { 3, 0, 0 };
	struct proto_frame f2 = { .payload = p2, .len = sizeof(p2) };
	off = 0;
	cr_assert_eq(proto_field_next(&f2, &off, &fl), -EPROTO);
}

Test(proto, typed_views_check_length)
{
	uint8_t v[3] = { 1, 2, 3 };
	struct proto_field fl = { .tag = 1, .len = 3, .val = v };
	uint64_t u;
	cr_assert_eq(proto_field_u64(&fl, &u), -EPROTO);
	uint8_t s[] = { 'a', 0, 'b' };
	struct proto_field fs = { .tag = 1, .len = 3, .val = s };
	char *out = NULL;
	cr_assert_eq(proto_field_strdup(&fs, &out), -EPROTO, "embedded NUL refused");
	cr_assert_null(out);
}

Test(proto, missing_fds_are_detected)
{
	/* a frame that claims an fd but carries none */
	uint8_t h[PROTO_HDR_SIZE] = { 0 };
	h[4] = MSG_EV_OK;
	h[6] = 1;
	cr_assert_eq(write(pair[0], h, sizeof(h)), (ssize_t)sizeof(h));
	struct proto_reader r;
	proto_reader_init(&r, pair[1]);
	struct proto_frame f;
	cr_assert_eq(proto_recv(&r, &f), -EBADMSG);
	proto_reader_free(&r);
}

Test(proto, eof_mid_frame_is_an_error)
{
	uint8_t h[PROTO_HDR_SIZE] = { 0 };
	h[0] = 20;
	cr_assert_eq(write(pair[0], h, sizeof(h)), (ssize_t)sizeof(h));
	shutdown(pair[0], SHUT_WR);
	struct proto_reader r;
	proto_reader_init(&r, pair[1]);
	struct proto_frame f;
	cr_assert_eq(proto_recv(&r, &f), -EPROTO);
	proto_reader_free(&r);
}
