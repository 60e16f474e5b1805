//! The skeleton of one CNI invocation, shared by both binaries: read the
//! environment and stdin once, answer VERSION, refuse what the config's
//! version does not have, run the verb, print the result or the error reply.
//! Nothing else ever reaches stdout.

use std::io::Write;

use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::env::{Command, Env, NsId};
use crate::error::{reply_json, Error, Reply, Result};
use crate::io_failure::IoFailure;
use crate::version::{Version, LATEST, SUPPORTED};

/// The verbs a binary dispatches: VERSION is answered by the skeleton.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Add,
    Del,
    Check,
    Status,
    Gc,
}

impl Verb {
    /// As `CNI_COMMAND` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Verb::Add => "ADD",
            Verb::Del => "DEL",
            Verb::Check => "CHECK",
            Verb::Status => "STATUS",
            Verb::Gc => "GC",
        }
    }

    fn of(command: Command) -> Option<Verb> {
        match command {
            Command::Add => Some(Verb::Add),
            Command::Del => Some(Verb::Del),
            Command::Check => Some(Verb::Check),
            Command::Status => Some(Verb::Status),
            Command::Gc => Some(Verb::Gc),
            Command::Version => None,
        }
    }
}

/// One validated invocation, handed to the binary's dispatch.
#[derive(Debug)]
pub struct Request {
    pub verb: Verb,
    pub env: Env,
    /// The network config: a JSON object (without the member the binary's
    /// `ReadConfig` set aside).
    pub config: Value,
    /// That member, as the JSON text it came as.
    pub set_aside: Option<SetAside>,
    /// Its `cniVersion`, already checked against the command.
    pub version: Version,
}

/// How a binary reads its config from stdin: the JSON object and, when
/// the binary keeps one aside, a member as the JSON text it came as,
/// borrowed from stdin (an IPAM may keep a pool of 16k inline
/// allocations so: a tree of them costs more than the rest of a call).
pub type ReadConfig = for<'a> fn(&'a [u8]) -> Result<(Value, Option<&'a RawValue>)>;

/// The whole config as a `Value`, nothing set aside.
pub fn whole_config(stdin: &[u8]) -> Result<(Value, Option<&RawValue>)> {
    parse_config(stdin).map(|v| (v, None))
}

/// The member a binary's `ReadConfig` set aside: its JSON text, sharing
/// stdin's buffer (no copy). serde checked it as JSON, and as UTF-8.
#[derive(Debug, Clone)]
pub struct SetAside(Bytes);

impl SetAside {
    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or("null")
    }
}

/// A DEL whose input could not be prepared (an environment, stdin, version
/// or log setting that ADD refuses): what could still be read of it. A
/// runtime tears a sandbox down with the input ADD refused (containerd
/// does), and a DEL that fails for it strands the sandbox: the plugin gives
/// back what its own records say was attached, and answers success when
/// nothing was.
#[derive(Debug)]
pub struct RefusedDel {
    /// As the environment had them, not validated (possibly empty).
    pub container_id: String,
    pub ifname: String,
    pub netns: Option<std::path::PathBuf>,
    /// stdin, when it was a JSON object.
    pub config: Option<Value>,
    /// Why the input was refused.
    pub error: Error,
}

impl RefusedDel {
    /// What the process environment and stdin (when it was a JSON object)
    /// still say.
    fn read(error: Error, stdin: Option<&[u8]>) -> Self {
        let var = |k: &str| std::env::var(k).unwrap_or_default();
        RefusedDel {
            container_id: var("CNI_CONTAINERID"),
            ifname: var("CNI_IFNAME"),
            netns: Some(var("CNI_NETNS"))
                .filter(|n| !n.is_empty())
                .map(Into::into),
            config: stdin.and_then(|s| parse_config(s).ok()),
            error,
        }
    }
}

/// Started by a runtime (any `CNI_*` variable set) rather than by a person.
/// A runtime that forgets `CNI_COMMAND` still gets a CNI error, not help text.
pub fn is_cni_invocation() -> bool {
    std::env::vars_os().any(|(k, _)| k.to_str().is_some_and(|k| k.starts_with("CNI_")))
}

