/* The cheapest CNI plugin there is, for scripts/bench.sh: it reads its
 * config and answers ADD and VERSION with a minimal reply, so running it
 * through libcni measures what the harness and one exec cost on their own
 * (the floor under every plugin's time), and its VERSION is the exec floor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void) {
  char buf[4096];
  while (read(0, buf, sizeof buf) > 0) {
  }
  const char *cmd = getenv("CNI_COMMAND");
  if (cmd == NULL) return 1;
  if (strcmp(cmd, "ADD") == 0) fputs("{\"cniVersion\":\"1.0.0\"}\n", stdout);
  if (strcmp(cmd, "VERSION") == 0)
    fputs("{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"1.0.0\"]}\n", stdout);
  return 0;
}
