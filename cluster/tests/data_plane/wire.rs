//! Encoding and decoding without a network.

use crate::samples::{assert_bit_exact, every_chunk, large_tensor, table};
use arrow_flight::FlightData;
use futures::{stream, TryStreamExt};
use tessera_cluster::{
    decode_chunk, decode_chunks, encode_chunk, Compression, WireError, WireOptions,
};
use tessera_kernels::ChunkData;

const COMPRESSIONS: [Option<Compression>; 3] =
    [None, Some(Compression::Lz4Frame), Some(Compression::Zstd)];

async fn messages(chunk: &ChunkData, options: &WireOptions) -> Vec<FlightData> {
    encode_chunk(chunk, options, None)
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

async fn decode(messages: Vec<FlightData>, max_bytes: usize) -> Result<ChunkData, WireError> {
    decode_chunk(stream::iter(messages.into_iter().map(Ok)), max_bytes).await
}

fn wire_bytes(messages: &[FlightData]) -> usize {
    messages
        .iter()
        .map(|m| m.data_header.len() + m.data_body.len() + m.app_metadata.len())
        .sum()
}

#[tokio::test]
async fn every_chunk_kind_and_dtype_round_trips_bit_exactly() {
    for compression in COMPRESSIONS {
        let options = WireOptions {
            compression,
            ..WireOptions::default()
        };
        for (name, chunk) in every_chunk() {
            let back = decode(messages(&chunk, &options).await, usize::MAX)
                .await
                .unwrap_or_else(|e| panic!("{name} ({compression:?}): {e}"));
            assert_bit_exact(&format!("{name} ({compression:?})"), &back, &chunk);
        }
    }
}

#[tokio::test]
async fn chunks_sent_one_after_another_in_one_stream_come_back_in_order() {
    // Every kind, among them chunks of no sections and a table without columns (whose
    // section's schema is as empty as a header's), and a tensor cut into many messages.
    let mut chunks = every_chunk();
    chunks.insert(3, ("large tensor".into(), large_tensor(100_000)));
    for compression in COMPRESSIONS {
        let options = WireOptions {
            compression,
            max_flight_data_size: 64 << 10,
        };
        let mut sent = Vec::new();
        for (_, chunk) in &chunks {
            sent.extend(messages(chunk, &options).await);
        }
        let decode_n = |count: usize| {
            decode_chunks(
                stream::iter(sent.clone().into_iter().map(Ok)),
                count,
                usize::MAX,
            )
        };
        let back = decode_n(chunks.len()).await.unwrap();
        assert_eq!(back.len(), chunks.len());
        for ((name, chunk), got) in chunks.iter().zip(&back) {
            assert_bit_exact(&format!("{name} ({compression:?})"), got, chunk);
        }
        // A stream of more chunks, or fewer, than asked for is malformed.
        for count in [chunks.len() - 1, chunks.len() + 1] {
            assert!(
                matches!(decode_n(count).await, Err(WireError::Malformed(_))),
                "{count} of {} asked for",
                chunks.len()
            );
        }
    }
}

#[tokio::test]
async fn large_chunks_are_cut_into_messages_and_put_back_together() {
    let options = WireOptions {
        compression: None,
        max_flight_data_size: 64 << 10,
    };
    let tensor = large_tensor(100_000); // 800 kB
    let sent = messages(&tensor, &options).await;
    // header + section schema + at least 800 kB / 64 kB batches.
    assert!(sent.len() >= 2 + 12, "{} messages", sent.len());
    assert!(sent.iter().all(|m| m.data_body.len() <= 80 << 10));
    assert_bit_exact(
        "large tensor",
        &decode(sent, usize::MAX).await.unwrap(),
        &tensor,
    );

    let tables = ChunkData::Tables(vec![table(20_000, 0), table(0, 0), table(3, 7)]);
    let sent = messages(&tables, &options).await;
    assert!(sent.len() > 10, "{} messages", sent.len());
    let back = decode(sent, usize::MAX).await.unwrap();
    // A cut dictionary column comes back with one merged dictionary: compare values.
    let (ChunkData::Tables(got), ChunkData::Tables(want)) = (&back, &tables) else {
        panic!("kind changed");
    };
    assert_eq!(got.len(), 3);
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.schema(), w.schema());
        assert_eq!(g.num_rows(), w.num_rows());
        for (a, b) in g.columns().iter().zip(w.columns()) {
            let a = arrow::compute::cast(a, &arrow::datatypes::DataType::Utf8).ok();
            let b = arrow::compute::cast(b, &arrow::datatypes::DataType::Utf8).ok();
            assert_eq!(a, b);
        }
    }
}

