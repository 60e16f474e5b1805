//! What DEL, GC, ADD's rollback, CHECK, the agent and the day-2 commands
//! share about one attachment: giving it back (`detach`), re-attaching a VF
//! a driver reload tore out of its pod (`reattach`) and comparing it with
//! the kernel (`verify`), and whether a live namespace is a record's pod
//! (`identity`).

pub mod detach;
pub mod identity;
pub mod reattach;
pub mod verify;
