//! Rail routing: the `routing` config (`conf`), the pure plan computed
//! from it and the IPAM result (`plan`), how its interface sysctls are set
//! (`devconf`) and its installation in the pod (`apply`).

pub mod apply;
pub mod conf;
pub mod devconf;
pub mod plan;

pub use conf::RoutingConf;
pub use plan::{choose_table, plan, RailRoutes, RouteSpec};
