//! STATUS: can this node serve an ADD right now?

use super::Ctx;
use crate::cni::version::Version;
use crate::error::Result;
use crate::ipam::Ipam;

pub fn status(ctx: &Ctx) -> Result<()> {
    ctx.conf.version.require(Version::V1_1, "STATUS")?;
    ctx.store.probe_writable()?;
    if let Some(ipam) = Ipam::new(&ctx.conf, &ctx.env) {
        ipam.status()?;
    }
    Ok(())
}
