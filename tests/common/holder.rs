//! A process holding a pod's namespace, as a sandbox or a process stuck in
//! the GPU driver does; killed on every exit path.

use std::process::{Child, Command, Stdio};

use super::Node;

/// A process holding a namespace, killed on every exit path.
pub struct Holder(Child);

impl Holder {
    /// `sleep` running inside the namespace at `path`.
    pub fn inside(path: &str) -> Holder {
        let ns = Node::ns_of(path);
        let child = Command::new("ip")
            .args(["netns", "exec", &ns, "sleep", "300"])
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let h = Holder(child);
        // `ip netns exec` has entered the namespace once its sleep runs.
        let target = std::fs::metadata(path).unwrap();
        for _ in 0..200 {
            let ns_of_child = std::fs::metadata(format!("/proc/{}/ns/net", h.0.id()));
            if ns_of_child.is_ok_and(|m| {
                use std::os::unix::fs::MetadataExt;
                m.ino() == target.ino() && m.dev() == target.dev()
            }) {
                return h;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("the holder never entered {path}");
    }

    /// `sleep` outside the namespace, holding it only through an open
    /// descriptor (its stdin): nothing railcni can find it by.
    pub fn by_descriptor(path: &str) -> Holder {
        let file = std::fs::File::open(path).unwrap();
        Holder(
            Command::new("sleep")
                .arg("300")
                .stdin(file)
                .spawn()
                .unwrap(),
        )
    }

    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
