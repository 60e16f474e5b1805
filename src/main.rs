//! railcni: the CNI plugin that attaches SR-IOV rail VFs to AI training pods.
//! Runtimes exec it with `CNI_COMMAND` set; everything a person or the
//! DaemonSet runs is in `railcnictl`.

fn main() {
    if cni::is_cni_invocation() {
        std::process::exit(railcni::run::cni_main());
    }
    eprintln!(
        "railcni {} is a CNI plugin: container runtimes run it with CNI_COMMAND set and the network config on stdin.",
        env!("CARGO_PKG_VERSION")
    );
    eprintln!("The operator commands (status, inspect, gc, probe, metrics, doctor, ...) are in railcnictl; see `railcnictl --help`.");
    std::process::exit(2);
}
