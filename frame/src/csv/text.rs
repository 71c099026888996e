//! Byte-level scanning of CSV text: field and line ends, blank lines, the separator
//! scanner of the quote-free fast path, and the general record splitter used for the
//! header, inference and error reports.

/// The byte at `i`, or '\n' past the end (buffers given to the row parser end with '\n').
#[inline(always)]
pub(super) fn byte_at(buf: &[u8], i: usize) -> u8 {
    buf.get(i).copied().unwrap_or(b'\n')
}

pub(super) const ONES: u64 = 0x0101_0101_0101_0101;

/// Nonzero when `v` has a zero byte; then its lowest set bit is the high bit of the lowest
/// zero byte (the bits above may be wrong).
#[inline(always)]
fn lowest_zero_byte(v: u64) -> u64 {
    v.wrapping_sub(ONES) & !v & !LOW7
}

/// The position of the first delimiter or '\n' at or after `i` (or `buf.len()`), eight
/// bytes at a time.
#[inline(always)]
pub(super) fn field_end(buf: &[u8], mut i: usize, delim: u8) -> usize {
    let (d, n) = (ONES * u64::from(delim), ONES * u64::from(b'\n'));
    while let Some(chunk) = buf.get(i..).and_then(|s| s.first_chunk::<8>()) {
        let w = u64::from_le_bytes(*chunk);
        let m = lowest_zero_byte(w ^ d) | lowest_zero_byte(w ^ n);
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&b) = buf.get(i) {
        if b == delim || b == b'\n' {
            break;
        }
        i += 1;
    }
    i
}

/// `buf[start..end]` less a '\r' that precedes the '\n' (or buffer end) at `end`.
#[inline(always)]
pub(super) fn field_text(buf: &[u8], start: usize, end: usize) -> &[u8] {
    let text = buf.get(start..end).unwrap_or_default();
    match text.split_last() {
        Some((b'\r', rest)) if byte_at(buf, end) == b'\n' => rest,
        _ => text,
    }
}

/// `end`, or `end - 1` when the field `buf[start..end]` ends with '\r' (before a '\n').
#[inline(always)]
pub(super) fn trim_cr(buf: &[u8], start: usize, end: usize) -> usize {
    if end > start && byte_at(buf, end - 1) == b'\r' {
        end - 1
    } else {
        end
    }
}

/// The position after a blank line starting at `pos` ("\n" or "\r\n"), if it is one.
#[inline(always)]
pub(super) fn blank_line(buf: &[u8], pos: usize) -> Option<usize> {
    match byte_at(buf, pos) {
        b'\n' => Some(pos + 1),
        b'\r' if byte_at(buf, pos + 1) == b'\n' => Some(pos + 2),
        _ => None,
    }
}

pub(super) const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// The high bit of each byte of `v` that is zero.
#[inline(always)]
fn zero_byte_bits(v: u64) -> u64 {
    !(((v & LOW7).wrapping_add(LOW7)) | v) & !LOW7
}

/// One bit per byte (bit i for byte i) from the high bits of the bytes of `m`.
#[inline(always)]
fn gather(m: u64) -> u64 {
    (m >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
}

/// Bit i set where byte i of `chunk` is the delimiter (repeated in `delims`) or '\n'.
#[inline(always)]
fn separator_mask(chunk: &[u8; 64], delims: u64) -> u64 {
    let (words, _) = chunk.as_chunks::<8>();
    words.iter().enumerate().fold(0, |mask, (k, w)| {
        let w = u64::from_le_bytes(*w);
        let hits = zero_byte_bits(w ^ delims) | zero_byte_bits(w ^ (ONES * u64::from(b'\n')));
        mask | gather(hits) << (8 * k)
    })
}

/// The positions of the delimiters and '\n' bytes of a buffer (with no quotes) from a
/// start, in order, found 64 bytes at a time (a chain of field ends with no data dependency).
pub(super) struct Separators<'a> {
    buf: &'a [u8],
    delims: u64,
    /// Buffer position of bit 0 of `mask`.
    base: usize,
    mask: u64,
}

impl<'a> Separators<'a> {
    pub(super) fn new(buf: &'a [u8], from: usize, delim: u8) -> Self {
        Separators {
            buf,
            delims: ONES * u64::from(delim),
            base: from.wrapping_sub(64),
            mask: 0,
        }
    }

    /// The next separator's position (`buf.len()` when there are no more).
    #[inline(always)]
    pub(super) fn next(&mut self) -> usize {
        while self.mask == 0 {
            self.base = self.base.wrapping_add(64);
            let Some(rest) = self.buf.get(self.base..).filter(|r| !r.is_empty()) else {
                self.base = self.buf.len();
                return self.buf.len();
            };
            self.mask = match rest.first_chunk::<64>() {
                Some(chunk) => separator_mask(chunk, self.delims),
                None => {
                    let mut chunk = [0u8; 64];
                    chunk.iter_mut().zip(rest).for_each(|(c, &b)| *c = b);
                    separator_mask(&chunk, self.delims) & ((1u64 << rest.len()) - 1)
                }
            };
        }
        let p = self.base + self.mask.trailing_zeros() as usize;
        self.mask &= self.mask - 1;
        p
    }
}

// ---------------------------------------------------------------------------------------
// Records (general splitter for the header, inference and error reports)
// ---------------------------------------------------------------------------------------

/// The fields of one record: unquoted texts in `bytes`, with (start, end, quoted) per field.
#[derive(Default)]
pub(super) struct Record {
    pub(super) bytes: Vec<u8>,
    pub(super) fields: Vec<(usize, usize, bool)>,
}

impl Record {
    pub(super) fn text(&self, i: usize) -> &[u8] {
        self.fields
            .get(i)
            .and_then(|&(s, e, _)| self.bytes.get(s..e))
            .unwrap_or_default()
    }

    /// True for a record of one empty unquoted field (a blank line).
    pub(super) fn is_blank(&self) -> bool {
        matches!(self.fields.as_slice(), [(s, e, false)] if s == e)
    }
}

/// Splits the record at `pos` into `rec`; returns the position after it, or None when the
/// record does not end within `buf` (and `at_eof` is false, or a quote is left open).
pub(super) fn split_record(
    buf: &[u8],
    mut pos: usize,
    delim: u8,
    quote: u8,
    at_eof: bool,
    rec: &mut Record,
) -> Option<usize> {
    rec.bytes.clear();
    rec.fields.clear();
    loop {
        let start = rec.bytes.len();
        let quoted = buf.get(pos) == Some(&quote);
        if quoted {
            pos += 1;
            loop {
                let k = memchr::memchr(quote, buf.get(pos..)?)?;
                rec.bytes.extend_from_slice(buf.get(pos..pos + k)?);
                pos += k + 1;
                if buf.get(pos) != Some(&quote) {
                    break;
                }
                rec.bytes.push(quote);
                pos += 1;
            }
        }
        let end = field_end(buf, pos, delim);
        let at_delim = buf.get(end) == Some(&delim);
        if end == buf.len() && !at_eof {
            return None;
        }
        let text = if at_delim {
            buf.get(pos..end)?
        } else {
            field_text(buf, pos, end)
        };
        rec.bytes.extend_from_slice(text);
        rec.fields.push((start, rec.bytes.len(), quoted));
        pos = end + 1;
        if !at_delim {
            return Some(pos.min(buf.len()));
        }
    }
}