#[tokio::test]
async fn a_large_string_view_column_is_cut_into_messages_of_its_own_strings() {
    // 20,000 strings of 100 bytes (2 MB of data buffers), with nulls and short strings.
    let strings: Vec<Option<String>> = (0..20_000)
        .map(|i| match i % 7 {
            0 => None,
            1 => Some(format!("s{i}")),
            _ => Some(format!("{i:0>100}")),
        })
        .collect();
    let views = arrow::array::StringViewArray::from_iter(strings.iter().map(|s| s.as_deref()));
    let ids = arrow::array::Int64Array::from_iter_values(0..20_000);
    let batch = arrow::array::RecordBatch::try_from_iter([
        ("id", std::sync::Arc::new(ids) as arrow::array::ArrayRef),
        ("s", std::sync::Arc::new(views) as arrow::array::ArrayRef),
    ])
    .unwrap();
    let options = WireOptions {
        compression: None,
        max_flight_data_size: 64 << 10,
    };
    for chunk in [
        ChunkData::Table(batch.clone()),
        ChunkData::Tables(vec![batch.slice(5, 10_000), batch.slice(0, 0)]),
    ] {
        let sent = messages(&chunk, &options).await;
        // Each message carries its own rows' strings, not the whole column's buffers.
        let largest = sent.iter().map(|m| m.data_body.len()).max().unwrap_or(0);
        assert!(largest <= 80 << 10, "a message of {largest} bytes");
        assert!(
            wire_bytes(&sent) < 4 << 20,
            "{} bytes in all",
            wire_bytes(&sent)
        );
        let back = decode(sent, usize::MAX).await.unwrap();
        let rows = |c: &ChunkData| match c {
            ChunkData::Table(t) => vec![t.clone()],
            ChunkData::Tables(parts) => parts.clone(),
            _ => panic!("kind changed"),
        };
        for (got, want) in rows(&back).iter().zip(rows(&chunk)) {
            assert_eq!(got.schema(), want.schema(), "the view type is kept");
            assert_eq!(got, &want);
        }
    }
}

#[tokio::test]
async fn compression_shrinks_compressible_data() {
    let zeros = ChunkData::Tensor(crate::samples::tensor(
        &[100_000],
        tessera_kernels::Buffer::F64(vec![0.0; 100_000]),
    ));
    let plain = wire_bytes(&messages(&zeros, &WireOptions::default()).await);
    for compression in [Compression::Lz4Frame, Compression::Zstd] {
        let options = WireOptions {
            compression: Some(compression),
            ..WireOptions::default()
        };
        let sent = messages(&zeros, &options).await;
        let packed = wire_bytes(&sent);
        assert!(
            packed * 20 < plain,
            "{compression:?}: {packed} of {plain} bytes"
        );
        assert_bit_exact("zeros", &decode(sent, usize::MAX).await.unwrap(), &zeros);
    }
}

#[tokio::test]
async fn a_stream_over_the_byte_limit_is_refused() {
    let sent = messages(&large_tensor(10_000), &WireOptions::default()).await;
    let total = wire_bytes(&sent);
    assert!(decode(sent.clone(), total).await.is_ok());
    assert!(matches!(
        decode(sent, total - 1).await,
        Err(WireError::ChunkTooLarge { max }) if max == total - 1
    ));
}

#[tokio::test]
async fn truncated_reordered_and_foreign_streams_are_malformed() {
    let chunk = ChunkData::Parts(crate::samples::tensors_of_every_dtype(&[3]));
    let sent = messages(&chunk, &WireOptions::default()).await;
    let malformed = |r: Result<ChunkData, WireError>| matches!(r, Err(WireError::Malformed(_)));

    // Ends after the header: no sections.
    assert!(malformed(decode(sent[..1].to_vec(), usize::MAX).await));
    // Ends after some sections.
    assert!(malformed(
        decode(sent[..sent.len() - 2].to_vec(), usize::MAX).await
    ));
    // Nothing at all.
    assert!(malformed(decode(vec![], usize::MAX).await));
    // Starts with a section instead of the header: its marker is no header.
    assert!(matches!(
        decode(sent[1..].to_vec(), usize::MAX).await,
        Err(WireError::Header(_))
    ));
    // Two sections swapped.
    let mut swapped = sent.clone();
    swapped.swap(1, 3);
    swapped.swap(2, 4);
    assert!(malformed(decode(swapped, usize::MAX).await));
    // A header that is not ours.
    let mut foreign = sent.clone();
    foreign[0].app_metadata = vec![0xff; 3].into();
    assert!(matches!(
        decode(foreign, usize::MAX).await,
        Err(WireError::Header(_))
    ));
    // Garbage where an IPC message belongs.
    let mut garbage = sent;
    garbage[2].data_header = vec![1, 2, 3].into();
    assert!(decode(garbage, usize::MAX).await.is_err());
}

#[tokio::test]
async fn a_tensor_section_that_does_not_fit_its_header_is_refused() {
    // The header of a [2, 3] f64 tensor, the values of a [5] one.
    let six = crate::samples::tensors_of_every_dtype(&[2, 3]).remove(5);
    let five = crate::samples::tensors_of_every_dtype(&[5]).remove(5);
    let head = messages(&ChunkData::Tensor(six), &WireOptions::default()).await;
    let body = messages(&ChunkData::Tensor(five), &WireOptions::default()).await;
    let mixed: Vec<_> = head[..1].iter().chain(&body[1..]).cloned().collect();
    assert!(matches!(
        decode(mixed, usize::MAX).await,
        Err(WireError::Tensor(_))
    ));
    // The header of an i64 tensor, the values of an f64 one.
    let ints = crate::samples::tensors_of_every_dtype(&[5]).remove(3);
    let head = messages(&ChunkData::Tensor(ints), &WireOptions::default()).await;
    let mixed: Vec<_> = head[..1].iter().chain(&body[1..]).cloned().collect();
    assert!(matches!(
        decode(mixed, usize::MAX).await,
        Err(WireError::Malformed(_))
    ));
}
