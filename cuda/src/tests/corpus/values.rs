//! Deterministic input values for the corpus's chunk leaves.

use super::*;

/// Deterministic test values (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The input slot holding the edge cases of the division, remainder, shift and rounding
/// rules, in turn: [`EDGE_INTS`] (wrapped to the dtype) or [`EDGE_FLOATS`].
pub const EDGE_SLOT: usize = 7;

/// Integer edge cases: both ends of every integer dtype, by-zero and `MIN // -1`, shift
/// counts at and past every width, and negative counts.
pub const EDGE_INTS: [i64; 22] = [
    i64::MIN,
    i64::MAX,
    -1,
    0,
    1,
    2,
    -2,
    3,
    -7,
    7,
    8,
    31,
    32,
    63,
    64,
    i32::MIN as i64,
    i32::MAX as i64,
    255,
    256,
    -129,
    100,
    -100,
];

/// Float edge cases: NaN, both zeros and infinities, halves (round half to even), a
/// subnormal, values past `f32`'s range and beyond the last fraction bit.
pub const EDGE_FLOATS: [f64; 22] = [
    f64::NAN,
    -0.0,
    0.0,
    f64::INFINITY,
    f64::NEG_INFINITY,
    0.5,
    -0.5,
    1.5,
    -1.5,
    2.5,
    -2.5,
    1.0,
    -1.0,
    3.0,
    -7.25,
    1e300,
    -1e300,
    5e-324,
    0.1,
    2.0,
    1e-10,
    4503599627370497.0,
];

/// `n` values of `dtype` for input `slot`: slot 0 mixes extremes, NaN, infinities and
/// signed zeros into its values; the other slots hold small values (integers in `0..6`,
/// so integer powers stay defined).
pub fn values(dtype: DType, n: usize, slot: usize) -> tessera_kernels::tensor::Buffer {
    use tessera_kernels::tensor::Buffer;
    let mut rng = Rng(0x5EED ^ (slot as u64).wrapping_mul(0x1234_5678_9ABC));
    let wide = slot == 0;
    let f64s: Vec<f64> = (0..n)
        .map(|k| {
            let r = rng.next();
            let special = [
                f64::NAN,
                -0.0,
                0.0,
                f64::INFINITY,
                -1e300,
                2.5e-310,
                7.0,
                -3.5,
            ];
            if wide && k % 4 == 1 {
                special[(r % 8) as usize]
            } else {
                let u = (r >> 11) as f64 / 9_007_199_254_740_992.0;
                if wide {
                    -20.0 + 40.0 * u
                } else {
                    -3.0 + 6.0 * u
                }
            }
        })
        .collect();
    let ints: Vec<i64> = (0..n)
        .map(|k| {
            let r = rng.next();
            let special = [
                i64::MIN,
                i64::MAX,
                -1,
                0,
                i64::from(i32::MIN),
                255,
                256,
                -129,
            ];
            if !wide {
                (r % 6) as i64
            } else if k % 4 == 1 {
                special[(r % 8) as usize]
            } else {
                (r % 41) as i64 - 20
            }
        })
        .collect();
    let (f64s, ints) = if slot == EDGE_SLOT {
        let f = (0..n).map(|k| EDGE_FLOATS[k % EDGE_FLOATS.len()]).collect();
        (f, (0..n).map(|k| EDGE_INTS[k % EDGE_INTS.len()]).collect())
    } else {
        (f64s, ints)
    };
    match dtype {
        DType::Bool => Buffer::Bool(ints.iter().map(|v| v & 1 == 1).collect()),
        DType::U8 => Buffer::U8(ints.iter().map(|&v| v as u8).collect()),
        DType::I32 => Buffer::I32(ints.iter().map(|&v| v as i32).collect()),
        DType::I64 => Buffer::I64(ints),
        DType::F32 => Buffer::F32(f64s.iter().map(|&v| v as f32).collect()),
        DType::F64 => Buffer::F64(f64s),
        other => Buffer::I64(ints).cast(other),
    }
}

/// The inputs the kernel's chunk leaves read, filled by [`values`].
pub fn inputs_for(kernel: &FusedKernel) -> Vec<std::sync::Arc<tessera_kernels::ChunkData>> {
    let mut slots: std::collections::BTreeMap<usize, (DType, Vec<usize>)> = Default::default();
    for i in &kernel.instrs {
        if let InstrKind::Leaf(LeafSource::Chunks { chunks, .. }) = &i.kind {
            for c in chunks {
                slots.entry(c.input).or_insert((i.dtype, c.shape.clone()));
            }
        }
    }
    let count = slots.keys().next_back().map_or(0, |&s| s + 1);
    (0..count)
        .map(|slot| {
            let (dtype, shape) = slots.get(&slot).cloned().unwrap_or((DType::F64, vec![0]));
            let n = shape.iter().product();
            let t = tessera_kernels::HostTensor::new(shape, values(dtype, n, slot)).unwrap();
            std::sync::Arc::new(tessera_kernels::ChunkData::Tensor(t))
        })
        .collect()
}