/// What a binary brings to the skeleton beside its verbs.
pub struct Plugin<'a> {
    /// As logs and errors name it.
    pub name: &'static str,
    /// How stdin becomes the config: `whole_config`, or one that sets a
    /// member aside.
    pub read_config: ReadConfig,
    /// The config as read, before anything in it is checked (railcni starts
    /// its log here, so that a config error reaches the log file too). An
    /// error refuses the call.
    pub on_config: &'a dyn Fn(&Env, &Value) -> Result<()>,
    /// A failure before `dispatch` (environment, stdin, version), for the
    /// binary's log; the reply goes to stdout.
    pub report: &'a dyn Fn(&Error),
}

/// Run one invocation; returns the process exit code. `dispatch` logs its
/// own failures; failures before it (environment, stdin, version) go to
/// `plugin.report`, and a DEL that failed there goes to `refused_del`
/// instead (see `RefusedDel`).
pub fn plugin_main<E>(
    plugin: Plugin<'_>,
    dispatch: impl FnOnce(Request) -> std::result::Result<Option<Value>, E>,
    refused_del: impl FnOnce(RefusedDel) -> std::result::Result<(), E>,
) -> i32
where
    E: Reply + From<Error>,
{
    let prepared = read_and_prepare(&plugin);
    let (out, code) = match prepared {
        Ok(Prepared::Version(reply)) => (Some(reply), 0),
        Ok(Prepared::Request(request)) => {
            let version = request.version;
            match dispatch(*request) {
                Ok(out) => (out, 0),
                Err(e) => (Some(reply_json(&e, version)), 1),
            }
        }
        Err((error, version, stdin)) if is_del() => {
            match refused_del(RefusedDel::read(error, stdin.as_deref())) {
                Ok(()) => (None, 0),
                Err(e) => (Some(reply_json(&e, version)), 1),
            }
        }
        Err((e, version, _)) => {
            (plugin.report)(&e);
            (Some(reply_json(&E::from(e), version)), 1)
        }
    };
    match out.map(print) {
        Some(Err(_)) => 1,
        _ => code,
    }
}

/// The reply on stdout, the only thing ever written there.
fn print(v: Value) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{v}").and_then(|()| stdout.flush())
}

/// stdin read and the request prepared from it. Refused input keeps its
/// stdin: a DEL reads what it still can of it.
fn read_and_prepare(
    plugin: &Plugin<'_>,
) -> std::result::Result<Prepared, (Error, Version, Option<Bytes>)> {
    match read_stdin() {
        Err(e) => Err((
            Error::Io(IoFailure::new("cannot read stdin", &e)),
            LATEST,
            None,
        )),
        Ok(stdin) => {
            let stdin = Bytes::from(stdin);
            prepare(plugin, &stdin).map_err(|(e, version)| (e, version, Some(stdin)))
        }
    }
}

/// `CNI_NETNS` naming the namespace the plugin runs in (the host's) would
/// have it move the node's own devices around: refused, as `pkg/skel` does.
fn refuse_own_netns(env: &Env) -> Result<()> {
    let Some(netns) = &env.netns else {
        return Ok(());
    };
    let own = NsId::of(std::path::Path::new("/proc/self/ns/net"));
    if own.is_some() && NsId::of(netns) == own {
        return Err(Error::InvalidEnv(format!(
            "CNI_NETNS {} is the plugin's own network namespace, not a container's",
            netns.display()
        )));
    }
    Ok(())
}

fn read_stdin() -> std::io::Result<Vec<u8>> {
    let mut stdin = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut stdin)?;
    Ok(stdin)
}

fn is_del() -> bool {
    std::env::var("CNI_COMMAND").is_ok_and(|c| c == "DEL")
}

enum Prepared {
    Version(Value),
    Request(Box<Request>),
}

