//! Quoting state across byte ranges: which ranges start inside a quoted field.
//!
//! A range cannot tell a newline inside a quoted field from a row end by looking at its
//! own bytes, so the state at each range's start is found beforehand, exactly as the row
//! parser reads the file from its data start. The parser's rules are a small automaton over
//! bytes ([`QuoteState`]): a quote opens a quoted field only at the start of a field (after
//! the data start, a delimiter or a line end outside quotes, which the previous byte tells;
//! anywhere else it is a literal byte, as in `5'10"` or after a closing quote); inside, a
//! doubled quote is one quote and any other quote closes the field. Counting quotes (their parity) would be wrong for such
//! literal quotes, so each range is walked with the automaton instead, from every state it
//! may start in, in parallel; the walks from different states meet within a few fields in
//! practice and are then done once, and a block without a quote costs one `memchr` pass.
//! The per-range maps are then composed from the data start.

use super::file::{open, read_append};
use super::ranges::split_ranges;
use super::{check_options, CsvOptions, BLOCK};
use crate::error::{FrameError, FrameResult};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Where a byte offset of a CSV file's data lies with respect to quoted fields, as the row
/// parser reads the file from its data start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum QuoteState {
    /// Outside quoted fields: a row ends at the next line end read in this state.
    #[default]
    Outside,
    /// Inside a quoted field: line ends and delimiters are field text.
    Inside,
    /// Just after a quote read inside a quoted field: a quote here is the second of a
    /// doubled quote (the field goes on); any other byte follows the closed field.
    AfterQuote,
}

impl QuoteState {
    const ALL: [QuoteState; 3] = [
        QuoteState::Outside,
        QuoteState::Inside,
        QuoteState::AfterQuote,
    ];

    fn index(self) -> usize {
        match self {
            QuoteState::Outside => 0,
            QuoteState::Inside => 1,
            QuoteState::AfterQuote => 2,
        }
    }
}

/// A byte range of a CSV file's data and the quoting state at its start (see
/// [`quote_ranges`]); [`read_range`](super::read_range) parses the rows that start in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CsvRange {
    /// First byte of the range.
    pub start: u64,
    /// One past the last byte of the range.
    pub end: u64,
    /// The quoting state at `start` (always `Outside` at the data start).
    pub state: QuoteState,
}

/// The quote and delimiter bytes.
#[derive(Clone, Copy)]
pub(super) struct Syntax {
    pub(super) quote: u8,
    pub(super) delim: u8,
}

/// Walks `bytes` from `state`; `prev` is the byte before `bytes` (`b'\n'` at the data
/// start). Returns the state after the last byte, and with `find_row` stops at the first
/// line end read outside quotes, returning the position after it (the next row's start).
pub(super) fn walk(
    bytes: &[u8],
    mut state: QuoteState,
    prev: u8,
    syntax: Syntax,
    find_row: bool,
) -> (QuoteState, Option<usize>) {
    let Syntax { quote, delim } = syntax;
    let mut i = 0;
    loop {
        let rest = bytes.get(i..).unwrap_or_default();
        match state {
            QuoteState::Inside => match memchr::memchr(quote, rest) {
                Some(k) => {
                    i += k + 1;
                    state = QuoteState::AfterQuote;
                }
                None => return (state, None),
            },
            QuoteState::AfterQuote => match rest.first() {
                None => return (state, None),
                Some(&b) if b == quote => {
                    i += 1;
                    state = QuoteState::Inside;
                }
                // The field was closed: this byte is read outside quotes.
                Some(_) => state = QuoteState::Outside,
            },
            QuoteState::Outside => {
                let hit = if find_row {
                    memchr::memchr2(quote, b'\n', rest)
                } else {
                    memchr::memchr(quote, rest)
                };
                let Some(k) = hit else {
                    return (state, None);
                };
                let p = i + k;
                i = p + 1;
                if bytes.get(p) == Some(&b'\n') {
                    return (state, Some(i));
                }
                let before = p.checked_sub(1).and_then(|b| bytes.get(b)).unwrap_or(&prev);
                if *before == delim || *before == b'\n' {
                    state = QuoteState::Inside;
                }
            }
        }
    }
}

/// The state at `end` for each state at `start` (indexed by [`QuoteState::index`]).
type StateMap = [QuoteState; 3];

