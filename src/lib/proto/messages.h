/* proto/messages.h — message types and field tags of the host <-> init
 * protocol. Numbers are wire values: never renumber, only add.
 *
 * Requests (host -> init) carry an id chosen by the host; every event about
 * that request carries the same id. A request either produces its events
 * and ends with MSG_EV_END (processes) or MSG_EV_OK, or fails with
 * MSG_EV_ERROR {F_ERRNO, F_MESSAGE}. */
#ifndef ABOX_PROTO_MESSAGES_H
#define ABOX_PROTO_MESSAGES_H

#include <stdint.h>

#define ABOX_PROTO_VERSION 1

enum proto_type {
	/* handshake: init -> host right after accept: F_VERSION, F_PID */
	MSG_HELLO = 1,

	/* requests */
	/* F_ARG*, F_ENV*, F_CWD, F_USER, F_UID, F_GID, F_HOME, F_FLAGS. Every
	 * request that runs as a user names it so: F_USER with F_UID/F_GID
	 * as given (`user`, `root`), or F_USER with F_LOOKUP, which init looks
	 * up in the sandbox's /etc/passwd (unknown: EV_ERROR ABOX_ENOUSER); a
	 * relative path or cwd is then below that user's home */
	MSG_REQ_EXEC = 16,
	MSG_REQ_STDIN = 17,  /* F_PID, F_DATA */
	MSG_REQ_STDIN_CLOSE = 18, /* F_PID */
	MSG_REQ_SIGNAL = 19, /* F_PID, F_SIGNAL */
	MSG_REQ_SHUTDOWN = 20, /* kill everything, init exits */
	MSG_REQ_DETACH = 21,   /* the sandbox is recorded: outlive the creator (EV_OK) */
	MSG_REQ_SET_TIMEOUT = 22, /* F_TIMEOUT_MS from now (0 = none) (EV_OK) */
	MSG_REQ_METRICS = 23,  /* -> EV_OK {F_DISK_USED, F_DISK_TOTAL} */
	MSG_REQ_ATTACH = 24,   /* F_PID or F_TAG: START, kept output, then live events or END */
	MSG_REQ_LIST = 25,     /* -> EV_PROC per process (running and recent ended), EV_OK */
	MSG_REQ_RESIZE = 26,   /* F_PID (or the request id), F_ROWS, F_COLS: a terminal's new size */
	/* before a checkpoint: F_NAME (a random token). Init answers EV_OK,
	 * then lets go of everything that lives outside the sandbox (its
	 * clients, the listening socket, the writable layer's fd: a
	 * checkpointer cannot dump those) and waits, serving nobody, until
	 * SIGUSR2 tells it to fetch new ones (see INIT_REARM_NAME). */
	MSG_REQ_CHECKPOINT = 27,
	/* an OCI container's process, held by MSG_REQ_EXEC with EXEC_HELD
	 * (init's "oci" mode): run it now with init's own stdin, stdout and
	 * stderr -> EV_START {F_PID}, then EV_OK once it runs, or EV_END with
	 * its exec error; when it ends, init ends with its status */
	MSG_REQ_START = 28,
	/* before an OCI container's MSG_REQ_EXEC with EXEC_HELD: its extra
	 * fds (runc's --preserve-fds), in order, up to PROTO_MAX_FDS a
	 * request: they become its process's fds 3, 4, ... -> EV_OK */
	MSG_REQ_OCI_FDS = 29,
	/* files, done by init as F_UID/F_GID inside the sandbox's tree; errors
	 * are EV_ERROR {F_ERRNO, F_MESSAGE} with the kernel's errno */
	MSG_REQ_FS_READ = 32,  /* F_PATH -> EV_DATA* then EV_OK {F_SIZE} */
	MSG_REQ_FS_WRITE = 33, /* F_PATH, F_FLAGS (FS_PARENTS) -> then FS_DATA*, FS_CLOSE -> EV_OK {F_SIZE} */
	MSG_REQ_FS_DATA = 34,  /* F_DATA (same id as the FS_WRITE) */
	MSG_REQ_FS_CLOSE = 35, /* ends an FS_WRITE */
	MSG_REQ_FS_STAT = 36,  /* F_PATH -> EV_OK {entry fields} */
	MSG_REQ_FS_LIST = 37,  /* F_PATH, F_DEPTH -> EV_ENTRY* then EV_OK */
	MSG_REQ_FS_MKDIR = 38, /* F_PATH -> EV_OK {F_FLAGS: 1 when made, 0 when it was there} */
	MSG_REQ_FS_MOVE = 39,  /* F_PATH, F_TARGET -> EV_OK */
	MSG_REQ_FS_REMOVE = 40, /* F_PATH (recursive) -> EV_OK */
	MSG_REQ_FS_WATCH = 41, /* F_PATH, F_FLAGS (FS_RECURSIVE) -> EV_OK, then EV_FS_EVENT* until FS_UNWATCH or hang-up */
	MSG_REQ_FS_UNWATCH = 42, /* the FS_WATCH's id -> EV_OK */
	/* file metadata (E2B's X-Metadata-*): "user.e2b.<key>" extended
	 * attributes, done by init as F_UID/F_GID (src/init/meta.c) */
	MSG_REQ_FS_META_GET = 48, /* F_PATH* -> EV_ENTRY {F_COUNT (the path's index), (F_META_KEY F_META_VALUE)*} per path that has any, EV_OK */
	MSG_REQ_FS_META_SET = 49, /* F_PATH, (F_META_KEY F_META_VALUE)* -> EV_OK */
	/* the sandbox's accounts: -> EV_OK {F_DATA: /etc/passwd text,
	 * F_TARGET: /etc/group text}, each at most ACCT_FILE_MAX bytes */
	MSG_REQ_ACCOUNTS = 50,

