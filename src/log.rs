//! Plugin logging: to the config's `logFile` (appended) and stderr, never stdout.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

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
    level: Level,
    file: Option<File>,
    /// Identifies the invocation in a shared log file.
    context: String,
}

static SINK: Mutex<Option<Sink>> = Mutex::new(None);

/// Where a NAD's `logFile` may be written: a file name, or a path inside
/// `log_dir` (the NAD is a namespace user's; root must not write elsewhere
/// for it). `None` when it points anywhere else.
pub fn confine(file: &Path, log_dir: &Path) -> Option<PathBuf> {
    let path = if file.is_absolute() {
        file.to_path_buf()
    } else {
        log_dir.join(file)
    };
    let inside = path.starts_with(log_dir)
        && path != log_dir
        && path
            .components()
            .all(|c| !matches!(c, Component::ParentDir | Component::CurDir));
    inside.then_some(path)
}

/// Set up logging once the config is known. A log file that cannot be opened
/// (or lies outside the log directory) is reported on stderr and otherwise
/// ignored: logging must not fail an ADD.
pub fn init(level: Level, file: Option<&Path>, log_dir: &Path, context: String) {
    let file = file.and_then(|asked| {
        let Some(path) = confine(asked, log_dir) else {
            eprintln!(
                "railcni: not logging to {}: logFile must be a file in {} (RAILCNI_LOG_DIR)",
                escape(&asked.display().to_string()),
                log_dir.display()
            );
            return None;
        };
        let _ = cni::files::private_dir(log_dir);
        OpenOptions::new()
            .create(true)
            .append(true)
            .mode(cni::files::FILE_MODE)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| eprintln!("railcni: cannot open logFile {}: {e}", path.display()))
            .ok()
    });
    if let Ok(mut sink) = SINK.lock() {
        *sink = Some(Sink {
            level,
            file,
            context,
        });
    }
}

pub fn write(level: Level, msg: std::fmt::Arguments<'_>) {
    let Ok(mut guard) = SINK.lock() else { return };
    let (max, context) = match guard.as_ref() {
        Some(s) => (s.level, s.context.clone()),
        None => (Level::Info, String::new()),
    };
    if level > max {
        return;
    }
    let ts = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(utc_timestamp)
        .unwrap_or_default();
    // Values from a NAD or the environment must not forge log lines.
    let line = format!(
        "{ts} railcni {} [{}] {}\n",
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

/// `2026-11-21T06:07:00.123Z` from a Unix time (civil-from-days, no time crate).
fn utc_timestamp(since_epoch: std::time::Duration) -> String {
    let secs = since_epoch.as_secs();
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since_epoch.subsec_millis()
    )
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
    fn formats_utc_timestamps() {
        let t = std::time::Duration::from_millis(1_795_241_220_508);
        assert_eq!(super::utc_timestamp(t), "2026-11-21T06:07:00.508Z");
        assert_eq!(
            super::utc_timestamp(std::time::Duration::ZERO),
            "1970-01-01T00:00:00.000Z"
        );
    }

    #[test]
    fn log_files_stay_in_the_log_dir() {
        use std::path::{Path, PathBuf};
        let dir = Path::new("/var/log/railcni");
        let ok = |f: &str| super::confine(Path::new(f), dir);
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
        ] {
            assert_eq!(ok(bad), None, "{bad}");
        }
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
