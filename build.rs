// The binary carries the demo world (src/cli/demo_world.rs embeds these
// folders): rebuild it whenever one of their files changes.
fn main() {
    for path in ["roles", "fixtures/roles", "fixtures/court.toml", "extensions"] {
        println!("cargo:rerun-if-changed={path}");
    }
}
