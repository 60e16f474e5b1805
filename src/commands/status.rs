//! STATUS: can this node serve an ADD right now?

use crate::commands::ctx::Ctx;
use crate::error::Result;

pub fn status(ctx: &Ctx) -> Result<()> {
    ctx.node.store.probe_writable()?;
    if let Some(ipam) = ctx.ipam() {
        ipam.status()?;
    }
    Ok(())
}
