// libcni-bench times ADD and DEL through containernetworking's libcni, the
// way runtimes call plugins, for scripts/bench.sh.
//
//	libcni-bench single <plugin-dir> <netns> <cycles> <warmup> <A.conflist> <B.conflist>...
//	    one network on net1
//	libcni-bench pod <plugin-dir> <netns> <cycles> <warmup> <A-dir> <B-dir>...
//	    every conflist of a dir in name order as net1..netN, Multus-style
//	    (serially), then DEL in reverse
//
//	libcni-bench version <cycles> <plugin>...
//	    exec each plugin with CNI_COMMAND=VERSION the way libcni does (stdin
//	    the config, stdout captured), taking turns; prints {"<plugin>": [ns...]}
//
//	libcni-bench counting <cycles> <plugin> <state-dir>
//	    exec the plugin's DEL of an attachment it never had (no record, no
//	    IPAM: the cheapest call that still counts), taking turns with
//	    RAILCNI_STATS=off and on; prints {"off": [ns...], "on": [ns...]}
//
//	libcni-bench floor <pod-netns> <in-host> <in-pod> <out-pod> <out-host>
//	    one cycle of the kernel-work floor: "ip -batch <file>" exec'd the way
//	    libcni execs a plugin, in this process's netns (the host's) or in
//	    the pod's ("-" skips one); prints {"add": [ns], "del": [ns]}
//
//	libcni-bench pairs <cycles> <plugin> <netns> <conf>...
//	    ADD then DEL of each config (stdin through a pipe, as libcni and
//	    Multus pass it), taking turns; prints {"<conf>": {"add": [ns...],
//	    "del": [ns...], "pair": [ns...], "moves": [ns...]}}, "moves" being
//	    what the plugin's closing log lines say the kernel's namespace moves
//	    took (railcni only)
//
// The sets take turns within every cycle, and which goes first rotates from
// cycle to cycle (interleaved), starting from set BENCH_FIRST (0 unless set:
// a caller running one cycle per process passes its own cycle count, because
// the first pod of a fresh process was measured slower than the rest, about
// 5 ms in 8 rails, whatever the set). Prints {"A": {"add": [ns...], "del":
// [ns...]}, "B": {...}, ...} on stdout, one letter per set in argument order.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/containernetworking/cni/libcni"
)

