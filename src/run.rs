//! One CNI invocation: the shared skeleton (`cni::plugin_main`) reads the
//! environment and stdin and starts logging; this runs the verb on the
//! plugin's context.

use base::Settings;
use cni::{Request, Verb};
use serde_json::Value;

use crate::commands::{self, Ctx};
use crate::config::NetConf;

use crate::error::{Error, Result};
use crate::node::Node;

/// Returns the process exit code.
pub fn cni_main() -> i32 {
    crate::timing::start();
    let settings = Settings::from_env();
    base::plugin::run(
        "railcni",
        railcni_ipam::inline::read_config,
        &settings,
        |request| dispatch(request, settings.clone()),
        |refused| refused_del(refused, settings.clone()),
    )
}

/// A DEL whose environment or stdin ADD would refuse (`commands::del::del_refused`).
fn refused_del(refused: cni::RefusedDel, settings: Settings) -> Result<()> {
    let text = |key: &str| refused.config.as_ref()?.get(key)?.as_str();
    let named = commands::del::Named {
        container_id: &refused.container_id,
        ifname: &refused.ifname,
        netns: refused.netns.as_deref(),
        device: text("deviceID"),
    };
    let node = Node::new(settings)?;
    let why = Error::from(refused.error);
    commands::del::del_refused(&node, &named, &why)
}

/// Run the verb and count it for `railcnictl metrics` (never failing the call).
fn dispatch(request: Request, settings: Settings) -> Result<Option<Value>> {
    let verb = request.verb;
    let network = request
        .config
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let outcome = run(request, settings.clone());
    if settings.stats {
        let code = outcome.as_ref().err().map_or(0, Error::code);
        let counted = base::stats::record_operation(
            &settings,
            &network,
            verb.name(),
            code,
            crate::timing::elapsed(),
        );
        if let Err(e) = counted {
            crate::log_warn!("cannot count this call for railcnictl metrics: {e}");
        }
    }
    outcome
}

/// The capabilities a verb that changes or enters namespaces needs, checked
/// before anything changes: without them netlink answers EPERM deep inside.
fn require_capabilities(verb: Verb) -> Result<()> {
    use caps::{CapSet, Capability};
    if verb == Verb::Status {
        return Ok(());
    }
    for (cap, why) in [
        (
            Capability::CAP_NET_ADMIN,
            "to move VFs and set links, addresses, routes and rules",
        ),
        (
            Capability::CAP_SYS_ADMIN,
            "to enter the pod's network namespace",
        ),
    ] {
        let held = caps::has_cap(None, CapSet::Effective, cap).map_err(|e| {
            Error::internal(format!("cannot read this process's capabilities: {e}"))
        })?;
        if !held {
            return Err(Error::MissingCapability(format!(
                "railcni runs without {cap}, which it needs {why}; run it as root (as runtimes do) or grant {cap}"
            )));
        }
    }
    Ok(())
}

fn run(request: Request, settings: Settings) -> Result<Option<Value>> {
    require_capabilities(request.verb)?;
    let Request {
        verb,
        env,
        config,
        set_aside: static_allocations,
        version,
    } = request;
    let device = config
        .get("deviceID")
        .and_then(Value::as_str)
        .map(str::to_string);
    let conf = match NetConf::parse(config, &env) {
        Ok(conf) => conf.with_static_allocations(static_allocations),
        Err(why) if verb == Verb::Del => {
            let named = commands::del::Named {
                container_id: &env.container_id,
                ifname: &env.ifname,
                netns: env.netns.as_deref(),
                device: device.as_deref(),
            };
            let node = Node::new(settings)?;
            return commands::del::del_refused(&node, &named, &why).map(|()| None);
        }
        Err(e) => return Err(e),
    };
    let ctx = Ctx::new(env, conf, Node::new(settings)?);
    match verb {
        Verb::Add => commands::add::add(&ctx).map(|r| Some(r.to_json(version))),
        Verb::Del => commands::del::del(&ctx).map(|()| None),
        Verb::Check => commands::check::check(&ctx).map(|()| None),
        Verb::Gc => commands::gc::gc(&ctx).map(|()| None),
        Verb::Status => commands::status::status(&ctx).map(|()| None),
    }
}
