//! The human command line (`railcni --help`). Operator subcommands come later.

use clap::Parser;

#[derive(Parser)]
#[command(
    name = "railcni",
    version,
    about = "CNI plugin that attaches SR-IOV rail VFs to AI training pods",
    long_about = "railcni is run by container runtimes (Multus, libcni, containerd, CRI-O, podman) \
                  with CNI_COMMAND set; it then reads the network config on stdin and prints the CNI \
                  result on stdout.\n\nWithout CNI_COMMAND it is this command-line tool."
)]
struct Cli {}

pub fn main() {
    let _cli = Cli::parse();
    eprintln!("railcni: no subcommand given; see `railcni --help`. Runtimes call railcni with CNI_COMMAND set.");
    std::process::exit(2);
}
