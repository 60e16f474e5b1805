//! `railcni-ipam`: the CNI IPAM plugin front end of the railcni_ipam library.

use std::io::Write;

fn main() {
    let cmd = std::env::var("CNI_COMMAND").unwrap_or_default();
    let out = if cmd == "VERSION" {
        r#"{"cniVersion":"1.1.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}"#.to_string()
    } else {
        let e = railcni_ipam::IpamError::new(105, "");
        format!(
            r#"{{"cniVersion":"1.1.0","code":{},"msg":"railcni-ipam is not implemented in this build"}}"#,
            e.code()
        )
    };
    let _ = writeln!(std::io::stdout(), "{out}");
    if cmd != "VERSION" {
        std::process::exit(1);
    }
}
