//! Helpers shared by every test module: sessions, a tiny reference array written in plain
//! Rust (explicit strides and broadcasting, nothing from Tessera), and comparisons.

#![allow(dead_code)]

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::{MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use tessera::{
    tensor, DType, Error, HostTensor, Progress, Scalar, Session, SessionBuilder, Tensor,
};

/// Serializes the eager-mode test against every other session: while an eager session
/// lives, every tensor operation in the process runs on it, and its shutdown would fail
/// jobs other threads had just handed to it. Lazy sessions hold a read guard, the eager
/// test the write guard.
static EAGER_LOCK: RwLock<()> = RwLock::new(());

thread_local! {
    /// This thread's read guard of [`EAGER_LOCK`] and the number of its live sessions. A
    /// second session on the thread shares the guard instead of reading the lock again:
    /// with the eager test waiting to write, std's lock blocks new readers behind the
    /// writer, and a test opening a session while it holds another would wait for a
    /// writer that waits for it.
    static HELD: RefCell<Option<(RwLockReadGuard<'static, ()>, usize)>> =
        const { RefCell::new(None) };
}

/// One session's share of its thread's read guard ([`HELD`]); the last share released
/// releases the guard. Not `Send`, so it is dropped on the thread that took it.
pub struct ReadShare(PhantomData<MutexGuard<'static, ()>>);

impl Drop for ReadShare {
    fn drop(&mut self) {
        HELD.with(|held| {
            let mut held = held.borrow_mut();
            if let Some((_, shares)) = held.as_mut() {
                *shares -= 1;
                if *shares == 0 {
                    *held = None;
                }
            }
        });
    }
}

/// A session plus the guard that keeps the eager test from running while it lives.
pub struct TestSession {
    // Field order: the session shuts down before the guard is released.
    session: Option<Session>,
    _guard: ReadShare,
}

impl TestSession {
    /// Shuts the session down and returns the shutdown's result (the guard is released after).
    pub fn shutdown(mut self) -> tessera::Result<()> {
        self.session.take().expect("session").shutdown()
    }
}

impl std::ops::Deref for TestSession {
    type Target = Session;
    fn deref(&self) -> &Session {
        self.session.as_ref().expect("session")
    }
}

fn read_guard() -> ReadShare {
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        match held.as_mut() {
            Some((_, shares)) => *shares += 1,
            None => *held = Some((EAGER_LOCK.read().unwrap_or_else(|p| p.into_inner()), 1)),
        }
    });
    ReadShare(PhantomData)
}

/// Waits (up to a minute) until `done` holds; false if it never did.
pub fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    done()
}

/// The panels of a performance report (and of the dashboard's last jobs), by element id.
pub const REPORT_PANELS: [&str; 7] = [
    "task-stream",
    "progress",
    "memory",
    "time-per-op",
    "occupancy",
    "job-stats",
    "plan",
];

/// Takes the exclusive guard for the eager-mode test.
pub fn exclusive() -> RwLockWriteGuard<'static, ()> {
    EAGER_LOCK.write().unwrap_or_else(|p| p.into_inner())
}

/// The settings every test session uses: two threads, no progress bar.
pub fn builder() -> SessionBuilder {
    Session::builder().threads(2).progress(Progress::Never)
}

/// A lazy session with two worker threads, no progress bar and default chunking.
pub fn session() -> TestSession {
    let guard = read_guard();
    TestSession {
        session: Some(builder().build().expect("session starts")),
        _guard: guard,
    }
}

/// A lazy session whose automatic chunks hold about `chunk_bytes` bytes (8 per element).
pub fn session_with_chunks(chunk_bytes: usize) -> TestSession {
    let guard = read_guard();
    TestSession {
        session: Some(
            builder()
                .chunk_bytes(chunk_bytes)
                .build()
                .expect("session starts"),
        ),
        _guard: guard,
    }
}

/// A lazy session built from `b` (start from [`builder`] for the test defaults).
pub fn session_from(b: SessionBuilder) -> TestSession {
    let guard = read_guard();
    TestSession {
        session: Some(b.build().expect("session starts")),
        _guard: guard,
    }
}

/// A lazy session built from `b`, or why it could not start.
pub fn try_session_from(b: SessionBuilder) -> tessera::Result<TestSession> {
    let guard = read_guard();
    Ok(TestSession {
        session: Some(b.build()?),
        _guard: guard,
    })
}

/// Executes `t`, panicking with the error if the job fails.
pub fn run(s: &Session, t: &Tensor) -> HostTensor {
    match t.execute(s) {
        Ok(h) => h,
        Err(e) => panic!("execution failed: {e} ({e:?})"),
    }
}

