//! One CNI invocation: the shared skeleton (`cni::plugin_main`) reads the
//! environment and stdin; this runs the verb on the plugin's context.

use cni::{Request, Verb};
use serde_json::Value;

use crate::commands::{self, Ctx};
use crate::config::NetConf;
use std::path::Path;

use crate::error::{Error, Result};
use crate::log::Level;
use crate::node::Node;

/// Returns the process exit code.
pub fn cni_main() -> i32 {
    crate::timing::start();
    cni::plugin_main("railcni", |request| {
        dispatch(request).inspect_err(|e| crate::log_error!("{e}"))
    })
}

fn dispatch(request: Request) -> Result<Option<Value>> {
    let Request {
        verb,
        env,
        settings,
        config,
        version,
    } = request;
    // Logging starts before the config is validated, so config errors
    // reach the log file too.
    let text = |key: &str| config.get(key).and_then(Value::as_str).unwrap_or("");
    crate::log::init(
        Level::parse(text("logLevel")).unwrap_or(Level::Info),
        Some(text("logFile"))
            .filter(|f| !f.is_empty())
            .map(Path::new),
        &settings.log_dir,
        // Every line names the pod (or container), network, interface and VF.
        format!(
            "{:?} {} {} {} {}",
            env.command,
            text("name"),
            env.args.pod().unwrap_or_else(|| env.container_id.clone()),
            env.ifname,
            config
                .pointer("/runtimeConfig/deviceID")
                .and_then(Value::as_str)
                .unwrap_or(text("deviceID"))
        ),
    );
    let conf = NetConf::parse(config, &env)?;
    let ctx = Ctx::new(env, conf, Node::new(settings)?);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::internal(format!("cannot start runtime: {e}")))?;
    runtime.block_on(async {
        match verb {
            Verb::Add => commands::add::add(&ctx)
                .await
                .map(|r| Some(r.to_json(version))),
            Verb::Del => commands::del::del(&ctx).await.map(|()| None),
            Verb::Check => commands::check::check(&ctx).await.map(|()| None),
            Verb::Gc => commands::gc::gc(&ctx).await.map(|()| None),
            Verb::Status => commands::ready::status(&ctx).map(|()| None),
        }
    })
}
