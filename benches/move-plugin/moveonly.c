/* The least a rail plugin can do, for scripts/bench.sh: ADD moves the host
 * link named by the config's "device" into the pod as CNI_IFNAME, DEL moves
 * it back under its name; nothing else (no addresses, no state, no checks).
 * Run through libcni 8 times a pod, it is the floor under any plugin that
 * moves one link per exec, as Multus runs them: an exec's gap between two
 * namespace moves costs what it costs whatever the plugin does.
 * "cpuUs": N in the config spins N microseconds on the CPU after an ADD's
 * move: a plugin's own work, if only its time counted (the bench's check
 * on whether a per-rail gap is charged by the millisecond or by the tick). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct request {
  struct nlmsghdr header;
  struct ifinfomsg link;
  char attrs[256];
};

static void attr(struct request *r, unsigned short type, const void *data, size_t len) {
  struct rtattr *a = (struct rtattr *)((char *)r + NLMSG_ALIGN(r->header.nlmsg_len));
  a->rta_type = type;
  a->rta_len = RTA_LENGTH(len);
  memcpy(RTA_DATA(a), data, len);
  r->header.nlmsg_len = NLMSG_ALIGN(r->header.nlmsg_len) + RTA_ALIGN(a->rta_len);
}

/* Move link `from` of the current namespace into namespace `ns` as `to`. */
static int move(const char *from, int ns, const char *to) {
  unsigned index = if_nametoindex(from);
  if (index == 0) return -1;
  struct request r = {0};
  r.header.nlmsg_len = NLMSG_LENGTH(sizeof r.link);
  r.header.nlmsg_type = RTM_NEWLINK;
  r.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  r.link.ifi_family = AF_UNSPEC;
  r.link.ifi_index = (int)index;
  unsigned fd32 = (unsigned)ns;
  attr(&r, IFLA_NET_NS_FD, &fd32, sizeof fd32);
  attr(&r, IFLA_IFNAME, to, strlen(to) + 1);
  int sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (sock < 0 || send(sock, &r, r.header.nlmsg_len, 0) < 0) return -1;
  char reply[512];
  ssize_t n = recv(sock, reply, sizeof reply, 0);
  close(sock);
  struct nlmsghdr *h = (struct nlmsghdr *)reply;
  if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) || h->nlmsg_type != NLMSG_ERROR) return -1;
  return ((struct nlmsgerr *)NLMSG_DATA(h))->error == 0 ? 0 : -1;
}

static long micros_since(const struct timespec *from) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (now.tv_sec - from->tv_sec) * 1000000L + (now.tv_nsec - from->tv_nsec) / 1000;
}

/* Busy, not asleep: the CPU stays taken, as a plugin's own work takes it. */
static void spin(long us) {
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (micros_since(&start) < us) {
  }
}

int main(void) {
  static char conf[65536];
  size_t len = 0;
  ssize_t n;
  while (len < sizeof conf - 1 && (n = read(0, conf + len, sizeof conf - 1 - len)) > 0) len += (size_t)n;
  const char *cmd = getenv("CNI_COMMAND"), *netns = getenv("CNI_NETNS"), *ifname = getenv("CNI_IFNAME");
  if (cmd && strcmp(cmd, "VERSION") == 0) {
    puts("{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"1.0.0\"]}");
    return 0;
  }
  char device[IF_NAMESIZE] = "";
  const char *at = strstr(conf, "\"device\":\"");
  if (at) sscanf(at + 10, "%15[^\"]", device);
  long cpu_us = 0;
  const char *cpu = strstr(conf, "\"cpuUs\":");
  if (cpu) cpu_us = strtol(cpu + 8, NULL, 10);
  if (!cmd || !netns || !ifname || !device[0]) return 1;
  int pod = open(netns, O_RDONLY | O_CLOEXEC);
  if (pod < 0) return 1;
  if (strcmp(cmd, "ADD") == 0) {
    if (move(device, pod, ifname) != 0) return 1;
    spin(cpu_us);
    puts("{\"cniVersion\":\"1.0.0\"}");
  } else if (strcmp(cmd, "DEL") == 0) {
    int host = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (host < 0 || setns(pod, CLONE_NEWNET) != 0) return 1;
    move(ifname, host, device); /* DEL of a link already home succeeds */
  }
  return 0;
}
