//! File access shared by the reader: opening, reading byte ranges, the content's end and
//! line numbers.

use crate::error::{FrameError, FrameResult};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

pub(super) fn io_error(path: &str, e: std::io::Error) -> FrameError {
    FrameError::Io {
        path: path.to_string(),
        message: e.to_string(),
    }
}

pub(super) fn open(path: &str) -> FrameResult<(File, u64)> {
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    let len = file.metadata().map_err(|e| io_error(path, e))?.len();
    Ok((file, len))
}

/// Appends the `len` bytes at `offset` of `file` to `buf`.
pub(super) fn read_append(
    mut file: &File,
    path: &str,
    offset: u64,
    len: u64,
    buf: &mut Vec<u8>,
) -> FrameResult<()> {
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| io_error(path, e))?;
    buf.reserve(usize::try_from(len).unwrap_or(usize::MAX));
    let n = file
        .take(len)
        .read_to_end(buf)
        .map_err(|e| io_error(path, e))?;
    if (n as u64) < len {
        return Err(FrameError::Io {
            path: path.to_string(),
            message: format!("file shrank while reading ({n} of {len} bytes at offset {offset})"),
        });
    }
    Ok(())
}

/// The end of the file's content: its length less the trailing `\r` and `\n` bytes.
pub(super) fn content_end(file: &File, path: &str, file_len: u64) -> FrameResult<u64> {
    let mut end = file_len;
    let mut block = Vec::new();
    while end > 0 {
        let from = end.saturating_sub(4096);
        block.clear();
        read_append(file, path, from, end - from, &mut block)?;
        if let Some(p) = block.iter().rposition(|&b| b != b'\n' && b != b'\r') {
            return Ok(from + p as u64 + 1);
        }
        end = from;
    }
    Ok(0)
}

/// The 1-based line of the file at byte `offset` (1 + the '\n' bytes before it).
pub(super) fn line_of(file: &File, path: &str, offset: u64) -> FrameResult<u64> {
    let mut lines = 1;
    let mut at = 0;
    let mut block = Vec::new();
    while at < offset {
        let len = (offset - at).min(1 << 20);
        block.clear();
        read_append(file, path, at, len, &mut block)?;
        lines += memchr::memchr_iter(b'\n', &block).count() as u64;
        at += len;
    }
    Ok(lines)
}
