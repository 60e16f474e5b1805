//! Rail routing: the `routing` config (`conf`) and the pure plan computed
//! from it and the IPAM result (`plan`).

pub mod apply;
pub mod conf;
pub mod plan;

pub use conf::RoutingConf;
pub use plan::{choose_table, plan, RailRoutes, RouteSpec, RuleSpec};
