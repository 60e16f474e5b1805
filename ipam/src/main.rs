//! `railcni-ipam`: the railcni_ipam library as a CNI IPAM plugin, for
//! sriov-cni, host-device, macvlan and any other plugin that delegates IPAM.
//! Results are the IPAM kind: `ips`, `routes`, `dns`, no `interfaces`.

use serde_json::Value;

use cni::args::{requested_ips, valid_attachments};
use cni::{Error, Request, Verb};
use railcni_ipam::{Holder, Ipam, IpamError, Released};

const HELP: &str = "railcni-ipam: railcni's per-node rail IPAM as a CNI IPAM plugin.

Runtimes and CNI plugins run it with CNI_COMMAND set and the network config on
stdin (\"ipam\": {\"type\": \"railcni-ipam\", \"cidr\": ..., ...}); see railcni's README.";

fn main() {
    if !cni::is_cni_invocation() {
        // A person at a terminal: never wait for stdin.
        let asked_help = std::env::args().skip(1).any(|a| a == "--help" || a == "-h");
        eprintln!("{HELP}");
        std::process::exit(if asked_help { 0 } else { 2 });
    }
    std::process::exit(cni::plugin_main("railcni-ipam", |request| {
        run(&request).inspect_err(|e| cni::log_error!("{e}"))
    }));
}

fn run(request: &Request) -> Result<Option<Value>, IpamError> {
    let conf = &request.config;
    let env = &request.env;
    let network = conf
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| Error::config("name", "is required"))?;
    let ipam_conf = conf
        .get("ipam")
        .ok_or_else(|| Error::config("ipam", "is required"))?;
    // The VF, as railcni finds it: runtimeConfig.deviceID > deviceID > pciBusID.
    let device = ["/runtimeConfig/deviceID", "/deviceID", "/pciBusID"]
        .iter()
        .find_map(|p| {
            conf.pointer(p)
                .and_then(Value::as_str)
                .filter(|d| !d.is_empty())
        });
    let statics = request.static_allocations.as_deref();
    let ipam = Ipam::load_split(network, ipam_conf, statics, &request.settings, device)?;
    match request.verb {
        Verb::Add => {
            let requested = requested_ips(conf, &env.args)?;
            let allocation = ipam.allocate(&Holder::of(env), &requested)?;
            for lease in &allocation.reclaimed {
                cni::log_info!("reclaimed {lease}");
            }
            Ok(Some(allocation.to_result().to_json(request.version)))
        }
        Verb::Del => {
            if let Released::StoreUnreadable(why) = ipam.release(&env.container_id, &env.ifname)? {
                cni::log_error!("DEL cannot release: {why}");
            }
            Ok(None)
        }
        Verb::Check => ipam.check(&env.container_id, &env.ifname).map(|_| None),
        Verb::Gc => ipam.gc(&valid_attachments(conf)?).map(|_| None),
        Verb::Status => ipam
            .status()
            .map(|()| None)
            .map_err(|e| Error::Unavailable(e.to_string()).into()),
    }
}
