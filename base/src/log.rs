//! Logging for both binaries: to the config's `logFile` (appended) and
//! stderr, never stdout. One line per call, RFC 3339 UTC timestamps, the
//! program, the level and the invocation's context (verb, network, pod,
//! interface, VF), every logged value escaped.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde::Deserialize;
use serde_json::Value;

use crate::settings::Settings;

/// The config's logging fields, read once by the skeleton.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogConf {
    pub log_file: Option<String>,
    pub log_level: Option<String>,
}

impl LogConf {
    /// From the network config; a field of the wrong type is error 7 naming it.
    pub fn of(config: &serde_json::Value) -> cni::error::Result<Self> {
        let field = |key: &str| match config.get(key) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(cni::Error::config(key, format!("{other} must be a string"))),
        };
        Ok(LogConf {
            log_file: field("logFile")?.filter(|f| !f.is_empty()),
            log_level: field("logLevel")?.filter(|l| !l.is_empty()),
        })
    }

    /// The level asked for (info when none); a bad one is error 7.
    pub fn level(&self) -> cni::error::Result<Level> {
        match self.log_level.as_deref() {
            None => Ok(Level::Info),
            Some(l) => Level::parse(l).ok_or_else(|| {
                cni::Error::config(
                    "logLevel",
                    format!("{l:?} is not one of error, warning, info, debug"),
                )
            }),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error,
    Warning,
    Info,
    Debug,
}

impl Level {
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "error" | "panic" => Some(Level::Error),
            "warning" | "warn" => Some(Level::Warning),
            "info" => Some(Level::Info),
            "debug" => Some(Level::Debug),
            _ => None,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Info => "info",
            Level::Debug => "debug",
        }
    }
}

struct Sink {
    /// `railcni` or `railcni-ipam`.
    program: &'static str,
    level: Level,
    file: Option<File>,
    /// Identifies the invocation in a shared log file.
    context: String,
}

static SINK: Mutex<Option<Sink>> = Mutex::new(None);

/// Where a NAD's `logFile` may be written: a file name (in the first of
/// `log_dirs`), or a path inside one of them (the NAD is a namespace
/// user's; root must not write elsewhere for it), with that directory.
/// `None` when it points anywhere else.
pub fn confine<'d>(file: &Path, log_dirs: &'d [PathBuf]) -> Option<(PathBuf, &'d Path)> {
    let plain = file
        .components()
        .all(|c| !matches!(c, Component::ParentDir | Component::CurDir));
    if !plain {
        return None;
    }
    if !file.is_absolute() {
        let dir = log_dirs.first()?;
        return Some((dir.join(file), dir));
    }
    log_dirs
        .iter()
        .find(|dir| file.starts_with(dir) && file != dir.as_path())
        .map(|dir| (file.to_path_buf(), dir.as_path()))
}

/// Set up logging once the config is known. A log file that cannot be opened
/// (or lies outside the log directory) is reported on stderr and otherwise
/// ignored: logging must not fail an ADD.
pub fn init(
    program: &'static str,
    level: Level,
    file: Option<&Path>,
    log_dirs: &[PathBuf],
    context: String,
) {
    let file = file.and_then(|asked| {
        let Some((path, dir)) = confine(asked, log_dirs) else {
            let dirs: Vec<String> = log_dirs.iter().map(|d| d.display().to_string()).collect();
            eprintln!(
                "{program}: not logging to {}: logFile must be a file in {} (RAILCNI_LOG_DIR, or the state dir's log/)",
                escape(&asked.display().to_string()),
                dirs.join(" or ")
            );
            return None;
        };
        let _ = crate::files::private_dir(dir);
        OpenOptions::new()
            .create(true)
            .append(true)
            .mode(crate::files::FILE_MODE)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| eprintln!("{program}: cannot open logFile {}: {e}", path.display()))
            .ok()
    });
    if let Ok(mut sink) = SINK.lock() {
        *sink = Some(Sink {
            program,
            level,
            file,
            context,
        });
    }
}

