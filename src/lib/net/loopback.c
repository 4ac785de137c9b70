/* net/loopback.c — brings `lo` up with one ioctl pair: cheaper than a
 * netlink round trip on the create path, and async-signal-safe. */
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "net/net.h"

int net_loopback_up(abox_error *err)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return abox_error_set(err, errno, "net: socket");
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	int r = 0;
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		r = abox_error_set(err, errno, "net: get flags of lo");
	else if (!(ifr.ifr_flags & IFF_UP)) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
			r = abox_error_set(err, errno, "net: bring lo up");
	}
	close(fd);
	return r;
}
