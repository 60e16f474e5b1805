//! The skeleton of one CNI invocation, shared by both binaries: read the
//! environment and stdin once, answer VERSION, refuse what the config's
//! version does not have, run the verb, print the result or the error reply.
//! Nothing else ever reaches stdout.

use std::io::Write;

use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::env::{Command, Env};
use crate::error::{reply_json, Error, Reply, Result};
use crate::io_failure::IoFailure;
use crate::log::{self, Level, LogConf};
use crate::settings::Settings;
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
    pub settings: Settings,
    /// The network config: a JSON object (a railcni-ipam pool's
    /// `ipam.staticAllocations` taken out, see `split_config`).
    pub config: Value,
    /// `ipam.staticAllocations`, the JSON text as it came: a migrated pool
    /// carries 16k of them, and the node needs one.
    pub static_allocations: Option<InlineList>,
    /// Its `cniVersion`, already checked against the command.
    pub version: Version,
}

/// `ipam.staticAllocations` as JSON text: where it sits in stdin, which
/// it keeps (1.4 MB for 16k allocations: copying it would cost more than
/// the rest of the call). serde checked it as JSON, and as UTF-8.
#[derive(Debug)]
pub struct InlineList {
    stdin: Vec<u8>,
    range: std::ops::Range<usize>,
}

impl InlineList {
    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.stdin[self.range.clone()]).unwrap_or("[]")
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
    pub settings: Settings,
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
            settings: Settings::from_env(),
            error,
        }
    }
}

/// Started by a runtime (any `CNI_*` variable set) rather than by a person.
/// A runtime that forgets `CNI_COMMAND` still gets a CNI error, not help text.
pub fn is_cni_invocation() -> bool {
    std::env::vars_os().any(|(k, _)| k.to_str().is_some_and(|k| k.starts_with("CNI_")))
}

/// Run one invocation; returns the process exit code. `dispatch` logs its
/// own failures; failures before it (environment, stdin, version) are
/// written to stderr here, and a DEL that failed there goes to
/// `refused_del` instead (see `RefusedDel`).
pub fn plugin_main<E>(
    program: &'static str,
    dispatch: impl FnOnce(Request) -> std::result::Result<Option<Value>, E>,
    refused_del: impl FnOnce(RefusedDel) -> std::result::Result<(), E>,
) -> i32
where
    E: Reply + From<Error>,
{
    let settings = Settings::from_env();
    // stderr only until the config says more.
    log::init(
        program,
        Level::Info,
        None,
        &settings.log_dirs(),
        String::new(),
    );
    let prepared = read_and_prepare(program, settings);
    let (out, code) = match prepared {
        Ok(Prepared::Version(reply)) => (Some(reply), 0),
        Ok(Prepared::Request(request, _)) => {
            let version = request.version;
            match dispatch(*request) {
                Ok(out) => (out, 0),
                Err(e) => (Some(reply_json(&e, version)), 1),
            }
        }
        Err((error, version, stdin)) if is_del() => {
            crate::log_warn!("{error}");
            match refused_del(RefusedDel::read(error, stdin.as_deref())) {
                Ok(()) => (None, 0),
                Err(e) => (Some(reply_json(&e, version)), 1),
            }
        }
        Err((e, version, _)) => {
            crate::log_error!("{e}");
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
    program: &'static str,
    settings: Settings,
) -> std::result::Result<Prepared, (Error, Version, Option<Vec<u8>>)> {
    match read_stdin() {
        Err(e) => Err((
            Error::Io(IoFailure::new("cannot read stdin", &e)),
            LATEST,
            None,
        )),
        Ok(stdin) => match prepare(program, &stdin, settings) {
            Ok(Prepared::Request(mut request, list)) => {
                request.static_allocations = list.map(|range| InlineList { stdin, range });
                Ok(Prepared::Request(request, None))
            }
            Ok(version) => Ok(version),
            Err((e, version)) => Err((e, version, Some(stdin))),
        },
    }
}

/// `CNI_NETNS` naming the namespace the plugin runs in (the host's) would
/// have it move the node's own devices around: refused, as `pkg/skel` does.
fn refuse_own_netns(env: &Env) -> Result<()> {
    let Some(netns) = &env.netns else {
        return Ok(());
    };
    let own = crate::liveness::NsId::of(std::path::Path::new("/proc/self/ns/net"));
    if own.is_some() && crate::liveness::NsId::of(netns) == own {
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
    /// With where `ipam.staticAllocations` sits in stdin.
    Request(Box<Request>, Option<std::ops::Range<usize>>),
}

/// The invocation, or why not with the version to answer in (the caller's
/// when it is one we speak).
fn prepare(
    program: &'static str,
    stdin: &[u8],
    settings: Settings,
) -> std::result::Result<Prepared, (Error, Version)> {
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
    let (config, list) = split_config(stdin).map_err(|e| (e, LATEST))?;
    let asked = asked_in(&config);
    let with_asked = |e| (e, asked);
    start_logging(program, &env, &config, &settings).map_err(with_asked)?;
    let version = config_version(&config).map_err(with_asked)?;
    env.command
        .gate(version)
        .map_err(Error::from)
        .map_err(with_asked)?;
    let request = Request {
        verb,
        env,
        settings,
        config,
        static_allocations: None,
        version,
    };
    Ok(Prepared::Request(Box::new(request), list))
}

/// Logging as the config asks, before anything else is validated, so config
/// errors reach the log file too. Every line names the verb, network, pod
/// (or container), interface and VF.
fn start_logging(
    program: &'static str,
    env: &Env,
    config: &Value,
    settings: &Settings,
) -> Result<()> {
    let conf = LogConf::of(config);
    let (file, level) = match &conf {
        Ok(c) => (c.log_file.as_deref(), c.level()),
        Err(_) => (None, Ok(Level::Info)),
    };
    let text = |key: &str| config.get(key).and_then(Value::as_str).unwrap_or("");
    let device = config
        .pointer("/runtimeConfig/deviceID")
        .and_then(Value::as_str)
        .unwrap_or(text("deviceID"));
    let pod = env.args.pod().unwrap_or_else(|| env.container_id.clone());
    let command = format!("{:?}", env.command);
    let parts = [command.as_str(), text("name"), &pod, &env.ifname, device];
    let context = parts
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    let path = file.map(std::path::Path::new);
    log::init(
        program,
        *level.as_ref().unwrap_or(&Level::Info),
        path,
        &settings.log_dirs(),
        context,
    );
    conf.and(level).map(drop)
}

/// stdin as a JSON object, with `ipam.staticAllocations` kept as the JSON
/// text it came as: a tree of 16k allocations costs more to build (and
/// free) than all the rest of an ADD, and only the IPAM reads the list, in
/// its own types. One pass of serde: every member becomes a `Value` but
/// that list. Input of another shape is parsed whole, as `parse_config`.
pub fn split_config(stdin: &[u8]) -> Result<(Value, Option<std::ops::Range<usize>>)> {
    match serde_json::from_slice::<Outline>(stdin) {
        Ok(Outline(config, statics)) => {
            // Where the borrowed text sits in stdin.
            let range = statics.map(|raw| {
                let start = raw.get().as_ptr().addr() - stdin.as_ptr().addr();
                start..start + raw.get().len()
            });
            Ok((Value::Object(config), range))
        }
        Err(_) => parse_config(stdin).map(|v| (v, None)),
    }
}

type Split<'de> = (serde_json::Map<String, Value>, Option<&'de RawValue>);

/// The config: its members, and `ipam.staticAllocations` apart.
struct Outline<'de>(serde_json::Map<String, Value>, Option<&'de RawValue>);

/// `ipam`: its members, and `staticAllocations` apart.
struct IpamOutline<'de>(serde_json::Map<String, Value>, Option<&'de RawValue>);