type timings struct {
	Add []int64 `json:"add"`
	Del []int64 `json:"del"`
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

func load(paths []string) []*libcni.NetworkConfigList {
	var lists []*libcni.NetworkConfigList
	for _, p := range paths {
		l, err := libcni.ConfListFromFile(p)
		if err != nil {
			fail(err)
		}
		lists = append(lists, l)
	}
	return lists
}

func dir(d string) []string {
	files, err := filepath.Glob(filepath.Join(d, "*.conflist"))
	if err != nil {
		fail(err)
	}
	sort.Strings(files)
	return files
}

// execVersion times VERSION execs of each plugin, interleaved: what a
// runtime pays per exec, without a shell's fork in the way.
func execVersion(cycles int, plugins []string) {
	out := map[string][]int64{}
	stdin := []byte(`{"cniVersion":"1.1.0"}`)
	for c := 0; c < cycles; c++ {
		for _, p := range plugins {
			cmd := exec.Command(p)
			cmd.Env = []string{"CNI_COMMAND=VERSION"}
			cmd.Stdin = bytes.NewReader(stdin)
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			t0 := time.Now()
			if err := cmd.Run(); err != nil {
				fail(fmt.Errorf("VERSION of %s: %w", p, err))
			}
			out[p] = append(out[p], time.Since(t0).Nanoseconds())
		}
	}
	json.NewEncoder(os.Stdout).Encode(out)
}

// execCounting times the same call with the plugin's call counting off and
// on, interleaved: what counting adds to a CNI call.
func execCounting(cycles int, plugin, stateDir string) {
	out := map[string][]int64{}
	stdin := []byte(`{"cniVersion":"1.1.0","name":"bench-counting","type":"railcni"}`)
	for c := 0; c < cycles; c++ {
		for k := 0; k < 2; k++ {
			mode := []string{"off", "on"}[(c+k)%2]
			cmd := exec.Command(plugin)
			cmd.Env = []string{"CNI_COMMAND=DEL", "CNI_CONTAINERID=counting", "CNI_IFNAME=net1",
				"RAILCNI_STATE_DIR=" + stateDir, "RAILCNI_LOG_DIR=" + stateDir, "RAILCNI_STATS=" + mode}
			cmd.Stdin = bytes.NewReader(stdin)
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			t0 := time.Now()
			if err := cmd.Run(); err != nil {
				fail(fmt.Errorf("DEL of %s: %w: %s", plugin, err, stdout.String()))
			}
			out[mode] = append(out[mode], time.Since(t0).Nanoseconds())
		}
	}
	json.NewEncoder(os.Stdout).Encode(out)
}

// setns(2) on x86_64 (Go's syscall package does not name it).
const sysSetns = 308

// inNetns runs f on this goroutine's OS thread switched into the netns at
// path: a child exec'd from there starts in that netns.
func inNetns(path string, f func()) {
	if runtime.GOARCH != "amd64" {
		fail(fmt.Errorf("the floor needs setns(2), wired for amd64 only"))
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		fail(err)
	}
	defer self.Close()
	target, err := os.Open(path)
	if err != nil {
		fail(err)
	}
	defer target.Close()
	setns := func(fd uintptr) {
		if _, _, e := syscall.RawSyscall(sysSetns, fd, syscall.CLONE_NEWNET, 0); e != 0 {
			fail(fmt.Errorf("setns: %v", e))
		}
	}
	setns(target.Fd())
	defer setns(self.Fd())
	f()
}

// batch execs "ip -batch <file>" (in the pod's netns if inPod); "-" is nothing.
func batch(podNetns, file string, inPod bool) int64 {
	if file == "-" {
		return 0
	}
	var took int64
	run := func() {
		cmd := exec.Command("ip", "-batch", file)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			fail(fmt.Errorf("ip -batch %s: %w: %s", file, err, stderr.String()))
		}
		took = time.Since(t0).Nanoseconds()
	}
	if inPod {
		inNetns(podNetns, run)
	} else {
		run()
	}
	return took
}

func floor(podNetns, inHost, inPod, outPod, outHost string) {
	add := batch(podNetns, inHost, false) + batch(podNetns, inPod, true)
	del := batch(podNetns, outPod, true) + batch(podNetns, outHost, false)
	json.NewEncoder(os.Stdout).Encode(timings{Add: []int64{add}, Del: []int64{del}})
}

var tookLine = regexp.MustCompile(`took [0-9.]+ ms(?: \(([0-9.]+) ms of it)?`)

// movedNs is what the plugin's closing log line says the kernel's namespace
// move took, in ns (0 without such a line).
func movedNs(stderr []byte) int64 {
	m := tookLine.FindSubmatch(stderr)
	if m == nil {
		return 0
	}
	moved, _ := strconv.ParseFloat(string(m[1]), 64)
	return int64(moved * 1e6)
}

type pairTimings struct {
	Add   []int64 `json:"add"`
	Del   []int64 `json:"del"`
	Pair  []int64 `json:"pair"`
	Moves []int64 `json:"moves"`
}

// pairs times ADD then DEL of each config, interleaved, stdin through a pipe.
func pairs(cycles int, plugin, netns string, confs []string) {
	out := map[string]*pairTimings{}
	stdins := make([][]byte, len(confs))
	for i, c := range confs {
		b, err := os.ReadFile(c)
		if err != nil {
			fail(err)
		}
		stdins[i] = b
		out[c] = &pairTimings{}
	}
	call := func(verb string, stdin []byte) ([]byte, int64) {
		cmd := exec.Command(plugin)
		cmd.Env = append(os.Environ(), "CNI_COMMAND="+verb, "CNI_CONTAINERID=pairs", "CNI_NETNS="+netns,
			"CNI_IFNAME=net1", "CNI_PATH="+filepath.Dir(plugin))
		cmd.Stdin = bytes.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			fail(fmt.Errorf("%s of %s: %w: %s", verb, plugin, err, stdout.String()))
		}
		return stderr.Bytes(), time.Since(t0).Nanoseconds()
	}
	for c := 0; c < cycles; c++ {
		for k := range confs {
			i := (c + k) % len(confs)
			addLog, add := call("ADD", stdins[i])
			delLog, del := call("DEL", stdins[i])
			out[confs[i]].Add = append(out[confs[i]].Add, add)
			out[confs[i]].Del = append(out[confs[i]].Del, del)
			out[confs[i]].Pair = append(out[confs[i]].Pair, add+del)
			out[confs[i]].Moves = append(out[confs[i]].Moves, movedNs(addLog)+movedNs(delLog))
		}
	}
	json.NewEncoder(os.Stdout).Encode(out)
}

