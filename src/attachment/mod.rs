//! What DEL, GC, ADD's rollback, CHECK and the day-2 commands share about
//! one attachment: giving it back (`detach`) and comparing it with the
//! kernel (`verify`).

pub mod detach;
pub mod verify;
