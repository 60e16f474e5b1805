//! Plane expansion: a multi-plane rail (ConnectX-8 class, 2 or 4 ports per
//! rail NIC) becomes one network per plane, each with its part of the
//! rail's cidr and its own PF.

use ipnet::IpNet;

use super::schema::{Pf, PlanError, Rail, Result};

impl Rail {
    /// A rail of one plane, as it is.
    pub(super) fn one_plane(self) -> Result<Rail> {
        if matches!(self.pf, Some(Pf::PerPlane(_))) {
            return Err(PlanError(format!(
                "rail {}: pf lists one PF per plane, but the rail has no planes: name its one PF",
                self.name
            )));
        }
        if !self.plane_cidrs.is_empty() {
            return Err(PlanError(format!(
                "rail {}: planeCidrs without planes: give the rail `planes` or drop planeCidrs",
                self.name
            )));
        }
        Ok(Rail {
            planes: None,
            ..self
        })
    }

    /// Each plane's PF: `pf` lists one per plane, in plane order.
    pub(super) fn plane_pfs(&self, n: u8) -> Result<Vec<Option<Pf>>> {
        match &self.pf {
            None => Ok(vec![None; usize::from(n)]),
            Some(Pf::PerPlane(list)) if list.len() == usize::from(n) => {
                Ok(list.iter().map(|p| Some(Pf::One(p.clone()))).collect())
            }
            Some(_) => Err(PlanError(format!(
                "rail {}: pf must list one PF per plane ({n}), in plane order",
                self.name
            ))),
        }
    }

    /// Each plane's cidr: `planeCidrs` as given (one per plane, each in
    /// `cidr`), else `cidr` in equal parts.
    pub(super) fn plane_parts(&self, n: u8, bits: u8) -> Result<Vec<IpNet>> {
        if !self.plane_cidrs.is_empty() {
            if self.plane_cidrs.len() != usize::from(n) {
                return Err(PlanError(format!(
                    "rail {}: planeCidrs lists {} cidrs for {n} planes: list one per plane, in plane order",
                    self.name,
                    self.plane_cidrs.len()
                )));
            }
            if let Some(outside) = self.plane_cidrs.iter().find(|c| !self.cidr.contains(*c)) {
                return Err(PlanError(format!(
                    "rail {}: plane cidr {outside} is not in the rail's cidr {}",
                    self.name, self.cidr
                )));
            }
            return Ok(self.plane_cidrs.clone());
        }
        Ok(self
            .cidr
            .subnets(self.cidr.prefix_len() + bits)
            .map_err(|_| {
                PlanError(format!(
                    "rail {}: cidr {} is too small for {n} planes",
                    self.name, self.cidr
                ))
            })?
            .collect())
    }

    /// The rail, or one network per plane: `<name>-p<k>` with the k-th
    /// equal part of `cidr`, resource `<resourceName>-p<k>`, rail-major.
    pub(super) fn into_planes(self) -> Result<Vec<Rail>> {
        let n = match self.planes {
            None | Some(1) => return self.one_plane().map(|rail| vec![rail]),
            Some(n @ (2 | 4)) => n,
            Some(other) => {
                return Err(PlanError(format!(
                    "rail {}: planes {other} must be 1, 2 or 4",
                    self.name
                )))
            }
        };
        if !self.static_allocations.is_empty() {
            return Err(PlanError(format!(
                "rail {}: planes cannot be combined with staticAllocations; list each plane as a rail of its own",
                self.name
            )));
        }
        let pfs = self.plane_pfs(n)?;
        let bits = n.trailing_zeros() as u8;
        let parts = self.plane_parts(n, bits)?;
        Ok(parts
            .into_iter()
            .enumerate()
            .map(|(k, cidr)| Rail {
                name: format!("{}-p{k}", self.name),
                cidr,
                cidr6: self
                    .cidr6
                    .and_then(|c6| c6.subnets(c6.prefix_len() + bits).ok()?.nth(k)),
                // A plane's own part is what its gateway reaches by default.
                routes: if self.routes.is_empty() {
                    vec![cidr]
                } else {
                    self.routes.clone()
                },
                resource_name: self.resource_name.as_ref().map(|r| format!("{r}-p{k}")),
                planes: None,
                plane_cidrs: Vec::new(),
                pf: pfs[k].clone(),
                plane_of: Some(self.name.clone()),
                ..self.clone()
            })
            .collect())
    }
}
