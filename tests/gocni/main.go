// A second real runtime client: containerd's go-cni (Debian's
// golang-github-containerd-go-cni-dev), as containerd's CRI plugin drives
// CNI. Loads every conflist in a directory (one per rail), then sets a pod
// up or removes it, printing what go-cni reports.
//
//	gocni-driver setup|remove <conf-dir> <bin-dir> <netns-path> <container-id>
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	gocni "github.com/containerd/go-cni"
)

func main() {
	if len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: gocni-driver setup|remove <conf-dir> <bin-dir> <netns> <id>")
		os.Exit(2)
	}
	mode, confDir, binDir, netns, id := os.Args[1], os.Args[2], os.Args[3], os.Args[4], os.Args[5]
	c, err := gocni.New(
		gocni.WithPluginDir([]string{binDir}),
		gocni.WithPluginConfDir(confDir),
		gocni.WithInterfacePrefix("net"),
		gocni.WithMinNetworkCount(1),
	)
	if err == nil {
		err = c.Load(gocni.WithAllConf)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
	ctx := context.Background()
	labels := gocni.WithLabels(map[string]string{
		"K8S_POD_NAMESPACE": "ml", "K8S_POD_NAME": "trainer-0", "IgnoreUnknown": "1",
	})
	switch mode {
	case "setup":
		r, err := c.SetupSerially(ctx, id, netns, labels)
		if err != nil {
			fmt.Fprintln(os.Stderr, "setup:", err)
			os.Exit(1)
		}
		out := map[string]interface{}{}
		for name, cfg := range r.Interfaces {
			var ips []string
			for _, ip := range cfg.IPConfigs {
				ips = append(ips, ip.IP.String())
			}
			out[name] = map[string]interface{}{"ips": ips, "mac": cfg.Mac, "sandbox": cfg.Sandbox}
		}
		json.NewEncoder(os.Stdout).Encode(map[string]interface{}{"interfaces": out})
	case "remove":
		if err := c.Remove(ctx, id, netns, labels); err != nil {
			fmt.Fprintln(os.Stderr, "remove:", err)
			os.Exit(1)
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", mode)
		os.Exit(2)
	}
}
