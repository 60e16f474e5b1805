//! ADD as an undo journal: each mutating step records how to undo itself;
//! on failure the steps are undone in reverse order.

pub struct Journal<S> {
    steps: Vec<S>,
}

impl<S> Default for Journal<S> {
    fn default() -> Self {
        Journal { steps: Vec::new() }
    }
}

impl<S> Journal<S> {
    pub fn push(&mut self, step: S) {
        self.steps.push(step);
    }

    /// A step whose undo covers every earlier one (and them only).
    pub fn replace_all(&mut self, step: S) {
        self.steps.clear();
        self.steps.push(step);
    }

    /// Undo every recorded step, newest first. Every step runs even if an
    /// earlier undo failed; the failures are returned for logging.
    pub fn unwind<E>(self, mut undo: impl FnMut(S) -> Result<(), E>) -> Vec<E> {
        let mut failures = Vec::new();
        for step in self.steps.into_iter().rev() {
            if let Err(e) = undo(step) {
                failures.push(e);
            }
        }
        failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwinds_newest_first_and_runs_every_step() {
        let mut j = Journal::default();
        for step in ["record", "ipam", "move", "mtu"] {
            j.push(step);
        }
        let mut order = Vec::new();
        let failures = j.unwind(|s: &str| {
            order.push(s);
            if s == "move" {
                Err("move back failed")
            } else {
                Ok(())
            }
        });
        assert_eq!(order, ["mtu", "move", "ipam", "record"]);
        assert_eq!(failures, ["move back failed"]);
    }

    #[test]
    fn a_covering_step_replaces_the_earlier_ones() {
        let mut j = Journal::default();
        j.push("record");
        j.push("ipam");
        j.replace_all("detach");
        j.push("later");
        let mut order = Vec::new();
        let failures = j.unwind(|s: &str| {
            order.push(s);
            Ok::<(), ()>(())
        });
        assert!(failures.is_empty());
        assert_eq!(order, ["later", "detach"]);
    }
}
