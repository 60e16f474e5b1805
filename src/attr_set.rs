//! A device's settings as railcni changes them: a keyed set of attributes,
//! at most one of each kind, in the order they are applied. As a request:
//! what the config sets. As saved state: the values before, of exactly the
//! kinds the request changes. VF settings on the PF (`vf::settings`) and
//! the RDMA device's RoCE QoS (`rdma_qos`) are both this shape; what
//! differs is only the attribute type and where the `Hardware` writes it.

/// One attribute of a device.
pub trait Attr: Copy + PartialEq + std::fmt::Debug {
    /// Same attribute, whatever the value.
    fn same_kind(&self, other: &Self) -> bool;
    /// Where it comes when several are set.
    fn apply_rank(&self) -> u8;
    /// Its name where users read it.
    fn name(&self) -> &'static str;
    /// As the device's own tool would name it (`ip link set … vf N`).
    fn describe(&self) -> String;
}

/// At most one attribute of each kind, in apply order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttrSet<A>(Vec<A>);

impl<A> Default for AttrSet<A> {
    fn default() -> Self {
        AttrSet(Vec::new())
    }
}

impl<A: Attr> AttrSet<A> {
    /// The attributes, in the order they are applied.
    pub fn attrs(&self) -> &[A] {
        &self.0
    }

    /// Take `attr`'s value for its kind (replacing one already there).
    pub fn set(&mut self, attr: A) {
        match self.0.iter_mut().find(|a| a.same_kind(&attr)) {
            Some(held) => *held = attr,
            None => {
                let at = self
                    .0
                    .partition_point(|a| a.apply_rank() < attr.apply_rank());
                self.0.insert(at, attr);
            }
        }
    }

    pub fn from_attrs(attrs: impl IntoIterator<Item = A>) -> Self {
        let mut out = AttrSet::default();
        for attr in attrs {
            out.set(attr);
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The one of `kind`'s kind, when held.
    pub fn get(&self, kind: &A) -> Option<A> {
        self.0.iter().find(|a| a.same_kind(kind)).copied()
    }

    /// The names of the attributes held, as users read them.
    pub fn field_names(&self) -> Vec<String> {
        self.0.iter().map(|a| a.name().to_string()).collect()
    }

    /// Take every attribute `other` holds (what a device holds after `other` was set).
    pub fn overlay(&mut self, other: &AttrSet<A>) {
        for attr in other.attrs() {
            self.set(*attr);
        }
    }

    /// The settings as the device's own tool names them, space-separated.
    pub fn describe(&self) -> String {
        let words: Vec<String> = self.0.iter().map(A::describe).collect();
        words.join(" ")
    }

    /// The current values (from `state`) of the kinds this request sets:
    /// what DEL and ADD rollback restore, and only that.
    pub fn originals(&self, state: &AttrSet<A>) -> AttrSet<A> {
        AttrSet::from_attrs(
            state
                .attrs()
                .iter()
                .filter(|a| self.0.iter().any(|b| b.same_kind(a)))
                .copied(),
        )
    }

    /// Saved originals read again from a device that may still hold what
    /// railcni set (`applied`): a kind whose value now is railcni's own
    /// keeps what `saved` says was there before railcni.
    pub fn kept_through(&self, applied: &AttrSet<A>, saved: &AttrSet<A>) -> AttrSet<A> {
        AttrSet::from_attrs(
            self.0
                .iter()
                .map(|now| match (applied.get(now), saved.get(now)) {
                    (Some(ours), Some(before)) if ours == *now => before,
                    _ => *now,
                }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Knob {
        A(u8),
        B(bool),
    }

    impl Attr for Knob {
        fn same_kind(&self, other: &Self) -> bool {
            std::mem::discriminant(self) == std::mem::discriminant(other)
        }
        fn apply_rank(&self) -> u8 {
            match self {
                Knob::A(_) => 0,
                Knob::B(_) => 1,
            }
        }
        fn name(&self) -> &'static str {
            match self {
                Knob::A(_) => "a",
                Knob::B(_) => "b",
            }
        }
        fn describe(&self) -> String {
            format!("{self:?}")
        }
    }

    #[test]
    fn one_per_kind_in_apply_order_and_originals_of_those_kinds_only() {
        let s = AttrSet::from_attrs([Knob::B(true), Knob::A(1), Knob::A(2)]);
        assert_eq!(s.attrs(), [Knob::A(2), Knob::B(true)]);
        let request = AttrSet::from_attrs([Knob::B(false)]);
        assert_eq!(request.originals(&s).attrs(), [Knob::B(true)]);
        assert_eq!(s.get(&Knob::A(0)), Some(Knob::A(2)));
        assert_eq!(s.field_names(), ["a", "b"]);
    }

    #[test]
    fn a_value_still_railcnis_keeps_the_original_from_before_railcni() {
        let applied = AttrSet::from_attrs([Knob::A(96), Knob::B(true)]);
        let saved = AttrSet::from_attrs([Knob::A(0), Knob::B(false)]);
        // A remade device: A reset to 5 (not ours), B still ours.
        let now = AttrSet::from_attrs([Knob::A(5), Knob::B(true)]);
        assert_eq!(
            now.kept_through(&applied, &saved).attrs(),
            [Knob::A(5), Knob::B(false)]
        );
    }
}
