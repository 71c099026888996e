//! Chunks of every kind and dtype, and a comparison that is exact to the bit.

use arrow::array::{
    ArrayRef, BooleanArray, DictionaryArray, Float64Array, Int64Array, RecordBatch, StringArray,
    TimestampNanosecondArray,
};
use arrow::datatypes::{DataType, Field, Int32Type, Schema, TimeUnit};
use std::collections::HashMap;
use std::sync::Arc;
use tessera_kernels::expr::ReduceOp;
use tessera_kernels::frame::join::HashedSide;
use tessera_kernels::{Buffer, ChunkData, DType, HostTensor, Partial, C128, C64};

/// A NaN with a payload, which a float conversion would lose.
pub const NAN_PAYLOAD_F64: u64 = 0x7ff8_0000_dead_beef;
/// A signalling-pattern f32 NaN with a payload.
pub const NAN_PAYLOAD_F32: u32 = 0x7fa0_1234;

pub fn tensor(shape: &[usize], data: Buffer) -> HostTensor {
    HostTensor::new(shape.to_vec(), data).unwrap()
}

/// One tensor per dtype, shaped `shape`, with values that exercise the dtype's edges.
pub fn tensors_of_every_dtype(shape: &[usize]) -> Vec<HostTensor> {
    let n: usize = shape.iter().product();
    let f64s = [
        f64::from_bits(NAN_PAYLOAD_F64),
        -0.0,
        f64::INFINITY,
        f64::MIN_POSITIVE / 2.0,
        1.5,
        f64::NAN,
    ];
    let f32s = [
        f32::from_bits(NAN_PAYLOAD_F32),
        -0.0,
        f32::NEG_INFINITY,
        3.25,
    ];
    vec![
        tensor(shape, Buffer::Bool((0..n).map(|i| i % 3 == 0).collect())),
        tensor(shape, Buffer::U8((0..n).map(|i| (i * 37) as u8).collect())),
        tensor(
            shape,
            Buffer::I32((0..n).map(|i| [i32::MIN, -1, 0, i32::MAX][i % 4]).collect()),
        ),
        tensor(
            shape,
            Buffer::I64((0..n).map(|i| [i64::MIN, 7, i64::MAX][i % 3]).collect()),
        ),
        tensor(
            shape,
            Buffer::F32((0..n).map(|i| f32s[i % f32s.len()]).collect()),
        ),
        tensor(
            shape,
            Buffer::F64((0..n).map(|i| f64s[i % f64s.len()]).collect()),
        ),
        tensor(
            shape,
            Buffer::I8((0..n).map(|i| [i8::MIN, -1, 5][i % 3]).collect()),
        ),
        tensor(
            shape,
            Buffer::U64((0..n).map(|i| [u64::MAX, 0, 9][i % 3]).collect()),
        ),
        tensor(
            shape,
            Buffer::C64(
                (0..n)
                    .map(|i| C64::new(f32s[i % f32s.len()], f32s[(i + 1) % f32s.len()]))
                    .collect(),
            ),
        ),
        tensor(
            shape,
            Buffer::C128(
                (0..n)
                    .map(|i| C128::new(f64s[i % f64s.len()], f64s[(i + 2) % f64s.len()]))
                    .collect(),
            ),
        ),
    ]
}

/// A table with nulls, strings, a dictionary column, timestamps and schema metadata.
pub fn table(rows: usize, offset: i64) -> RecordBatch {
    let ids: ArrayRef = Arc::new(Int64Array::from(
        (0..rows as i64)
            .map(|i| (i % 4 != 1).then_some(i + offset))
            .collect::<Vec<_>>(),
    ));
    let values: ArrayRef = Arc::new(Float64Array::from(
        (0..rows)
            .map(|i| match i % 5 {
                0 => None,
                1 => Some(f64::from_bits(NAN_PAYLOAD_F64)),
                _ => Some(i as f64 * 0.25),
            })
            .collect::<Vec<_>>(),
    ));
    let names: ArrayRef = Arc::new(StringArray::from(
        (0..rows)
            .map(|i| (i % 3 != 2).then(|| format!("name-{i}-é")))
            .collect::<Vec<_>>(),
    ));
    let colours: ArrayRef = Arc::new(
        (0..rows)
            .map(|i| (i % 7 != 6).then_some(["red", "green", "blue"][i % 3]))
            .collect::<DictionaryArray<Int32Type>>(),
    );
    let when: ArrayRef = Arc::new(
        TimestampNanosecondArray::from(
            (0..rows as i64)
                .map(|i| (i % 6 != 0).then_some(1_700_000_000_000_000_000 + i))
                .collect::<Vec<_>>(),
        )
        .with_timezone("UTC"),
    );
    let flags: ArrayRef = Arc::new(BooleanArray::from(
        (0..rows)
            .map(|i| (i % 2 == 0).then_some(i % 4 == 0))
            .collect::<Vec<_>>(),
    ));
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("value", DataType::Float64, true),
        Field::new("name", DataType::Utf8, true),
        Field::new(
            "colour",
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            true,
        ),
        Field::new(
            "when",
            DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            true,
        ),
        Field::new("flag", DataType::Boolean, true),
    ])
    .with_metadata(HashMap::from([("origin".to_string(), "test".to_string())]));
    RecordBatch::try_new(
        Arc::new(schema),
        vec![ids, values, names, colours, when, flags],
    )
    .unwrap()
}

