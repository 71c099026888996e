//! The generated Rust code under `src/gen/` is checked in, so that building Tessera needs
//! neither protoc nor a build script. This test regenerates it from `proto/tessera.proto`
//! (protox parses the file in pure Rust) and fails when the checked-in copy is stale.
//!
//! To regenerate: `TESSERA_REGEN=1 cargo test -p tessera-proto --test generated_code`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

const GENERATED: &str = "tessera.v1.rs";

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Generates the code for `tessera.proto` into `out_dir`.
fn generate(out_dir: &Path) {
    let proto_dir = crate_dir().join("proto");
    let fds = protox::compile([proto_dir.join("tessera.proto")], [&proto_dir])
        .expect("tessera.proto does not compile");
    tonic_prost_build::configure()
        .out_dir(out_dir)
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)
        .expect("code generation failed");
}

#[test]
fn checked_in_code_matches_the_proto_file() {
    let checked_in_dir = crate_dir().join("src").join("gen");
    if std::env::var_os("TESSERA_REGEN").is_some() {
        std::fs::create_dir_all(&checked_in_dir).unwrap();
        generate(&checked_in_dir);
        return;
    }
    let tmp = std::env::temp_dir().join(format!("tessera-proto-regen-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    generate(&tmp);
    let fresh = std::fs::read_to_string(tmp.join(GENERATED)).unwrap();
    std::fs::remove_dir_all(&tmp).unwrap();
    let checked_in = std::fs::read_to_string(checked_in_dir.join(GENERATED)).unwrap_or_default();
    assert!(
        fresh == checked_in,
        "proto/src/gen/{GENERATED} is stale: it differs from what proto/proto/tessera.proto \
         generates. Regenerate it with\n    TESSERA_REGEN=1 cargo test -p tessera-proto \
         --test generated_code\nand commit the result."
    );
}
