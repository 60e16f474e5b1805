/* The least a rail plugin can do, for scripts/bench.sh: ADD moves the host
 * link named by the config's "device" into the pod as CNI_IFNAME, DEL moves
 * it back under its name; nothing else (no addresses, no state, no checks).
 * Run through libcni 8 times a pod, it is the floor under any plugin that
 * moves one link per exec, as Multus runs them: an exec's gap between two
 * namespace moves costs what it costs whatever the plugin does.
 *
 * "cpuUs": N spins N microseconds on the CPU after an ADD's move: a plugin's
 * own work, if only its time counted (the bench's check on whether a
 * per-rail gap is charged by the millisecond or by the tick).
 *
 * "address" (with "gateway", "table", "railCidr" and "route") adds the
 * kernel work of a rail, as railcni asks it and the bench's ip batches do
 * it: ADD moves with MTU 9000 in the move's message, then in the pod brings
 * the link up, adds the /31 address, the scoped /31 and "route" via the
 * gateway in "table", "railCidr" via the gateway in main, and the source
 * rule (priority = table); DEL removes the rule, takes the link down and
 * moves it home with MTU 1500. The floor under any plugin that does one
 * rail's whole job per exec, with no state, IPAM or checks of its own. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/fib_rules.h>
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
  union {
    struct ifinfomsg link;
    struct ifaddrmsg addr;
    struct rtmsg route;
    struct fib_rule_hdr rule;
  } body;
  char attrs[256];
};

static void start(struct request *r, unsigned short type, unsigned short flags, size_t body) {
  memset(r, 0, sizeof *r);
  r->header.nlmsg_len = NLMSG_LENGTH(body);
  r->header.nlmsg_type = type;
  r->header.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
}

static void attr(struct request *r, unsigned short type, const void *data, size_t len) {
  struct rtattr *a = (struct rtattr *)((char *)r + NLMSG_ALIGN(r->header.nlmsg_len));
  a->rta_type = type;
  a->rta_len = RTA_LENGTH(len);
  memcpy(RTA_DATA(a), data, len);
  r->header.nlmsg_len = NLMSG_ALIGN(r->header.nlmsg_len) + RTA_ALIGN(a->rta_len);
}

/* Send one request on a fresh socket of the current namespace; 0 or -errno. */
static int exchange(struct request *r) {
  int sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (sock < 0 || send(sock, r, r->header.nlmsg_len, 0) < 0) return -1;
  char reply[512];
  ssize_t n = recv(sock, reply, sizeof reply, 0);
  close(sock);
  struct nlmsghdr *h = (struct nlmsghdr *)reply;
  if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) || h->nlmsg_type != NLMSG_ERROR) return -1;
  return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
}

/* Move link `from` of the current namespace into namespace `ns` as `to`
 * (with `mtu` in the same message unless 0). */
static int move(const char *from, int ns, const char *to, unsigned mtu) {
  unsigned index = if_nametoindex(from);
  if (index == 0) return -1;
  struct request r;
  start(&r, RTM_NEWLINK, 0, sizeof r.body.link);
  r.body.link.ifi_index = (int)index;
  unsigned fd32 = (unsigned)ns;
  attr(&r, IFLA_NET_NS_FD, &fd32, sizeof fd32);
  attr(&r, IFLA_IFNAME, to, strlen(to) + 1);
  if (mtu) attr(&r, IFLA_MTU, &mtu, sizeof mtu);
  return exchange(&r);
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

/* The string value of "key" in the config ("" without it). */
static void text(const char *conf, const char *key, char *out, size_t size) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
  const char *at = strstr(conf, pattern);
  out[0] = 0;
  if (!at) return;
  at += strlen(pattern);
  size_t n = 0;
  while (at[n] && at[n] != '"' && n + 1 < size) n++;
  memcpy(out, at, n);
  out[n] = 0;
}

struct rail {
  struct in_addr address, gateway, rail_net, dst;
  int rail_len, dst_len;
  unsigned table;
};

static int prefix(const char *cidr, struct in_addr *net, int *len) {
  char ip[32];
  return sscanf(cidr, "%31[^/]/%d", ip, len) == 2 && inet_pton(AF_INET, ip, net) == 1 ? 0 : -1;
}

/* The rail from the config; 1 when there is one, 0 when not, -1 when bad. */
static int rail_of(const char *conf, struct rail *rail) {
  char address[32], gateway[32], rail_cidr[40], route[40];
  text(conf, "address", address, sizeof address);
  if (!address[0]) return 0;
  text(conf, "gateway", gateway, sizeof gateway);
  text(conf, "railCidr", rail_cidr, sizeof rail_cidr);
  text(conf, "route", route, sizeof route);
  const char *table = strstr(conf, "\"table\":");
  if (!table || inet_pton(AF_INET, address, &rail->address) != 1 ||
      inet_pton(AF_INET, gateway, &rail->gateway) != 1 ||
      prefix(rail_cidr, &rail->rail_net, &rail->rail_len) != 0 || prefix(route, &rail->dst, &rail->dst_len) != 0)
    return -1;
  rail->table = (unsigned)strtoul(table + 8, NULL, 10);
  return 1;
}