/// Every kind of chunk, named.
pub fn every_chunk() -> Vec<(String, ChunkData)> {
    let mut chunks = Vec::new();
    for shape in [&[2usize, 3][..], &[0, 4], &[], &[3, 0, 2], &[5]] {
        for t in tensors_of_every_dtype(shape) {
            chunks.push((
                format!("tensor {} {shape:?}", t.dtype()),
                ChunkData::Tensor(t),
            ));
        }
    }
    let counts = tensor(&[2], Buffer::I64(vec![3, 0]));
    let sums = tensor(
        &[2],
        Buffer::F64(vec![f64::from_bits(NAN_PAYLOAD_F64), 0.0]),
    );
    chunks.push((
        "partial mean".into(),
        ChunkData::Partial(Partial {
            op: ReduceOp::Mean,
            input_dtype: DType::F32,
            parts: vec![sums, counts],
        }),
    ));
    chunks.push((
        "partial var, 0-d parts".into(),
        ChunkData::Partial(Partial {
            op: ReduceOp::Var { ddof: 1 },
            input_dtype: DType::I32,
            parts: tensors_of_every_dtype(&[]),
        }),
    ));
    chunks.push((
        "parts".into(),
        ChunkData::Parts(tensors_of_every_dtype(&[2, 2])),
    ));
    chunks.push(("no parts".into(), ChunkData::Parts(vec![])));
    chunks.push(("table".into(), ChunkData::Table(table(50, 0))));
    chunks.push(("empty table".into(), ChunkData::Table(table(0, 0))));
    chunks.push((
        "tables with an empty part".into(),
        ChunkData::Tables(vec![table(9, 0), table(0, 0), table(4, 100), table(0, 0)]),
    ));
    chunks.push(("no tables".into(), ChunkData::Tables(vec![])));
    let hashed = HashedSide::new(&[table(30, 0), table(7, 5)], vec!["id".into()]).unwrap();
    chunks.push(("hashed join side".into(), ChunkData::Hashed(hashed)));
    let no_columns = RecordBatch::try_new_with_options(
        Arc::new(Schema::empty()),
        vec![],
        &arrow::array::RecordBatchOptions::new().with_row_count(Some(5)),
    )
    .unwrap();
    chunks.push((
        "table of rows without columns".into(),
        ChunkData::Table(no_columns),
    ));
    chunks
}

/// A tensor of `n` f64 values (8 n bytes), for transfers cut into several messages.
pub fn large_tensor(n: usize) -> ChunkData {
    ChunkData::Tensor(tensor(
        &[n / 4, 4],
        Buffer::F64((0..n).map(|i| i as f64 * 0.5 - 3.0).collect()),
    ))
}

/// A tensor as comparable bits: dtype, shape, little-endian bytes.
fn tensor_bits(t: &HostTensor) -> (DType, Vec<usize>, Vec<u8>) {
    let bytes = match t.data() {
        Buffer::Bool(v) => v.iter().map(|&b| b as u8).collect(),
        Buffer::U8(v) => v.clone(),
        Buffer::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::F32(v) => v.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect(),
        Buffer::F64(v) => v.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect(),
        Buffer::I8(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::I16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::U16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::U32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::U64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Buffer::C64(v) => v
            .iter()
            .flat_map(|z| [z.re.to_bits(), z.im.to_bits()])
            .flat_map(u32::to_le_bytes)
            .collect(),
        Buffer::C128(v) => v
            .iter()
            .flat_map(|z| [z.re.to_bits(), z.im.to_bits()])
            .flat_map(u64::to_le_bytes)
            .collect(),
    };
    (t.dtype(), t.shape().to_vec(), bytes)
}

/// Asserts `got` is `want` to the bit (NaN payloads included; `==` on floats would not
/// even find NaN equal to itself).
pub fn assert_bit_exact(name: &str, got: &ChunkData, want: &ChunkData) {
    let bits = |ts: &[HostTensor]| ts.iter().map(tensor_bits).collect::<Vec<_>>();
    match (got, want) {
        (ChunkData::Tensor(a), ChunkData::Tensor(b)) => {
            assert_eq!(tensor_bits(a), tensor_bits(b), "{name}")
        }
        (ChunkData::Partial(a), ChunkData::Partial(b)) => {
            assert_eq!((a.op, a.input_dtype), (b.op, b.input_dtype), "{name}");
            assert_eq!(bits(&a.parts), bits(&b.parts), "{name}");
        }
        (ChunkData::Parts(a), ChunkData::Parts(b)) => assert_eq!(bits(a), bits(b), "{name}"),
        // Arrow's equality compares float values by their bytes.
        (ChunkData::Table(a), ChunkData::Table(b)) => assert_eq!(a, b, "{name}"),
        (ChunkData::Tables(a), ChunkData::Tables(b)) => assert_eq!(a, b, "{name}"),
        (ChunkData::Hashed(a), ChunkData::Hashed(b)) => assert_eq!(a, b, "{name}"),
        _ => panic!(
            "{name}: got a {}, want a {}",
            got.kind_name(),
            want.kind_name()
        ),
    }
}