/// Runs `t` on `s` while calling [`Session::cancel_jobs`] every 10 ms until the job ends
/// (so a cancel lands whenever the job thread gets to submit), and asserts that it ended
/// with a "cancelled" error.
pub fn assert_cancelled(s: &Session, t: &Tensor) {
    let result = std::thread::scope(|sc| {
        let job = sc.spawn(|| t.execute(s));
        while !job.is_finished() {
            s.cancel_jobs();
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        job.join().expect("job thread")
    });
    match result {
        Err(Error::Runtime(why)) => assert!(why.contains("cancelled"), "{why}"),
        other => panic!("expected a cancelled job, got {other:?}"),
    }
}

/// The single value of a 0-d (or one-element) result as `f64`.
pub fn item_f64(h: &HostTensor) -> f64 {
    h.item().expect("one element").as_f64()
}

/// The single value of a one-element result.
pub fn item(h: &HostTensor) -> Scalar {
    h.item().expect("one element")
}

macro_rules! typed_values {
    ($($name:ident: $t:ty),*) => {$(
        #[doc = concat!("The elements of `h` as `Vec<", stringify!($t), ">` (panics if the dtype differs).")]
        pub fn $name(h: &HostTensor) -> Vec<$t> {
            match h.as_slice::<$t>() {
                Some(s) => s.to_vec(),
                None => panic!("expected {} elements, got dtype {:?}", stringify!($t), h.dtype()),
            }
        }
    )*};
}
typed_values!(f64s: f64, f32s: f32, i64s: i64, i32s: i32, u8s: u8, bools: bool);

/// C-order strides of `shape`, in elements.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// The multi-index of flat position `flat` in `shape`.
pub fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        idx[d] = flat % shape[d];
        flat /= shape[d];
    }
    idx
}

/// A plain reference n-d array of `f64` in C order.
#[derive(Clone, Debug, PartialEq)]
pub struct Arr {
    pub shape: Vec<usize>,
    pub data: Vec<f64>,
}

impl Arr {
    pub fn new(shape: &[usize], data: Vec<f64>) -> Arr {
        assert_eq!(
            shape.iter().product::<usize>(),
            data.len(),
            "reference data does not fill its shape"
        );
        Arr {
            shape: shape.to_vec(),
            data,
        }
    }

    /// Element `f(index)` at every multi-index.
    pub fn from_fn(shape: &[usize], f: impl Fn(&[usize]) -> f64) -> Arr {
        let n: usize = shape.iter().product();
        let data = (0..n).map(|i| f(&unravel(i, shape))).collect();
        Arr {
            shape: shape.to_vec(),
            data,
        }
    }

