//! railcnictl: every command a person or the DaemonSet runs on a node
//! (status, inspect, gc, ipam repair, nccl-env, plan, probe, metrics, agent,
//! install). The plugin itself is `railcni`.

fn main() {
    railcnictl::cli::main();
}
