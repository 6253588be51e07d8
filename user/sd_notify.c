// SPDX-License-Identifier: MIT
/* The sd_notify(3) protocol: one datagram with "KEY=VALUE" lines sent to
 * the socket systemd names in $NOTIFY_SOCKET. */
#include "sd_notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int sd_notify_state(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	size_t len;
	socklen_t addrlen;
	int fd, err = 0;

	if (!path || !*path)
		return 1;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(addr.sun_path))
		return -EINVAL;
	memcpy(addr.sun_path, path, len);
	if (path[0] == '@')
		addr.sun_path[0] = '\0'; /* abstract namespace */
	addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL,
		   (struct sockaddr *)&addr, addrlen) < 0)
		err = -errno;
	close(fd);
	return err;
}

void sd_notify_ready(void)
{
	int err = sd_notify_state("READY=1");

	if (err < 0)
		fprintf(stderr, "pmetrics: cannot notify systemd at $NOTIFY_SOCKET: %s\n",
			strerror(-err));
}