	/* events */
	MSG_EV_OK = 64,
	MSG_EV_ERROR = 65,   /* F_ERRNO, F_MESSAGE */
	MSG_EV_START = 66,   /* F_PID */
	MSG_EV_STDOUT = 67,  /* F_PID, F_DATA */
	MSG_EV_STDERR = 68,  /* F_PID, F_DATA */
	MSG_EV_END = 69,     /* F_PID, F_EXIT_CODE, F_SIGNAL, [F_ERRNO, F_MESSAGE] */
	MSG_EV_STDIN_ACK = 70, /* F_PID, F_COUNT: stdin bytes consumed (written or dropped) */
	MSG_EV_DATA = 72,      /* F_DATA: a chunk of a file being read */
	MSG_EV_PTY = 74,       /* F_PID, F_DATA: output of a process on a terminal */
	MSG_EV_FS_EVENT = 75,  /* F_PATH, F_TYPE (FS_EV_*) */
	MSG_EV_ENTRY = 73,     /* a file: F_PATH, F_NAME, F_TYPE, F_SIZE, F_MODE, F_UID, F_GID, F_MTIME_MS, [F_TARGET] */
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
	F_PATH = 23,
	F_TARGET = 24,  /* move destination; symlink target */
	F_NAME = 25,
	F_TYPE = 26,    /* FS_TYPE_* */
	F_SIZE = 27,
	F_MODE = 28,
	F_MTIME_MS = 29,
	F_DEPTH = 30,
	F_ROWS = 31,
	F_COLS = 32,
	F_META_KEY = 40,   /* a metadata key, lower case, without "user.e2b." */
	F_META_VALUE = 41, /* its value (follows its key) */
	/* with F_USER: look the name up in the sandbox's /etc/passwd; the
	 * F_UID/F_GID sent along (nobody's, 65534) are only for an init
	 * older than this field, which then runs it as nobody rather than
	 * as some real user */
	F_LOOKUP = 42,
	F_GROUP = 43, /* exec: a supplementary group id, repeated (none: the uid's gid alone) */
	F_UMASK = 44, /* exec: the file mode creation mask (else 022) */
	F_RLIMIT = 45, /* exec: "RESOURCE SOFT HARD" (decimal; RLIM_INFINITY as is), repeated */
	F_CAPS = 46, /* exec: the process's capability bounding set (a mask of CAP_* bits); else init's */
	F_SECCOMP = 47, /* exec (held): an OCI container's seccomp program (struct sock_filter[]),
			 * installed over init's own in its processes */
	F_OOM_ADJ = 48, /* exec: the process's oom_score_adj + 1000 (0..2000); else 0 */
	F_APPARMOR = 49, /* exec: the AppArmor profile the process is started under */
	F_CAPS_INH = 50, /* exec: the process's inheritable set (a mask; within F_CAPS) */
	F_CAPS_AMB = 51, /* exec: its ambient set (a mask; within F_CAPS and F_CAPS_INH): what a
			  * process that is not root keeps through its exec */
	F_NNP = 52, /* exec: set no_new_privs for the process (an init started without it:
		     * an OCI container run as a container engine's default) */
};

/* Stdin is credit-based: the host keeps at most STDIN_WINDOW bytes sent
 * and not yet acknowledged, so init never has to stop reading a client
 * (which would also hold back its signals) to bound its memory. */
#define STDIN_WINDOW (1u << 20)

