/* SPDX-License-Identifier: MIT */
/* systemd readiness without libsystemd (Type=notify services). */
#ifndef PMETRICS_SD_NOTIFY_H
#define PMETRICS_SD_NOTIFY_H

/* Sends "READY=1" to $NOTIFY_SOCKET (a unix datagram socket; a leading
 * '@' names an abstract socket). Does nothing when the variable is unset;
 * a failure is reported on stderr once and is not fatal. */
void sd_notify_ready(void);

/* The same for any state string; returns 0, 1 when NOTIFY_SOCKET is
 * unset, or -errno. */
int sd_notify_state(const char *state);

#endif
