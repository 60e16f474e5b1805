//! The fake SR-IOV node the root package's tests use (`tests/common`) and a
//! containerd of the tests' own driven through CRI (`harness`).

#[path = "../../tests/common/mod.rs"]
pub mod common;
pub mod harness;