#define FS_PARENTS 1u /* FS_WRITE: make missing parent folders */
#define FS_RECURSIVE 1u /* FS_WATCH: sub-folders too (new ones included) */
enum { FS_EV_CREATE = 1, FS_EV_WRITE = 2, FS_EV_REMOVE = 3, FS_EV_RENAME = 4, FS_EV_CHMOD = 5 };
enum { FS_TYPE_FILE = 1, FS_TYPE_DIR = 2, FS_TYPE_SYMLINK = 3, FS_TYPE_OTHER = 4 };

/* F_FLAGS of MSG_REQ_EXEC */
#define EXEC_STDIN (1u << 0)   /* keep a stdin pipe open (else /dev/null) */
#define EXEC_ONESHOT (1u << 1) /* init exits when this process ends */
#define EXEC_HELD (1u << 2) /* an OCI container's process: kept until MSG_REQ_START */
#define EXEC_FDS (1u << 3) /* its stdin, stdout, stderr: the three fds the request carries */
#define EXEC_BOUND (1u << 4) /* killed (its group, SIGKILL) when the client that started it goes */
#define EXEC_TTY (1u << 5) /* the one fd the request carries is its terminal (stdio, controlling tty) */
/* F_FLAGS of MSG_REQ_SET_TIMEOUT: the commands' own timeouts stand still
 * (the sandbox is about to be frozen) or run again (it was thawed) */
#define CLOCKS_STOP (1u << 0)
#define CLOCKS_RUN (1u << 1)
/* F_FLAGS of MSG_EV_END */
#define END_TIMED_OUT (1u << 0) /* init killed it at its F_TIMEOUT_MS */
/* the OOM killer struck during it: never from init (the host counts OOM
 * kills itself), set by the remote backend from aboxd's end error */
#define END_OOM_KILLED (1u << 1)
/* The words of an OOM end's error (local/proc.c writes them, aboxd
 * passes them on, the remote backend reads them back). */
#define END_OOM_WORDS ": out of memory"

/* abox-init command line: abox-init [flags]; fd 3 is the listening socket.
 * Flags: "ephemeral" = the sandbox ends when its first host connection
 * closes (abox run); "timeout_ms=N" = it ends N ms from now. A sandbox
 * that is not ephemeral still dies with its creator until MSG_REQ_DETACH:
 * a create killed half-way leaves no live sandbox behind. */
#define INIT_LISTEN_FD 3
/* O_PATH fd on the writable layer's tmpfs (for disk use). */
#define INIT_LAYER_FD 4
/* Where init places its commands (see cgroup_cmds_fd), when the sandbox
 * has a commands' cgroup: the v1 "tasks" file or the v2 directory. Absent
 * (closed) otherwise. */
#define INIT_CMDS_FD 5
/* With a user namespace (spawn.c hand_over_confinement): init starts as
 * the host's first id of the sandbox's range, outside the namespace, and
 * confines itself before anything else (init/confine.c): it joins the
 * namespace (INIT_USERNS_FD), takes on the capabilities and the seccomp
 * program read from INIT_CONFINE_FD (a struct init_confine, then bpf_len
 * struct sock_filter), and closes INIT_ERR_FD, the sandbox child's error
 * pipe, after writing an abox_error to it when it could not. Absent
 * (closed) without a user namespace: the child confined init itself. */
#define INIT_USERNS_FD 6
#define INIT_CONFINE_FD 7
#define INIT_ERR_FD 8
#define INIT_CONFINE_MAGIC 0x61626f78u /* "abox" */
struct init_confine {
	uint32_t magic;
	uint32_t last_cap;
	uint64_t caps_keep;
	uint32_t bpf_len;
	uint32_t flags; /* INIT_CONFINE_* */
};
/* an OCI container run as a container engine's default (spawn.h no_nnp,
 * keep_admin): no no_new_privs, so init installs its filter while it
 * holds CAP_SYS_ADMIN in the namespace, and keeps that one in its
 * permitted set alone for its children's profiles */
#define INIT_CONFINE_NO_NNP 1u
#define INIT_CONFINE_KEEP_ADMIN 2u

/* Re-arming init after a checkpoint (restored, or the dump failed): the
 * host listens on the abstract unix socket "\0" INIT_REARM_NAME TOKEN in
 * the sandbox's network namespace and sends init SIGUSR2; init connects
 * and receives one byte with two or three fds (SCM_RIGHTS): its new
 * listening socket, the writable layer's folder and, when the sandbox has
 * one, the commands' cgroup (INIT_CMDS_FD). The host checks the peer's pid
 * (SO_PEERCRED), so a process of the sandbox that races for the name gets
 * nothing. */
#define INIT_REARM_NAME "abox-rearm-"
#define INIT_REARM_SIGNAL SIGUSR2

#endif
