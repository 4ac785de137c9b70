/* sudo_wire — what the sandbox's `sudo` (src/sudo/) and abox-init
 * (src/init/sudo.c) say to each other: the abstract socket's name in the
 * sandbox's network namespace and the sizes both sides hold to. The
 * messages are described in src/init/sudo.c. */
#ifndef ABOX_BASE_SUDO_WIRE_H
#define ABOX_BASE_SUDO_WIRE_H

#define SUDO_SOCKET_NAME "abox-sudo"
#define SUDO_MAGIC "ABOXSUDO1"
#define SUDO_REQ_MAX 65536
/* sudo commands running at once; more callers wait in the backlog */
#define SUDO_MAX 32

#endif
