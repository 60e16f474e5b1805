// libcni-driver runs a conflist through containernetworking's libcni, the
// library container runtimes use: ADD, CHECK, DEL, DEL again.
//
//	libcni-driver <plugin-dir> <conflist.json> <netns-path> <container-id>
//
// It prints the ADD result as JSON on stdout and exits non-zero on any error.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/containernetworking/cni/libcni"
)

func fail(step string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", step, err)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 5 {
		fail("usage", fmt.Errorf("libcni-driver <plugin-dir> <conflist> <netns> <container-id>"))
	}
	list, err := libcni.ConfListFromFile(os.Args[2])
	if err != nil {
		fail("load conflist", err)
	}
	cni := libcni.NewCNIConfig([]string{os.Args[1]}, nil)
	rt := &libcni.RuntimeConf{
		ContainerID: os.Args[4],
		NetNS:       os.Args[3],
		IfName:      "net1",
		Args:        [][2]string{{"IgnoreUnknown", "true"}, {"K8S_POD_NAME", "trainer-0"}},
	}
	ctx := context.Background()
	res, err := cni.AddNetworkList(ctx, list, rt)
	if err != nil {
		fail("ADD", err)
	}
	if err := cni.CheckNetworkList(ctx, list, rt); err != nil {
		fail("CHECK", err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		fail("encode result", err)
	}
	if err := cni.DelNetworkList(ctx, list, rt); err != nil {
		fail("DEL", err)
	}
	if err := cni.DelNetworkList(ctx, list, rt); err != nil {
		fail("DEL again", err)
	}
	fmt.Println(string(out))
}
