//! The programs `tessera-scheduler` and `tessera-worker` start, describe their flags, and
//! refuse a bad one with a message and a failing exit status; a scheduler writes its
//! address file, and with a worker it stops on Ctrl-C, and the worker with it. (Building this test also builds the programs,
//! which the cluster tests of other crates start.)

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a program may take to start, register or stop before the test fails (a guard
/// against hanging, not a timing).
const PATIENCE: Duration = Duration::from_secs(60);

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

/// `child`'s exit status once it ends, or `None` (after killing it) if it runs past
/// [`PATIENCE`].
fn wait_or_kill(child: &mut Child) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + PATIENCE;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn a_scheduler_with_a_worker_stops_on_ctrl_c_and_the_worker_ends() {
    let dir = std::env::temp_dir().join(format!("tessera-programs-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let address_file = dir.join("scheduler-address");
    let mut scheduler = Command::new(env!("CARGO_BIN_EXE_tessera-scheduler"))
        .args(["--listen", "127.0.0.1:0", "--address-file"])
        .arg(&address_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(scheduler.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let address = line
        .trim()
        .strip_prefix("tessera-scheduler listening on ")
        .unwrap_or_else(|| panic!("first line: {line:?}"))
        .to_string();
    // Written before the line is printed.
    let written = std::fs::read_to_string(&address_file).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(written, format!("{address}\n"));
    // The scheduler's log says when the worker's stream is open (the connection a
    // graceful shutdown would wait on forever); read it on a thread.
    let mut log = scheduler.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(&mut log);
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
            if line.contains("worker stream open") {
                let _ = tx.send(());
            }
            line.clear();
        }
        let _ = std::io::copy(&mut log.take(u64::MAX), &mut std::io::sink());
    });
    let mut worker = Command::new(env!("CARGO_BIN_EXE_tessera-worker"))
        .args(["--scheduler", &address, "--nthreads", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let registered = rx.recv_timeout(PATIENCE).is_ok();
    let interrupted = Command::new("kill")
        .args(["-INT", &scheduler.id().to_string()])
        .status()
        .unwrap()
        .success();
    let scheduler_status = wait_or_kill(&mut scheduler);
    let worker_status = wait_or_kill(&mut worker);
    assert!(registered && interrupted, "the worker did not register");
    let scheduler_status = scheduler_status.expect("the scheduler ran on after Ctrl-C");
    assert!(scheduler_status.success(), "{scheduler_status}");
    assert!(worker_status.is_some(), "the worker outlived its scheduler");
}
