//! `railcni-ipam`: the railcni_ipam library as a CNI IPAM plugin, for
//! sriov-cni, host-device, macvlan and any other plugin that delegates IPAM.
//! Results are the IPAM kind: `ips`, `routes`, `dns`, no `interfaces`.

use serde_json::Value;

use base::node_file::NodeFile;
use cni::args::{requested_ips, valid_attachments};
use cni::{Error, Reply, Request, Verb};
use railcni_ipam::{Holder, Ipam, IpamError, Released};

const HELP: &str = concat!(
    "railcni-ipam ",
    env!("CARGO_PKG_VERSION"),
    ": railcni's per-node rail IPAM as a CNI IPAM plugin.

Runtimes and CNI plugins run it with CNI_COMMAND set and the network config on
stdin (\"ipam\": {\"type\": \"railcni-ipam\", \"cidr\": ..., ...}); see railcni's README."
);

fn main() {
    if !cni::is_cni_invocation() {
        // A person at a terminal: never wait for stdin.
        let asked_help = std::env::args().skip(1).any(|a| a == "--help" || a == "-h");
        eprintln!("{HELP}");
        std::process::exit(if asked_help { 0 } else { 2 });
    }
    let settings = base::Settings::from_env();
    std::process::exit(base::plugin::run(
        "railcni-ipam",
        railcni_ipam::inline::read_config,
        &settings,
        |request| match run(&request, &settings) {
            // Refused input (config, version, decode): as ADD would.
            Err(e) if request.verb == Verb::Del && matches!(e.code(), 1 | 2 | 4 | 6 | 7) => {
                release_refused(
                    &settings,
                    &request.config,
                    &request.env.container_id,
                    &request.env.ifname,
                    &e,
                )
                .map(|()| None)
            }
            other => other,
        },
        |refused| {
            let Some(config) = &refused.config else {
                base::log_warn!(
                    "DEL with no readable config ({}): nothing to release",
                    refused.error
                );
                return Ok(());
            };
            let why = IpamError::from(refused.error.clone());
            release_refused(
                &settings,
                config,
                &refused.container_id,
                &refused.ifname,
                &why,
            )
        },
    ));
}

/// DEL with an input ADD refuses: the lease file is the network's, so the
/// attachment's lease (if any) is released by the network's name alone,
/// whatever the pool config says; no lease, nothing to do. A failed DEL
/// would strand the runtime's sandbox.
fn release_refused(
    settings: &base::Settings,
    config: &Value,
    container_id: &str,
    ifname: &str,
    why: &IpamError,
) -> Result<(), IpamError> {
    base::log_warn!(
        "DEL with an input ADD would refuse ({why}); releasing only this attachment's lease"
    );
    let network = config.get("name").and_then(Value::as_str).unwrap_or("");
    if network.is_empty() || container_id.is_empty() || ifname.is_empty() {
        return Ok(());
    }
    if let Released::StoreUnreadable(why) =
        railcni_ipam::release_lease(settings, network, container_id, ifname)?
    {
        base::log_error!("DEL cannot release: {why}");
    }
    Ok(())
}

/// The VF, as railcni finds it: runtimeConfig.deviceID > deviceID > pciBusID.
fn device_of(conf: &Value) -> Option<&str> {
    ["/runtimeConfig/deviceID", "/deviceID", "/pciBusID"]
        .iter()
        .find_map(|p| {
            conf.pointer(p)
                .and_then(Value::as_str)
                .filter(|d| !d.is_empty())
        })
}

fn run(request: &Request, settings: &base::Settings) -> Result<Option<Value>, IpamError> {
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
    if request.verb == Verb::Del {
        // The lease file is the network's: DEL releases this attachment's
        // lease by the network's name, without loading (or validating) the
        // pool, which a 16k-allocation NAD makes the bulk of a call.
        if let Released::StoreUnreadable(why) =
            railcni_ipam::release_lease(settings, network, &env.container_id, &env.ifname)?
        {
            base::log_error!("DEL cannot release: {why}");
        }
        return Ok(None);
    }
    let statics = request.set_aside.as_ref().map(cni::SetAside::text);
    let node_file = NodeFile::load(&settings.node_config)?;
    if request.verb == Verb::Add {
        node_file.ensure_ours(settings)?;
        // The node file's rules that concern addresses hold whichever main
        // plugin calls this one (what only railcni knows, the VF's PF, is
        // railcni's: docs/ipam.md).
        if let Some(why) = node_file.namespace_refusal(network, env.args.pod_namespace.as_deref()) {
            return Err(Error::config("K8S_POD_NAMESPACE", why).into());
        }
    }
    let ipam = Ipam::load_with(
        network,
        ipam_conf,
        statics,
        settings,
        &node_file.prefixes(),
        device_of(conf),
    )?;
    match request.verb {
        Verb::Add => {
            let requested = requested_ips(conf, &env.args)?;
            let allocation = ipam.allocate(&Holder::of(env), &requested)?;
            for lease in &allocation.reclaimed {
                base::log_info!("reclaimed {lease}");
            }
            Ok(Some(allocation.to_result().to_json(request.version)))
        }
        Verb::Del => Ok(None), // released above
        Verb::Check => ipam.check(&env.container_id, &env.ifname).map(|_| None),
        Verb::Gc => ipam.gc(&valid_attachments(conf)?).map(|_| None),
        Verb::Status => ipam
            .status()
            .map(|()| None)
            .map_err(|e| Error::Unavailable(e.to_string()).into()),
    }
}