thread_local! {
    /// The context of what this thread does now, over the call's (`in_context`).
    static CONTEXT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Run `f` with every line this thread logs naming `context` (a gc
/// action's network, pod and VF, where a long-running command has no one
/// call's context).
pub fn in_context<T>(context: String, f: impl FnOnce() -> T) -> T {
    let before = CONTEXT.with(|c| c.replace(Some(context)));
    let out = f();
    CONTEXT.with(|c| *c.borrow_mut() = before);
    out
}

pub fn write(level: Level, msg: std::fmt::Arguments<'_>) {
    let Ok(mut guard) = SINK.lock() else { return };
    let (program, max, call) = match guard.as_ref() {
        Some(s) => (s.program, s.level, s.context.clone()),
        None => ("railcni", Level::Info, String::new()),
    };
    let context = CONTEXT.with(|c| c.borrow().clone()).unwrap_or(call);
    if level > max {
        return;
    }
    let ts = humantime::format_rfc3339_millis(SystemTime::now());
    // Values from a NAD or the environment must not forge log lines.
    let line = format!(
        "{ts} {program} {} [{}] {}\n",
        level.label(),
        escape(&context),
        escape(&msg.to_string())
    );
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(file) = guard.as_mut().and_then(|s| s.file.as_mut()) {
        let _ = file.write_all(line.as_bytes());
    }
}

/// Control characters (newlines above all) as escapes, so one log call is
/// one line whatever it quotes.
pub fn escape(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Logging as a CNI call's config asks (`logFile`, `logLevel`), started
/// before anything else in it is validated, so config errors reach the log
/// file too. Every line names the verb, network, pod (or container),
/// interface and VF.
pub fn start_for_call(
    program: &'static str,
    env: &cni::Env,
    config: &Value,
    settings: &Settings,
) -> cni::error::Result<()> {
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
    init(
        program,
        *level.as_ref().unwrap_or(&Level::Info),
        path,
        &settings.log_dirs(),
        context,
    );
    conf.and(level).map(drop)
}

#[macro_export]
macro_rules! log_error { ($($t:tt)*) => { $crate::log::write($crate::log::Level::Error, format_args!($($t)*)) } }
#[macro_export]
macro_rules! log_warn { ($($t:tt)*) => { $crate::log::write($crate::log::Level::Warning, format_args!($($t)*)) } }
#[macro_export]
macro_rules! log_info { ($($t:tt)*) => { $crate::log::write($crate::log::Level::Info, format_args!($($t)*)) } }
#[macro_export]
macro_rules! log_debug { ($($t:tt)*) => { $crate::log::write($crate::log::Level::Debug, format_args!($($t)*)) } }

#[cfg(test)]
mod tests {
    #[test]
    fn timestamps_are_rfc3339_utc_with_milliseconds() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_795_241_220_508);
        assert_eq!(
            humantime::format_rfc3339_millis(t).to_string(),
            "2026-11-21T06:07:00.508Z"
        );
    }

    #[test]
    fn the_config_says_file_and_level_once_and_typed() {
        let c = serde_json::json!({"logFile": "rail1.log", "logLevel": "debug"});
        let l = super::LogConf::of(&c).unwrap();
        assert_eq!(l.log_file.as_deref(), Some("rail1.log"));
        assert_eq!(l.level().unwrap(), super::Level::Debug);
        let bad = super::LogConf::of(&serde_json::json!({"logLevel": "loud"})).unwrap();
        assert!(bad.level().unwrap_err().to_string().contains("logLevel"));
        let e = super::LogConf::of(&serde_json::json!({"logFile": 7})).unwrap_err();
        assert!(e.to_string().contains("logFile"), "{e}");
    }

    #[test]
    fn log_files_stay_in_the_log_dir() {
        use std::path::{Path, PathBuf};
        let dirs = [
            PathBuf::from("/var/log/railcni"),
            PathBuf::from("/var/lib/cni/railcni/log"),
        ];
        let ok = |f: &str| super::confine(Path::new(f), &dirs).map(|(p, _)| p);
        assert_eq!(
            ok("rail1.log"),
            Some(PathBuf::from("/var/log/railcni/rail1.log"))
        );
        assert_eq!(
            ok("/var/log/railcni/x.log"),
            Some(PathBuf::from("/var/log/railcni/x.log"))
        );
        for bad in [
            "/proc/sys/kernel/hostname",
            "/etc/cron.d/x",
            "../../etc/passwd",
            "/var/log/railcni/../../../etc/shadow",
            "/var/log/railcni",
            "/var/log/railcni-evil/x",
            "/var/lib/cni/railcni/log",
            "/var/lib/cni/railcni/ipam/rail1.leases.json",
        ] {
            assert_eq!(ok(bad), None, "{bad}");
        }
        // Where a caller without the host's /var/log (dra-driver-sriov) logs.
        assert_eq!(
            ok("/var/lib/cni/railcni/log/railcni.log"),
            Some(PathBuf::from("/var/lib/cni/railcni/log/railcni.log"))
        );
    }

    #[test]
    fn logged_values_cannot_forge_lines() {
        assert_eq!(
            super::escape("rail1\n* * * * * root evil"),
            "rail1\\n* * * * * root evil"
        );
        assert_eq!(super::escape("plain"), "plain");
        assert!(!super::escape("a\rb\u{1b}[31m")
            .chars()
            .any(char::is_control));
    }
}
