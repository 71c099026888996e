//! Fault injection: injected kernel errors and panics are retried and the result equals the
//! fault-free one bit for bit; faults beyond the retry limit end in an error naming the
//! chunk, the op and the cause, and the session stays usable.

use crate::common::{builder, run, session_from};
use std::sync::Arc;
use tessera::{tensor, Error, FaultInjector, FaultKind, KernelError, Tensor};

/// Monte Carlo pi's count of points inside the circle: an integer, so comparisons are exact.
fn inside(n: usize) -> Tensor {
    let d = tensor::random::default_rng(7).uniform(-1.0, 1.0, &[n, 2]);
    (&d * &d).sum_axis(1).sqrt().lt(1.0).sum()
}

/// Column variances: a float reduction whose combine tree has a fixed shape.
fn column_var() -> Tensor {
    tensor::random::default_rng(3)
        .normal(5.0, 2.0, &[3000, 7])
        .var_axis(0, 1)
}

#[test]
fn injected_faults_are_retried_and_the_result_is_unchanged() {
    let chunks = 16_000; // 2000 elements a chunk: pi has 100 partials and 15 combines.
    let reference = run(
        &session_from(builder().chunk_bytes(chunks)),
        &inside(200_000),
    );
    let reference_var = run(&session_from(builder().chunk_bytes(chunks)), &column_var());
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for trial in 0..9u64 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let kind = if trial % 2 == 0 {
            FaultKind::Panic
        } else {
            FaultKind::Error
        };
        let (op, nth) = match trial % 3 {
            0 => (Some("fused_reduce"), 1 + (state >> 33) % 100),
            1 => (Some("combine"), 1 + (state >> 33) % 15),
            _ => (None, 1 + (state >> 33) % 115),
        };
        let faults = Arc::new(FaultInjector::new().on_nth(op, nth, kind));
        let s = session_from(builder().chunk_bytes(chunks).faults(faults.clone()));
        let (got, stats) = s
            .execute_with_stats(&inside(200_000))
            .expect("the job survives the fault");
        assert_eq!(got, reference, "trial {trial}: {kind:?} at {op:?} #{nth}");
        assert_eq!(faults.injected(), 1, "trial {trial}: the fault fired once");
        assert_eq!(stats.retries, 1, "trial {trial}: one chunk ran again");
        // The same session, now past its fault, computes a float reduction exactly as before.
        assert_eq!(run(&s, &column_var()), reference_var);
    }
}

#[test]
fn faults_beyond_the_retry_limit_fail_the_job_and_the_session_recovers() {
    let faults = Arc::new(FaultInjector::new().on_nth(Some("combine"), 0, FaultKind::Error));
    // Chunks of 48 KiB: the sum's few partials are combined by one task (a one-chunk
    // sum would finish in its fused task, with no combine to fail).
    let s = session_from(builder().chunk_bytes(48 << 10).faults(faults.clone()));
    let err = inside(10_000).execute(&s).expect_err("every combine fails");
    match &err {
        Error::ChunkFailed {
            op,
            cause: KernelError::Injected(_),
            ..
        } => assert_eq!(op, "combine"),
        other => panic!("unexpected error {other:?}"),
    }
    assert!(err.to_string().contains("injected fault"), "{err}");
    assert_eq!(faults.injected(), 3, "one chunk, run three times in all");
    // A job without a combine still runs on the same session.
    let doubled = run(&s, &tensor::arange(0, 5, 1).mul(2i64));
    assert_eq!(doubled.as_slice::<i64>(), Some(&[0i64, 2, 4, 6, 8][..]));
}
