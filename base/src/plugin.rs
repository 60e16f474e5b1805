//! How a railcni binary runs as a CNI plugin: the log on stderr until the
//! config says more, then as the config asks, around the protocol's
//! skeleton (`cni::plugin_main`).

use serde_json::Value;

use crate::log::{self, Level};
use crate::settings::Settings;

/// Run one invocation with `dispatch` (and `refused_del` for a DEL whose
/// input was refused), logging every failure; the process exit code.
pub fn run<E>(
    program: &'static str,
    read_config: cni::ReadConfig,
    settings: &Settings,
    dispatch: impl FnOnce(cni::Request) -> Result<Option<Value>, E>,
    refused_del: impl FnOnce(cni::RefusedDel) -> Result<(), E>,
) -> i32
where
    E: cni::Reply + From<cni::Error> + std::fmt::Display,
{
    log::init(
        program,
        Level::Info,
        None,
        &settings.log_dirs(),
        String::new(),
    );
    let plugin = cni::Plugin {
        name: program,
        read_config,
        on_config: &|env, config| log::start_for_call(program, env, config, settings),
        report: &|e| crate::log_error!("{e}"),
    };
    cni::plugin_main(
        plugin,
        |request| dispatch(request).inspect_err(|e| crate::log_error!("{e}")),
        |refused| {
            crate::log_warn!("{}", refused.error);
            refused_del(refused).inspect_err(|e| crate::log_error!("{e}"))
        },
    )
}
