# Sourced by the benchmarks that time this tree against an older release
# (bench-identity.sh, bench-ib.sh, bench-port.sh).
#
# build_two OLD_REV OLD_TREE: release builds, with the fake hardware, of
# this tree and of OLD_REV checked out in a worktree at OLD_TREE (its target
# dir beside it, so the two never share one); sets $new and $old to their
# railcni. The caller's EXIT trap removes the worktree.
build_two() {
  local old_rev=$1 old_tree=$2
  cargo build --release --quiet --features railcni/fake-hardware -p railcni
  git worktree add --quiet --detach "$old_tree" "$old_rev"
  (cd "$old_tree" && CARGO_TARGET_DIR=$PWD/../old-target cargo build --release --quiet --features railcni/fake-hardware -p railcni)
  new=$PWD/target/release/railcni
  old=$(dirname "$old_tree")/old-target/release/railcni
}
