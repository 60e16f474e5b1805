//! Passes over the node's state for the agent's readers: one worker thread
//! does them, one at a time, and every reader takes the last one. A scrape
//! storm costs one pass (a pass younger than `FRESH` is reused, and readers
//! that arrive during a pass wait for it instead of starting another), and
//! a pass that hangs (a state file on a hung disk, a pod namespace that
//! will not open) costs this one thread: later readers get the last result,
//! marked stale, or fail fast.

use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base::Settings;
use tokio::sync::watch;

use super::jobs::NodeChecks;
use crate::cli::metrics::{self, Exposition};
use crate::cli::outcome::Usage;
use crate::log_warn;

/// A pass this young is served as it is.
pub const FRESH: Duration = Duration::from_secs(1);
/// How long a reader waits for a pass before it takes the last one.
pub const WAIT: Duration = Duration::from_secs(3);

/// What one pass found: the exposition, or why there is none.
#[derive(Clone)]
pub struct Pass {
    pub ended: Instant,
    pub outcome: Result<Arc<Exposition>, String>,
}

/// A pass as a reader gets it.
pub enum Answer {
    /// Ended within `FRESH`, or after the reader asked.
    Current(Pass),
    /// The pass asked for did not end within `WAIT`: the last one there is.
    Stale(Pass),
    /// No pass has ended yet and the one running did not end within `WAIT`.
    Nothing,
}

#[derive(Clone)]
pub struct Passes {
    wanted: SyncSender<()>,
    last: watch::Receiver<Option<Pass>>,
    running: Arc<Mutex<Option<Instant>>>,
}

impl Passes {
    /// Start the worker; its thread lives as long as the process.
    pub fn start(settings: Settings, checks: NodeChecks) -> std::io::Result<Passes> {
        // Room for one request: a second one while it waits adds nothing.
        let (wanted, requests) = sync_channel::<()>(1);
        let (publish, last) = watch::channel(None);
        let running = Arc::new(Mutex::new(None));
        let busy = Arc::clone(&running);
        std::thread::Builder::new()
            .name("passes".into())
            .spawn(move || {
                for () in requests {
                    set(&busy, Some(Instant::now()));
                    let checks = checks.lock().map(|c| c.clone()).unwrap_or_default();
                    let outcome = metrics::collect(&settings, None, &checks)
                        .map(Arc::new)
                        .map_err(|Usage(why)| why);
                    set(&busy, None);
                    let pass = Pass {
                        ended: Instant::now(),
                        outcome,
                    };
                    if publish.send(Some(pass)).is_err() {
                        return;
                    }
                }
            })?;
        Ok(Passes {
            wanted,
            last,
            running,
        })
    }

    /// A pass no older than `FRESH`: the last one if it is, else the one
    /// running or a new one, waited for up to `WAIT`.
    pub async fn get(&self) -> Answer {
        let asked = Instant::now();
        let last = self.last.borrow().clone();
        if let Some(pass) = last.as_ref().filter(|p| asked - p.ended <= FRESH) {
            return Answer::Current(pass.clone());
        }
        // A pass stuck past the wait: answer now from what there is.
        if self.running_for().is_some_and(|d| d > WAIT) {
            return last.map_or(Answer::Nothing, Answer::Stale);
        }
        self.request();
        let mut rx = self.last.clone();
        // A pass that ends after the reader came (one already running counts).
        let newer = rx.wait_for(|p| p.as_ref().is_some_and(|p| p.ended >= asked));
        let current = match tokio::time::timeout(WAIT, newer).await {
            Ok(Ok(pass)) => pass.clone(),
            _ => None,
        };
        match (current, self.last.borrow().clone()) {
            (Some(pass), _) => Answer::Current(pass),
            (None, Some(pass)) => Answer::Stale(pass),
            (None, None) => Answer::Nothing,
        }
    }

    /// Ask for a pass unless one is running or already asked for.
    fn request(&self) {
        if self.running.lock().map(|r| r.is_some()).unwrap_or(false) {
            return;
        }
        match self.wanted.try_send(()) {
            Ok(()) | Err(TrySendError::Full(())) => {}
            Err(TrySendError::Disconnected(())) => log_warn!("the passes' worker is gone"),
        }
    }

    /// How long the pass now running has run, if one is.
    fn running_for(&self) -> Option<Duration> {
        let since = self.running.lock().ok().and_then(|r| *r)?;
        Some(since.elapsed())
    }
}

fn set(running: &Mutex<Option<Instant>>, to: Option<Instant>) {
    if let Ok(mut r) = running.lock() {
        *r = to;
    }
}
