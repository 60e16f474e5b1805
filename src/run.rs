//! One CNI invocation: the shared skeleton (`cni::plugin_main`) reads the
//! environment and stdin; this runs the verb on the plugin's context.

use cni::{Command, Request};
use serde_json::Value;

use crate::commands::{self, Ctx};
use crate::config::NetConf;
use crate::error::{Error, Result};
use crate::net::NetNs;

/// Returns the process exit code.
pub fn cni_main() -> i32 {
    cni::plugin_main("railcni", |request| {
        dispatch(request).inspect_err(|e| crate::log_error!("{e}"))
    })
}

fn dispatch(request: Request) -> Result<Option<Value>> {
    let Request {
        env,
        settings,
        config,
        version,
    } = request;
    let conf = NetConf::parse(config, &env)?;
    crate::log::init(
        conf.log_level,
        conf.log_file.as_deref(),
        format!(
            "{:?} {} {} {}",
            env.command, conf.name, env.container_id, env.ifname
        ),
    );
    let ctx = Ctx::new(env, conf, settings, NetNs::current()?);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::internal(format!("cannot start runtime: {e}")))?;
    runtime.block_on(async {
        match ctx.env.command {
            Command::Add => commands::add::add(&ctx)
                .await
                .map(|r| Some(r.to_json(version))),
            Command::Del => commands::del::del(&ctx).await.map(|()| None),
            Command::Check => commands::check::check(&ctx).await.map(|()| None),
            Command::Gc => commands::gc::gc(&ctx).await.map(|()| None),
            Command::Status => commands::status::status(&ctx).map(|()| None),
            Command::Version => Ok(None),
        }
    })
}