static int add_route(unsigned index, struct in_addr dst, int len, const struct in_addr *via,
                     const struct in_addr *src, unsigned table) {
  struct request r;
  start(&r, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, sizeof r.body.route);
  r.body.route.rtm_family = AF_INET;
  r.body.route.rtm_dst_len = (unsigned char)len;
  r.body.route.rtm_protocol = RTPROT_BOOT;
  r.body.route.rtm_scope = via ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK;
  r.body.route.rtm_type = RTN_UNICAST;
  attr(&r, RTA_TABLE, &table, sizeof table);
  attr(&r, RTA_DST, &dst, sizeof dst);
  if (via) attr(&r, RTA_GATEWAY, via, sizeof *via);
  if (src) attr(&r, RTA_PREFSRC, src, sizeof *src);
  attr(&r, RTA_OIF, &index, sizeof index);
  return exchange(&r);
}

static int rule(unsigned short type, const struct rail *rail) {
  struct request r;
  start(&r, type, type == RTM_NEWRULE ? NLM_F_CREATE | NLM_F_EXCL : 0, sizeof r.body.rule);
  r.body.rule.family = AF_INET;
  r.body.rule.src_len = 32;
  r.body.rule.action = FR_ACT_TO_TBL;
  attr(&r, FRA_SRC, &rail->address, sizeof rail->address);
  attr(&r, FRA_TABLE, &rail->table, sizeof rail->table);
  attr(&r, FRA_PRIORITY, &rail->table, sizeof rail->table);
  return exchange(&r);
}

static int set_up(unsigned index, int up) {
  struct request r;
  start(&r, RTM_NEWLINK, 0, sizeof r.body.link);
  r.body.link.ifi_index = (int)index;
  r.body.link.ifi_flags = up ? IFF_UP : 0;
  r.body.link.ifi_change = IFF_UP;
  return exchange(&r);
}

/* In the pod, after the move: up, address, routes, rule. */
static int configure(const char *ifname, const struct rail *rail) {
  unsigned index = if_nametoindex(ifname);
  if (index == 0 || set_up(index, 1) != 0) return -1;
  struct request r;
  start(&r, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, sizeof r.body.addr);
  r.body.addr.ifa_family = AF_INET;
  r.body.addr.ifa_prefixlen = 31;
  r.body.addr.ifa_index = index;
  attr(&r, IFA_LOCAL, &rail->address, sizeof rail->address);
  attr(&r, IFA_ADDRESS, &rail->address, sizeof rail->address);
  if (exchange(&r) != 0) return -1;
  struct in_addr own = {rail->address.s_addr & htonl(0xfffffffeu)};
  if (add_route(index, own, 31, NULL, &rail->address, rail->table) != 0 ||
      add_route(index, rail->dst, rail->dst_len, &rail->gateway, NULL, rail->table) != 0 ||
      add_route(index, rail->rail_net, rail->rail_len, &rail->gateway, NULL, RT_TABLE_MAIN) != 0)
    return -1;
  return rule(RTM_NEWRULE, rail);
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
  char device[IF_NAMESIZE];
  text(conf, "device", device, sizeof device);
  long cpu_us = 0;
  const char *cpu = strstr(conf, "\"cpuUs\":");
  if (cpu) cpu_us = strtol(cpu + 8, NULL, 10);
  struct rail rail;
  int has_rail = rail_of(conf, &rail);
  if (!cmd || !netns || !ifname || !device[0] || has_rail < 0) return 1;
  int pod = open(netns, O_RDONLY | O_CLOEXEC);
  int host = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  if (pod < 0 || host < 0) return 1;
  if (strcmp(cmd, "ADD") == 0) {
    if (move(device, pod, ifname, has_rail ? 9000 : 0) != 0) return 1;
    if (has_rail && (setns(pod, CLONE_NEWNET) != 0 || configure(ifname, &rail) != 0)) return 1;
    spin(cpu_us);
    puts("{\"cniVersion\":\"1.0.0\"}");
  } else if (strcmp(cmd, "DEL") == 0) {
    if (setns(pod, CLONE_NEWNET) != 0) return 1;
    if (has_rail) {
      unsigned index = if_nametoindex(ifname);
      rule(RTM_DELRULE, &rail); /* gone already is fine: DEL is idempotent */
      if (index) set_up(index, 0);
    }
    move(ifname, host, device, has_rail ? 1500 : 0); /* DEL of a link already home succeeds */
  }
  return 0;
}
