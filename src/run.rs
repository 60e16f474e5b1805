//! One CNI invocation: read env and stdin, run the verb, print the result or
//! the error JSON. Nothing else ever reaches stdout.

use std::io::{Read, Write};

use serde_json::{json, Value};

use crate::cni::version::{Version, LATEST, SUPPORTED};
use crate::cni::{Command, Env};
use crate::commands::{self, Ctx};
use crate::config::NetConf;
use crate::error::{Error, Result};
use crate::net::NetNs;
use crate::sriov::Sysfs;
use crate::state::Store;

/// Returns the process exit code.
pub fn cni_main() -> i32 {
    let mut stdin = Vec::new();
    let read = std::io::stdin()
        .read_to_end(&mut stdin)
        .map_err(|e| Error::Io(format!("cannot read stdin: {e}")));
    let outcome = read.and_then(|_| dispatch(&stdin));
    let (out, code) = match outcome {
        Ok(Some(v)) => (Some(v), 0),
        Ok(None) => (None, 0),
        Err(e) => {
            crate::log_error!("{e}");
            (Some(error_json(&e, &stdin)), 1)
        }
    };
    if let Some(v) = out {
        let mut stdout = std::io::stdout().lock();
        if writeln!(stdout, "{v}")
            .and_then(|_| stdout.flush())
            .is_err()
        {
            return 1;
        }
    }
    code
}

fn error_json(e: &Error, stdin: &[u8]) -> Value {
    // Answer in the caller's version when it is one we speak.
    let version = serde_json::from_slice::<Value>(stdin)
        .ok()
        .and_then(|v| {
            v.get("cniVersion")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .filter(|v| SUPPORTED.contains(&v.as_str()))
        .unwrap_or_else(|| LATEST.to_string());
    json!({"cniVersion": version, "code": e.code(), "msg": e.summary(), "details": e.details()})
}

fn dispatch(stdin: &[u8]) -> Result<Option<Value>> {
    let env = Env::from_process()?;
    if env.command == Command::Version {
        return Ok(Some(version_reply(stdin)));
    }
    let conf = NetConf::parse(stdin, &env)?;
    crate::log::init(
        conf.log_level,
        conf.log_file.as_deref(),
        format!(
            "{:?} {} {} {}",
            env.command, conf.name, env.container_id, env.ifname
        ),
    );
    let version = conf.version;
    let ctx = Ctx {
        host: NetNs::current()?,
        store: Store::from_env(),
        sysfs: Sysfs::from_env(),
        env,
        conf,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Internal(format!("cannot start runtime: {e}")))?;
    runtime.block_on(async {
        match ctx.env.command {
            Command::Add => commands::add::add(&ctx)
                .await
                .map(|r| Some(r.to_json(version))),
            Command::Del => commands::del::del(&ctx).await.map(|_| None),
            Command::Check => commands::check::check(&ctx).await.map(|_| None),
            Command::Gc => commands::gc::gc(&ctx).await.map(|_| None),
            Command::Status => commands::status::status(&ctx).map(|_| None),
            Command::Version => Ok(None),
        }
    })
}

fn version_reply(stdin: &[u8]) -> Value {
    let asked = serde_json::from_slice::<Value>(stdin)
        .ok()
        .and_then(|v| {
            v.get("cniVersion")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .filter(|v| Version::parse(v).is_ok())
        .unwrap_or_else(|| LATEST.to_string());
    json!({"cniVersion": asked, "supportedVersions": SUPPORTED})
}