    /// Values 0, 1, 2, … in C order.
    pub fn iota(shape: &[usize]) -> Arr {
        let n: usize = shape.iter().product();
        Arr::new(shape, (0..n).map(|i| i as f64).collect())
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn get(&self, idx: &[usize]) -> f64 {
        let st = strides(&self.shape);
        self.data[idx.iter().zip(&st).map(|(i, s)| i * s).sum::<usize>()]
    }

    pub fn map(&self, f: impl Fn(f64) -> f64) -> Arr {
        Arr {
            shape: self.shape.clone(),
            data: self.data.iter().map(|&v| f(v)).collect(),
        }
    }

    /// `f(a, b)` with NumPy broadcasting, written out with explicit index arithmetic.
    pub fn zip(&self, other: &Arr, f: impl Fn(f64, f64) -> f64) -> Arr {
        let n = self.shape.len().max(other.shape.len());
        let pad = |s: &[usize]| {
            let mut v = vec![1; n - s.len()];
            v.extend_from_slice(s);
            v
        };
        let (sa, sb) = (pad(&self.shape), pad(&other.shape));
        let out: Vec<usize> = (0..n)
            .map(|d| {
                assert!(
                    sa[d] == sb[d] || sa[d] == 1 || sb[d] == 1,
                    "reference shapes do not broadcast"
                );
                sa[d].max(sb[d])
            })
            .collect();
        let (ta, tb) = (strides(&sa), strides(&sb));
        Arr::from_fn(&out, |idx| {
            let ia: usize = (0..n)
                .map(|d| if sa[d] == 1 { 0 } else { idx[d] * ta[d] })
                .sum();
            let ib: usize = (0..n)
                .map(|d| if sb[d] == 1 { 0 } else { idx[d] * tb[d] })
                .sum();
            f(self.data[ia], other.data[ib])
        })
    }

    /// Groups the values by the kept axes: for every output position (C order over the kept
    /// axes), the values along `axes` in C order. Returns the output shape (with or without
    /// the reduced axes as size 1) and the groups.
    pub fn groups(&self, axes: &[usize], keepdims: bool) -> (Vec<usize>, Vec<Vec<f64>>) {
        let nd = self.shape.len();
        let kept: Vec<usize> = (0..nd).filter(|d| !axes.contains(d)).collect();
        let kept_shape: Vec<usize> = kept.iter().map(|&d| self.shape[d]).collect();
        let red_shape: Vec<usize> = axes.iter().map(|&d| self.shape[d]).collect();
        let nk: usize = kept_shape.iter().product();
        let nr: usize = red_shape.iter().product();
        let mut groups = Vec::with_capacity(nk);
        for o in 0..nk {
            let ko = unravel(o, &kept_shape);
            let mut g = Vec::with_capacity(nr);
            for r in 0..nr {
                let ro = unravel(r, &red_shape);
                let mut idx = vec![0; nd];
                for (k, &d) in kept.iter().enumerate() {
                    idx[d] = ko[k];
                }
                for (k, &d) in axes.iter().enumerate() {
                    idx[d] = ro[k];
                }
                g.push(self.get(&idx));
            }
            groups.push(g);
        }
        let shape = if keepdims {
            (0..nd)
                .map(|d| if axes.contains(&d) { 1 } else { self.shape[d] })
                .collect()
        } else {
            kept_shape
        };
        (shape, groups)
    }

    /// Reduces over `axes` with `f` applied to each group of values.
    pub fn reduce(&self, axes: &[usize], keepdims: bool, f: impl Fn(&[f64]) -> f64) -> Arr {
        let (shape, groups) = self.groups(axes, keepdims);
        Arr::new(&shape, groups.iter().map(|g| f(g)).collect())
    }

    /// Python-style slice of every axis: (start, stop, step) with optional bounds.
    pub fn slice(&self, sl: &[(Option<isize>, Option<isize>, isize)]) -> Arr {
        let mut picks: Vec<Vec<usize>> = Vec::new();
        for (d, &n) in self.shape.iter().enumerate() {
            let (start, stop, step) = sl.get(d).copied().unwrap_or((None, None, 1));
            picks.push(py_range(n, start, stop, step));
        }
        let shape: Vec<usize> = picks.iter().map(Vec::len).collect();
        Arr::from_fn(&shape, |idx| {
            let src: Vec<usize> = idx.iter().enumerate().map(|(d, &i)| picks[d][i]).collect();
            self.get(&src)
        })
    }

    /// Axes in the order `perm`.
    pub fn permute(&self, perm: &[usize]) -> Arr {
        let shape: Vec<usize> = perm.iter().map(|&d| self.shape[d]).collect();
        Arr::from_fn(&shape, |idx| {
            let mut src = vec![0; perm.len()];
            for (k, &d) in perm.iter().enumerate() {
                src[d] = idx[k];
            }
            self.get(&src)
        })
    }
}

/// The positions `range(start, stop, step)` selects on an axis of length `n`, computed by
/// walking the axis the way Python's `slice.indices` does.
pub fn py_range(n: usize, start: Option<isize>, stop: Option<isize>, step: isize) -> Vec<usize> {
    assert!(step != 0);
    let n = n as isize;
    let norm = |v: isize| if v < 0 { v + n } else { v };
    let mut out = Vec::new();
    if step > 0 {
        let s = start.map_or(0, |v| norm(v).clamp(0, n));
        let e = stop.map_or(n, |v| norm(v).clamp(0, n));
        let mut i = s;
        while i < e {
            out.push(i as usize);
            i += step;
        }
    } else {
        let s = start.map_or(n - 1, |v| norm(v).clamp(-1, n - 1));
        let e = stop.map_or(-1, |v| norm(v).clamp(-1, n - 1));
        let mut i = s;
        while i > e {
            out.push(i as usize);
            i += step;
        }
    }
    out
}

/// True when `a` and `b` agree within `rtol` relative / `atol` absolute (NaN equals NaN,
/// infinities must match exactly).
pub fn close(a: f64, b: f64, rtol: f64, atol: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a.is_infinite() || b.is_infinite() {
        return a == b;
    }
    (a - b).abs() <= atol + rtol * b.abs()
}

/// Asserts shape, dtype and values (within tolerance) of a result against a reference.
pub fn assert_close(got: &HostTensor, want: &Arr, dtype: DType, rtol: f64, atol: f64) {
    assert_eq!(got.shape(), &want.shape[..], "shape");
    assert_eq!(got.dtype(), dtype, "dtype");
    let g = got.to_f64_vec();
    assert_eq!(g.len(), want.data.len(), "element count");
    for (i, (&a, &b)) in g.iter().zip(&want.data).enumerate() {
        assert!(
            close(a, b, rtol, atol),
            "element {i} (index {:?}): got {a}, expected {b} (rtol {rtol}, atol {atol})",
            unravel(i, &want.shape)
        );
    }
}

/// Asserts shape, dtype and exact values (after conversion to `f64`; NaN equals NaN).
pub fn assert_exact(got: &HostTensor, want: &Arr, dtype: DType) {
    assert_close(got, want, dtype, 0.0, 0.0);
}

/// Asserts two results are identical: shape, dtype and every bit of every value.
pub fn assert_bitwise(a: &HostTensor, b: &HostTensor) {
    assert_eq!(a.shape(), b.shape(), "shape");
    assert_eq!(a.dtype(), b.dtype(), "dtype");
    let same = match a.dtype() {
        DType::F64 => bits64(a) == bits64(b),
        DType::F32 => bits32(a) == bits32(b),
        _ => a == b,
    };
    assert!(same, "results differ:\n{a:?}\nvs\n{b:?}");
}

/// Asserts two results agree in shape and dtype and their values within `rtol`.
pub fn assert_same_close(a: &HostTensor, b: &HostTensor, rtol: f64) {
    assert_eq!(a.shape(), b.shape(), "shape");
    assert_eq!(a.dtype(), b.dtype(), "dtype");
    for (i, (x, y)) in a.to_f64_vec().into_iter().zip(b.to_f64_vec()).enumerate() {
        assert!(close(x, y, rtol, 1e-12), "element {i}: {x} vs {y}");
    }
}

fn bits64(h: &HostTensor) -> Vec<u64> {
    h.as_slice::<f64>()
        .expect("f64")
        .iter()
        .map(|v| v.to_bits())
        .collect()
}

fn bits32(h: &HostTensor) -> Vec<u32> {
    h.as_slice::<f32>()
        .expect("f32")
        .iter()
        .map(|v| v.to_bits())
        .collect()
}

/// Checks that `t` carries an error matching `pred` whose message mentions every string in
/// `mentions`, that `execute` returns exactly that error, and that later operations (on
/// either side) pass it on.
pub fn expect_carried_error(
    s: &Session,
    what: &str,
    t: &Tensor,
    pred: impl Fn(&Error) -> bool,
    mentions: &[&str],
) {
    let built = t
        .error()
        .cloned()
        .unwrap_or_else(|| panic!("{what}: no error carried (shape {:?})", t.shape()));
    assert!(pred(&built), "{what}: unexpected error {built:?}");
    let msg = built.to_string();
    for m in mentions {
        assert!(
            msg.contains(m),
            "{what}: message {msg:?} does not mention {m:?}"
        );
    }
    assert!(t.shape().is_err() && t.dtype().is_err());
    match t.execute(s) {
        Err(e) => assert_eq!(e, built, "{what}: execute returns the carried error"),
        Ok(h) => panic!("{what}: executed to {h:?}"),
    }
    // Later operations pass the same error on.
    let later = (t + 1i64).sum().reshape(&[1]);
    assert_eq!(later.error(), Some(&built), "{what}: error not passed on");
    assert_eq!(later.execute(s).err(), Some(built.clone()));
    let other = tensor::ones(&[3], DType::F64);
    assert_eq!(
        (&other * t).error(),
        Some(&built),
        "{what}: error not passed on from the right"
    );
    assert_eq!(tensor::concatenate(&[&other, t], 0).error(), Some(&built));
}

/// A private spill parent folder for one test, removed with everything in it at the end.
pub struct SpillParent(pub std::path::PathBuf);

impl SpillParent {
    /// A fresh, empty folder named after `name` and this process.
    pub fn new(name: &str) -> SpillParent {
        let dir = std::env::temp_dir().join(format!("tessera-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        SpillParent(dir)
    }

    /// The names of the entries in the folder, sorted.
    pub fn entries(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// Bytes of every file under the folder.
    pub fn bytes(&self) -> u64 {
        fn walk(p: &std::path::Path) -> u64 {
            std::fs::read_dir(p).map_or(0, |entries| {
                entries
                    .flatten()
                    .map(|e| match e.metadata() {
                        Ok(m) if m.is_dir() => walk(&e.path()),
                        Ok(m) => m.len(),
                        Err(_) => 0,
                    })
                    .sum()
            })
        }
        walk(&self.0)
    }
}

impl Drop for SpillParent {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