/// The state map of the bytes [start, end) of `file`, read a block at a time.
fn range_map(
    file: &File,
    path: &str,
    (start, end): (u64, u64),
    data_start: u64,
    syntax: Syntax,
) -> FrameResult<StateMap> {
    let mut buf = Vec::new();
    let mut prev = b'\n';
    if start > data_start {
        read_append(file, path, start - 1, 1, &mut buf)?;
        prev = buf.first().copied().unwrap_or(b'\n');
    }
    let mut map = QuoteState::ALL;
    let mut at = start;
    while at < end {
        let len = BLOCK.min(end - at);
        buf.clear();
        read_append(file, path, at, len, &mut buf)?;
        if memchr::memchr(syntax.quote, &buf).is_none() {
            // No quote: only a pending doubled quote is resolved (to a closed field).
            map.iter_mut()
                .filter(|s| **s == QuoteState::AfterQuote)
                .for_each(|s| *s = QuoteState::Outside);
        } else {
            // Walk once per distinct current state (the walks soon meet).
            let mut done: [Option<QuoteState>; 3] = [None; 3];
            for s in &mut map {
                let slot = &mut done[s.index()];
                *s = *slot.get_or_insert_with(|| walk(&buf, *s, prev, syntax, false).0);
            }
        }
        prev = buf.last().copied().unwrap_or(prev);
        at += len;
    }
    Ok(map)
}

/// The state maps of `ranges`, computed by up to `threads` threads.
fn range_maps(
    path: &str,
    ranges: &[(u64, u64)],
    data_start: u64,
    syntax: Syntax,
    threads: usize,
) -> FrameResult<Vec<StateMap>> {
    let bytes: u64 = ranges.iter().map(|(s, e)| e - s).sum();
    let blocks = usize::try_from(bytes.div_ceil(BLOCK)).unwrap_or(usize::MAX);
    let workers = threads.min(ranges.len()).min(blocks).max(1);
    let next = AtomicUsize::new(0);
    let work = || -> FrameResult<Vec<(usize, StateMap)>> {
        let (file, _) = open(path)?;
        let mut out = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(&range) = ranges.get(i) else {
                return Ok(out);
            };
            out.push((i, range_map(&file, path, range, data_start, syntax)?));
        }
    };
    let parts: Vec<FrameResult<Vec<(usize, StateMap)>>> = if workers == 1 {
        vec![work()]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| std::thread::Builder::new().spawn_scoped(scope, work))
                .collect();
            handles
                .into_iter()
                .map(|h| match h {
                    Ok(h) => h.join().unwrap_or_else(|_| {
                        Err(FrameError::Io {
                            path: path.to_string(),
                            message: "a quote-scanning thread panicked".to_string(),
                        })
                    }),
                    // No thread: this one takes its share of the ranges.
                    Err(_) => work(),
                })
                .collect()
        })
    };
    let mut maps = vec![QuoteState::ALL; ranges.len()];
    for part in parts {
        for (i, map) in part? {
            if let Some(m) = maps.get_mut(i) {
                *m = map;
            }
        }
    }
    Ok(maps)
}

/// Cuts the data of the CSV file at `path` into ranges of about `chunk_bytes` (as
/// [`split_ranges`]) and finds the quoting state at each range's start, so that
/// [`read_range`](super::read_range) starts at the right row even when a range boundary
/// falls inside a quoted field that holds line ends. Reads the data once (except the last
/// range), with up to `threads` threads; a file read as one range is not read.
/// `data_start` and `file_len` are the data start [`infer_schema`](super::infer_schema)
/// returned and the file's length.
/// Errors: Io (naming the path), InvalidArgument for bad options.
pub fn quote_ranges(
    path: &str,
    data_start: u64,
    file_len: u64,
    chunk_bytes: u64,
    options: &CsvOptions,
    threads: usize,
) -> FrameResult<Vec<CsvRange>> {
    check_options(options)?;
    let ranges = split_ranges(data_start, file_len, chunk_bytes);
    let syntax = Syntax {
        quote: options.quote,
        delim: options.delimiter,
    };
    // The last range's map is never needed.
    let scanned = ranges
        .get(..ranges.len().saturating_sub(1))
        .unwrap_or_default();
    let maps = range_maps(path, scanned, data_start, syntax, threads)?;
    let mut state = QuoteState::Outside;
    Ok(ranges
        .iter()
        .enumerate()
        .map(|(i, &(start, end))| {
            let range = CsvRange { start, end, state };
            if let Some(map) = maps.get(i) {
                state = map[state.index()];
            }
            range
        })
        .collect())
}
