//! The CNI verbs. Each takes the request on its node and returns a result
//! or a typed error; what they share with the day-2 commands lives in
//! `attachment`, `vf` and `routing`.

pub mod add;
pub mod check;
mod ctx;
pub mod del;
pub mod gc;
pub mod status;

pub use ctx::Ctx;