func main() {
	if len(os.Args) == 7 && os.Args[1] == "floor" {
		floor(os.Args[2], os.Args[3], os.Args[4], os.Args[5], os.Args[6])
		return
	}
	if len(os.Args) >= 6 && os.Args[1] == "pairs" {
		cycles, _ := strconv.Atoi(os.Args[2])
		pairs(cycles, os.Args[3], os.Args[4], os.Args[5:])
		return
	}
	if len(os.Args) == 5 && os.Args[1] == "counting" {
		cycles, _ := strconv.Atoi(os.Args[2])
		execCounting(cycles, os.Args[3], os.Args[4])
		return
	}
	if len(os.Args) >= 4 && os.Args[1] == "version" {
		cycles, _ := strconv.Atoi(os.Args[2])
		execVersion(cycles, os.Args[3:])
		return
	}
	if len(os.Args) < 7 || len(os.Args) > 6+26 {
		fail(fmt.Errorf("usage: libcni-bench single|pod <plugin-dir> <netns> <cycles> <warmup> <A> [<B>...]"))
	}
	mode, pluginDir, netns := os.Args[1], os.Args[2], os.Args[3]
	cycles, _ := strconv.Atoi(os.Args[4])
	warmup, _ := strconv.Atoi(os.Args[5])
	n := len(os.Args) - 6
	sets := make([][]*libcni.NetworkConfigList, n)
	names := make([]string, n)
	out := map[string]*timings{}
	for i, arg := range os.Args[6:] {
		switch mode {
		case "single":
			sets[i] = load([]string{arg})
		case "pod":
			sets[i] = load(dir(arg))
		default:
			fail(fmt.Errorf("unknown mode %s", mode))
		}
		names[i] = string(rune('A' + i))
		out[names[i]] = &timings{}
	}
	cni := libcni.NewCNIConfig([]string{pluginDir}, nil)
	ctx := context.Background()
	first, _ := strconv.Atoi(os.Getenv("BENCH_FIRST"))
	for c := 0; c < warmup+cycles; c++ {
		for k := 0; k < n; k++ {
			s := (c + first + k) % n // rotate which set goes first
			rts := make([]*libcni.RuntimeConf, len(sets[s]))
			for i := range sets[s] {
				rts[i] = &libcni.RuntimeConf{
					ContainerID: fmt.Sprintf("bench-%d", c),
					NetNS:       netns,
					IfName:      fmt.Sprintf("net%d", i+1),
					Args:        [][2]string{{"IgnoreUnknown", "true"}, {"K8S_POD_NAMESPACE", "bench"}, {"K8S_POD_NAME", "trainer"}},
				}
			}
			t0 := time.Now()
			for i, l := range sets[s] {
				if _, err := cni.AddNetworkList(ctx, l, rts[i]); err != nil {
					fail(fmt.Errorf("%s ADD %s: %w", names[s], l.Name, err))
				}
			}
			add := time.Since(t0).Nanoseconds()
			t1 := time.Now()
			for i := len(sets[s]) - 1; i >= 0; i-- {
				if err := cni.DelNetworkList(ctx, sets[s][i], rts[i]); err != nil {
					fail(fmt.Errorf("%s DEL %s: %w", names[s], sets[s][i].Name, err))
				}
			}
			del := time.Since(t1).Nanoseconds()
			if c >= warmup {
				out[names[s]].Add = append(out[names[s]].Add, add)
				out[names[s]].Del = append(out[names[s]].Del, del)
			}
		}
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