/// The invocation, or why not with the version to answer in (the caller's
/// when it is one we speak).
fn prepare(plugin: &Plugin<'_>, stdin: &Bytes) -> std::result::Result<Prepared, (Error, Version)> {
    let env = Env::from_process()
        .and_then(|env| refuse_own_netns(&env).map(|()| env))
        .map_err(|e| (e, reply_version(stdin)))?;
    let Some(verb) = Verb::of(env.command) else {
        let asked = reply_version(stdin);
        return Ok(Prepared::Version(
            json!({"cniVersion": asked.to_string(), "supportedVersions": SUPPORTED}),
        ));
    };
    // Not a JSON object: there is no version to answer in.
    let (config, aside) = (plugin.read_config)(stdin).map_err(|e| (e, LATEST))?;
    let set_aside = aside.map(|raw| SetAside(stdin.slice_ref(raw.get().as_bytes())));
    let asked = asked_in(&config);
    let with_asked = |e| (e, asked);
    (plugin.on_config)(&env, &config).map_err(with_asked)?;
    let version = config_version(&config).map_err(with_asked)?;
    env.command
        .gate(version)
        .map_err(Error::from)
        .map_err(with_asked)?;
    let request = Request {
        verb,
        env,
        config,
        set_aside,
        version,
    };
    Ok(Prepared::Request(Box::new(request)))
}

/// stdin as a JSON object (code 6 otherwise).
pub fn parse_config(stdin: &[u8]) -> Result<Value> {
    let config: Value = serde_json::from_slice(stdin)
        .map_err(|e| Error::Decode(format!("stdin is not valid JSON: {e}")))?;
    if !config.is_object() {
        return Err(Error::Decode("stdin must be a JSON object".into()));
    }
    Ok(config)
}

/// The config's `cniVersion`: required (7) and supported (1).
pub fn config_version(config: &Value) -> Result<Version> {
    match config.get("cniVersion") {
        None | Some(Value::Null) => Err(Error::config("cniVersion", "is required")),
        Some(Value::String(s)) => Ok(Version::parse(s)?),
        Some(other) => Err(Error::config(
            "cniVersion",
            format!("{other} must be a string such as \"1.1.0\""),
        )),
    }
}

/// The config's `cniVersion` when it is one we speak, else the latest.
fn asked_in(config: &Value) -> Version {
    config
        .get("cniVersion")
        .and_then(Value::as_str)
        .and_then(|s| Version::parse(s).ok())
        .unwrap_or(LATEST)
}

/// Answer in the caller's version when it is one we speak.
fn reply_version(stdin: &[u8]) -> Version {
    serde_json::from_slice::<Value>(stdin).map_or(LATEST, |config| asked_in(&config))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn config_must_be_an_object_with_a_supported_version() {
        assert_eq!(parse_config(b"[1]").map_err(|e| e.code()), Err(6));
        assert_eq!(parse_config(b"{torn").map_err(|e| e.code()), Err(6));
        assert_eq!(config_version(&json!({})).map_err(|e| e.code()), Err(7));
        assert_eq!(
            config_version(&json!({"cniVersion": 1})).map_err(|e| e.code()),
            Err(7)
        );
        assert_eq!(
            config_version(&json!({"cniVersion": "0.2.0"})).map_err(|e| e.code()),
            Err(1)
        );
        assert_eq!(
            config_version(&json!({"cniVersion": "0.4.0"})).ok(),
            Some(Version::V0_4)
        );
    }

    #[test]
    fn replies_in_the_asked_version_when_supported() {
        assert_eq!(
            reply_version(br#"{"cniVersion":"0.3.1"}"#).to_string(),
            "0.3.1"
        );
        assert_eq!(reply_version(br#"{"cniVersion":"9.9.9"}"#), LATEST);
        assert_eq!(reply_version(b"not json"), LATEST);
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn any_stdin_is_a_config_or_a_decode_error(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            match parse_config(&bytes) {
                Ok(v) => prop_assert!(v.is_object()),
                Err(e) => prop_assert_eq!(crate::error::Reply::code(&e), 6),
            }
            let _ = reply_version(&bytes);
        }
    }
}
