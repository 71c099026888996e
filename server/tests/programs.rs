//! The programs `tessera-scheduler` and `tessera-worker` start, describe their flags, and
//! refuse a bad one with a message and a failing exit status. (Building this test also
//! builds the programs, which the cluster tests of other crates start.)

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::Command;

/// `program`'s output for `args`: its exit success, stdout and stderr.
fn run(program: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(program).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_scheduler_describes_its_flags_and_refuses_a_bad_address() {
    let program = env!("CARGO_BIN_EXE_tessera-scheduler");
    let (ok, help, _) = run(program, &["--help"]);
    assert!(ok);
    for flag in ["--listen", "--dashboard", "--metrics"] {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
    let (ok, _, err) = run(program, &["--listen", "not-an-address"]);
    assert!(!ok);
    assert!(err.contains("not-an-address"), "{err}");
}

#[test]
fn the_worker_describes_its_flags_and_refuses_a_bad_memory_limit() {
    let program = env!("CARGO_BIN_EXE_tessera-worker");
    let (ok, help, _) = run(program, &["--help"]);
    assert!(ok);
    for flag in ["--scheduler", "--memory-limit", "--nthreads"] {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
    let (ok, _, err) = run(
        program,
        &["--scheduler", "127.0.0.1:1", "--memory-limit", "lots"],
    );
    assert!(!ok);
    assert!(err.contains("lots"), "{err}");
}
