//! Cutting a file's data into byte ranges.

/// Cuts [data_start, file_len) into consecutive ranges of about `chunk_bytes` (at least one
/// range, even for a file with a header only). Pure arithmetic: alignment to rows is
/// [`read_range`](super::read_range)'s job.
pub fn split_ranges(data_start: u64, file_len: u64, chunk_bytes: u64) -> Vec<(u64, u64)> {
    let len = file_len.saturating_sub(data_start);
    let n = len.div_ceil(chunk_bytes.max(1)).max(1);
    let cut = |i: u64| data_start + (u128::from(len) * u128::from(i) / u128::from(n)) as u64;
    (0..n).map(|i| (cut(i), cut(i + 1))).collect()
}
