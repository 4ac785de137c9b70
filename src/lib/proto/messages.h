/* proto/messages.h — message types and field tags of the host <-> init
 * protocol. Numbers are wire values: never renumber, only add.
 *
 * Requests (host -> init) carry an id chosen by the host; every event about
 * that request carries the same id. A request either produces its events
 * and ends with MSG_EV_END (processes) or MSG_EV_OK, or fails with
 * MSG_EV_ERROR {F_ERRNO, F_MESSAGE}. */
#ifndef ABOX_PROTO_MESSAGES_H
#define ABOX_PROTO_MESSAGES_H

#define ABOX_PROTO_VERSION 1

enum proto_type {
	/* handshake: init -> host right after accept: F_VERSION, F_PID */
	MSG_HELLO = 1,

	/* requests */
	MSG_REQ_EXEC = 16,   /* F_ARG*, F_ENV*, F_CWD, F_UID, F_GID, F_FLAGS */
	MSG_REQ_STDIN = 17,  /* F_PID, F_DATA */
	MSG_REQ_STDIN_CLOSE = 18, /* F_PID */
	MSG_REQ_SIGNAL = 19, /* F_PID, F_SIGNAL */
	MSG_REQ_SHUTDOWN = 20, /* kill everything, init exits */
	MSG_REQ_DETACH = 21,   /* the sandbox is recorded: outlive the creator (EV_OK) */
	MSG_REQ_SET_TIMEOUT = 22, /* F_TIMEOUT_MS from now (0 = none) (EV_OK) */
	MSG_REQ_METRICS = 23,  /* -> EV_OK {F_DISK_USED, F_DISK_TOTAL} */
	MSG_REQ_ATTACH = 24,   /* F_PID or F_TAG: START, kept output, then live events or END */
	MSG_REQ_LIST = 25,     /* -> EV_PROC per process (running and recent ended), EV_OK */

	/* events */
	MSG_EV_OK = 64,
	MSG_EV_ERROR = 65,   /* F_ERRNO, F_MESSAGE */
	MSG_EV_START = 66,   /* F_PID */
	MSG_EV_STDOUT = 67,  /* F_PID, F_DATA */
	MSG_EV_STDERR = 68,  /* F_PID, F_DATA */
	MSG_EV_END = 69,     /* F_PID, F_EXIT_CODE, F_SIGNAL, [F_ERRNO, F_MESSAGE] */
	MSG_EV_STDIN_ACK = 70, /* F_PID, F_COUNT: stdin bytes consumed (written or dropped) */
	MSG_EV_PROC = 71,      /* F_PID, [F_TAG], F_ARG (command line), F_FLAGS (1 running), [F_EXIT_CODE, F_SIGNAL] */
};

enum proto_tag {
	F_VERSION = 1,
	F_PID = 2,
	F_ARG = 3,      /* repeated, in order */
	F_ENV = 4,      /* repeated "K=V" */
	F_CWD = 5,
	F_UID = 6,
	F_GID = 7,
	F_FLAGS = 8,
	F_DATA = 9,
	F_SIGNAL = 10,
	F_EXIT_CODE = 11,
	F_ERRNO = 12,
	F_MESSAGE = 13,
	F_HOME = 14,
	F_USER = 15,
	F_TIMEOUT_MS = 16,
	F_DISK_USED = 17,
	F_DISK_TOTAL = 18,
	F_COUNT = 19,
	F_TAG = 20,
	F_DROPPED = 21, /* on a replayed data event: bytes lost before it */
	F_TEE_DIR = 22, /* exec: keep the complete output in this folder */
};

/* Stdin is credit-based: the host keeps at most STDIN_WINDOW bytes sent
 * and not yet acknowledged, so init never has to stop reading a client
 * (which would also hold back its signals) to bound its memory. */
#define STDIN_WINDOW (1u << 20)

/* F_FLAGS of MSG_REQ_EXEC */
#define EXEC_STDIN (1u << 0)   /* keep a stdin pipe open (else /dev/null) */
#define EXEC_ONESHOT (1u << 1) /* init exits when this process ends */

/* abox-init command line: abox-init [flags]; fd 3 is the listening socket.
 * Flags: "ephemeral" = the sandbox ends when its first host connection
 * closes (abox run); "timeout_ms=N" = it ends N ms from now. A sandbox
 * that is not ephemeral still dies with its creator until MSG_REQ_DETACH:
 * a create killed half-way leaves no live sandbox behind. */
#define INIT_LISTEN_FD 3
/* O_PATH fd on the writable layer's tmpfs (for disk use). */
#define INIT_LAYER_FD 4

#endif