impl<'de> serde::Deserialize<'de> for Outline<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let (members, statics) = d.deserialize_map(SplitVisitor { top: true })?;
        Ok(Outline(members, statics))
    }
}

impl<'de> serde::Deserialize<'de> for IpamOutline<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let (members, statics) = d.deserialize_map(SplitVisitor { top: false })?;
        Ok(IpamOutline(members, statics))
    }
}

/// Reads an object's members; at the top `ipam` is read as `IpamOutline`,
/// inside it `staticAllocations` as raw text. The last of a repeated key
/// wins, as in a `Value`.
struct SplitVisitor {
    top: bool,
}

impl<'de> serde::de::Visitor<'de> for SplitVisitor {
    type Value = Split<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Split<'de>, A::Error> {
        let (mut members, mut statics) = (serde_json::Map::new(), None);
        while let Some(key) = map.next_key::<String>()? {
            if self.top && key == "ipam" {
                let IpamOutline(ipam, list) = map.next_value()?;
                members.insert(key, Value::Object(ipam));
                statics = list;
            } else if !self.top && key == "staticAllocations" {
                statics = Some(map.next_value()?);
            } else {
                members.insert(key, map.next_value()?);
            }
        }
        Ok((members, statics))
    }
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
        assert_eq!(split_config(b"[1]").err().map(|e| e.code()), Some(6));
        assert_eq!(split_config(b"{torn").err().map(|e| e.code()), Some(6));
        let text = br#"{"name":"r","ipam":{"type":"railcni-ipam","staticAllocations":[{"nodeName":"a"}],"cidr":"10.0.0.0/8"}}"#;
        let (v, statics) = split_config(text).unwrap();
        assert_eq!(
            v,
            json!({"name": "r", "ipam": {"type": "railcni-ipam", "cidr": "10.0.0.0/8"}})
        );
        assert_eq!(
            statics.map(|r| &text[r]),
            Some(&br#"[{"nodeName":"a"}]"#[..])
        );
        // A list that is not at ipam.staticAllocations stays where it is.
        let (v, statics) =
            split_config(br#"{"name":"r","args":{"staticAllocations":[1,"]"]}}"#).unwrap();
        assert_eq!(
            (
                v["args"]["staticAllocations"][1].as_str(),
                statics.is_none()
            ),
            (Some("]"), true)
        );
        // ipam that is not an object is left to the config's checks.
        let (v, statics) = split_config(br#"{"ipam":"x"}"#).unwrap();
        assert_eq!((v, statics.is_none()), (json!({"ipam": "x"}), true));
        // A torn value inside is still a decode error.
        assert_eq!(
            split_config(br#"{"ipam":{"cidr":"x","staticAllocations":[}}"#)
                .err()
                .map(|e| e.code()),
            Some(6)
        );
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

        #[test]
        fn the_split_config_is_the_config_with_the_list_aside(v in support::arb_json()) {
            let text = serde_json::to_vec(&v).unwrap();
            match (parse_config(&text), split_config(&text)) {
                (Ok(mut whole), Ok((config, statics))) => {
                    if let Some(list) = statics {
                        let list: Value = serde_json::from_slice(&text[list]).unwrap();
                        let taken = whole["ipam"].as_object_mut().and_then(|i| i.remove("staticAllocations"));
                        prop_assert_eq!(taken, Some(list));
                    }
                    prop_assert_eq!(whole, config);
                }
                (Err(a), Err(b)) => prop_assert_eq!(a.code(), b.code()),
                (a, b) => prop_assert!(false, "{:?} vs {:?}", a.is_ok(), b.is_ok()),
            }
        }
    }
}
