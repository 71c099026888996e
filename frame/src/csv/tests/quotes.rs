//! Quoted fields across range boundaries: every range split of files full of quotes,
//! doubled quotes, delimiters and line ends inside fields reads as a simple sequential
//! reference parser does.

use super::*;
use crate::csv::quotes::{walk, Syntax};
use crate::test_rng::Rng;
use arrow::compute::concat_batches;
use arrow::datatypes::Field;
use std::sync::Arc;

/// What the reference parser found: the rows (None for a null field) and the quoting state
/// before each byte from the data start to the content's end (inclusive).
struct Reference {
    rows: Vec<Vec<Option<String>>>,
    states: Vec<QuoteState>,
    unterminated: bool,
}

/// Where the reference parser stands.
#[derive(Clone, Copy, PartialEq)]
enum St {
    FieldStart,
    Unquoted,
    Quoted,
    QuoteInQuoted,
}

/// Reads `text` from `ds` one byte at a time under the reader's rules: a quote opens a
/// quoted field only at a field's start, a doubled quote inside is one quote, bytes after
/// a closing quote are kept, a '\r' read outside quotes before a line end is dropped, blank
/// lines are skipped when there are several columns, and trailing line ends are ignored.
fn reference(text: &[u8], ds: usize, ncols: usize, q: u8, d: u8) -> Reference {
    let mut end = text.len();
    while end > ds && matches!(text[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    let mut rows = Vec::new();
    let mut states = Vec::new();
    let mut row: Vec<Option<String>> = Vec::new();
    let mut field = Vec::new();
    let (mut quoted, mut cr_outside) = (false, false);
    let mut st = St::FieldStart;
    let end_field = |row: &mut Vec<Option<String>>, field: &mut Vec<u8>, quoted: bool| {
        let s = String::from_utf8(std::mem::take(field)).unwrap();
        row.push((quoted || !s.is_empty()).then_some(s));
    };
    for &b in &text[ds..end] {
        states.push(match st {
            St::Quoted => QuoteState::Inside,
            St::QuoteInQuoted => QuoteState::AfterQuote,
            _ => QuoteState::Outside,
        });
        match (st, b) {
            (St::FieldStart, _) if b == q => {
                quoted = true;
                st = St::Quoted;
            }
            (St::Quoted, _) if b == q => st = St::QuoteInQuoted,
            (St::Quoted, _) => field.push(b),
            (St::QuoteInQuoted, _) if b == q => {
                field.push(q);
                st = St::Quoted;
            }
            (_, b'\n') => {
                if cr_outside {
                    field.pop();
                }
                end_field(&mut row, &mut field, quoted);
                let blank = ncols > 1 && row == [None];
                if !blank {
                    rows.push(std::mem::take(&mut row));
                }
                row.clear();
                (quoted, st) = (false, St::FieldStart);
            }
            (_, _) if b == d => {
                end_field(&mut row, &mut field, quoted);
                (quoted, st) = (false, St::FieldStart);
            }
            _ => {
                field.push(b);
                st = St::Unquoted;
            }
        }
        cr_outside = b == b'\r' && st == St::Unquoted;
    }
    states.push(match st {
        St::Quoted => QuoteState::Inside,
        St::QuoteInQuoted => QuoteState::AfterQuote,
        _ => QuoteState::Outside,
    });
    let unterminated = st == St::Quoted;
    if end > ds && !unterminated {
        end_field(&mut row, &mut field, quoted);
        rows.push(row);
    }
    Reference {
        rows,
        states,
        unterminated,
    }
}

/// The quoting state at byte `at` of `text` (data from `ds`), by the reference parser.
pub(super) fn state_at(text: &[u8], ds: u64, at: u64, o: &CsvOptions) -> QuoteState {
    let r = reference(text, ds as usize, 2, o.quote, o.delimiter);
    let i = at.saturating_sub(ds) as usize;
    r.states.get(i).copied().unwrap_or(QuoteState::Outside)
}

/// The reference rows as [`cells`] renders a batch.
fn rendered(rows: &[Vec<Option<String>>]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| {
            r.iter()
                .map(|c| c.clone().unwrap_or_else(|| "∅".to_string()))
                .collect()
        })
        .collect()
}

/// Options that keep every field a string and only empty unquoted fields null.
fn text_options(quote: u8, delimiter: u8) -> CsvOptions {
    CsvOptions {
        quote,
        delimiter,
        null_values: Vec::new(),
        ..CsvOptions::default()
    }
}

/// The file's schema with every column Utf8, and its data start.
fn utf8_schema(path: &str, o: &CsvOptions) -> (Schema, u64) {
    let (schema, ds) = infer_schema(path, o).unwrap();
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_data_type(DataType::Utf8))
        .collect();
    (Schema::new(fields), ds)
}

/// Reads `path` in ranges of `chunk` bytes, checking each range's state against `want`.
fn read_in_ranges(
    path: &str,
    (schema, ds): (&Schema, u64),
    chunk: u64,
    o: &CsvOptions,
    want: &Reference,
) -> FrameResult<RecordBatch> {
    let len = file_len(path);
    let ranges = quote_ranges(path, ds, len, chunk, o, 1 + (chunk % 4) as usize)?;
    let mut batches = Vec::new();
    let last = want.states.last().copied().unwrap_or_default();
    for r in ranges {
        // Past the content's end only line ends follow, which close a pending quote.
        let expected = match want.states.get((r.start - ds) as usize) {
            Some(&s) => s,
            None if last == QuoteState::AfterQuote => QuoteState::Outside,
            None => last,
        };
        assert_eq!(r.state, expected, "state at {} (chunk {chunk})", r.start);
        batches.push(read_range(path, r, ds, schema, None, o)?);
    }
    Ok(concat_batches(&Arc::new(schema.clone()), &batches).unwrap())
}

/// Every range size from one byte to the file's length reads the reference's rows.
fn check_every_split(text: &[u8], o: &CsvOptions) {
    let f = Tmp::new(text);
    let (schema, ds) = utf8_schema(&f.0, o);
    let want = reference(
        text,
        ds as usize,
        schema.fields().len(),
        o.quote,
        o.delimiter,
    );
    assert!(!want.unterminated);
    let want_cells = rendered(&want.rows);
    let len = file_len(&f.0);
    let whole = read_range(&f.0, span(ds, len), ds, &schema, None, o).unwrap();
    assert_eq!(
        cells(&whole),
        want_cells,
        "{}",
        String::from_utf8_lossy(text)
    );
    for chunk in 1..=len {
        let all = read_in_ranges(&f.0, (&schema, ds), chunk, o, &want).unwrap();
        assert_eq!(cells(&all), want_cells, "chunk {chunk}");
    }
}

/// A hand-written file with every quoting case.
const QUOTED: &[u8] = b"\"na,me\",\"q\"\"x\"\"\",\"multi\nline\"\r\n\
    1,\"a\nb\",\"c,d\"\r\n\
    2,\"\"\"\",\"\"\n\
    \n\
    3,\"x\r\ny\",\"\"\"quoted\"\"\n,\"\"\n\"\n\
    4,5'10\",x\"y\n\
    \r\n\
    5,\"ab\"cd,\"\n\n\n\"\n\
    6,,\"\"\n\
    7,\",\",\"last\nrow\"";

#[test]
fn every_split_of_a_quoted_file() {
    check_every_split(QUOTED, &text_options(b'"', b','));
    // A delimiter and quote of one's choice, and a file of one column.
    let custom = b"a;b\n'x;\n''y''';'z'\n;'\n'\n'it''s';\"q\"\n";
    check_every_split(custom, &text_options(b'\'', b';'));
    check_every_split(b"v\n\"a\nb\"\n\nx\n\"\"\n\"\n\"", &text_options(b'"', b','));
}

/// A random field: quoted (with doubled quotes, delimiters and line ends inside), plain,
/// empty, or plain with a literal quote inside.
fn random_field(rng: &mut Rng, max_len: u64) -> String {
    const QUOTED_BYTES: &[u8] = b"ab,\"\n\r ";
    let len = rng.below(max_len + 1) as usize;
    match rng.below(5) {
        0 | 1 => {
            let body: String = (0..len)
                .map(|_| QUOTED_BYTES[rng.below(QUOTED_BYTES.len() as u64) as usize] as char)
                .collect();
            format!("\"{}\"", body.replace('"', "\"\""))
        }
        2 => String::new(),
        3 => format!("x{}\"y", "z".repeat(len)),
        _ => "p".repeat(len + 1),
    }
}

/// A random file of `rows` rows of `ncols` columns, with CRLF or LF line ends.
fn random_file(rng: &mut Rng, rows: usize, ncols: usize, max_len: u64) -> String {
    let mut text: String = (0..ncols)
        .map(|i| format!("c{i}"))
        .collect::<Vec<_>>()
        .join(",");
    text.push('\n');
    for _ in 0..rows {
        let fields: Vec<String> = (0..ncols).map(|_| random_field(rng, max_len)).collect();
        text += &fields.join(",");
        text += if rng.below(3) == 0 { "\r\n" } else { "\n" };
    }
    text
}

#[test]
fn every_split_of_random_small_files() {
    let mut rng = Rng(0x5eed_c5f0);
    for _ in 0..6 {
        let ncols = 1 + rng.below(3) as usize;
        let mut text = random_file(&mut rng, 8, ncols, 6);
        if rng.below(2) == 0 {
            // No final line end.
            text.truncate(text.trim_end_matches(['\r', '\n']).len());
        }
        check_every_split(text.as_bytes(), &text_options(b'"', b','));
    }
}

#[test]
fn walk_matches_the_reference_from_every_offset() {
    let o = text_options(b'"', b',');
    let syntax = Syntax {
        quote: b'"',
        delim: b',',
    };
    let ds = QUOTED.iter().position(|&b| b == b'\r').unwrap() + 2;
    let want = reference(QUOTED, ds, 3, o.quote, o.delimiter);
    let data = &QUOTED[ds..];
    for from in 0..data.len() {
        for to in from..=data.len() {
            let prev = if from == 0 { b'\n' } else { data[from - 1] };
            let (got, _) = walk(&data[from..to], want.states[from], prev, syntax, false);
            assert_eq!(got, want.states[to], "{from}..{to}");
        }
        // The first row start found from `from` follows the first line end read outside.
        let prev = if from == 0 { b'\n' } else { data[from - 1] };
        let (_, row) = walk(&data[from..], want.states[from], prev, syntax, true);
        let expected = (from..data.len())
            .find(|&i| data[i] == b'\n' && want.states[i] != QuoteState::Inside)
            .map(|i| i + 1 - from);
        assert_eq!(row, expected, "row start from {from}");
    }
}

#[test]
fn large_file_with_many_multiline_fields() {
    let mut rng = Rng(0x00c5_7a1e);
    let mut text = random_file(&mut rng, 40_000, 4, 40);
    // One quoted field of several blocks, full of line ends, spanning many ranges.
    let long: String = (0..3 << 20)
        .map(|i| if i % 97 == 0 { '\n' } else { 'l' })
        .collect();
    text += &format!("1,\"{long}\",\"\",2\n");
    text += &random_file(&mut rng, 2_000, 4, 40)[12..];
    let o = text_options(b'"', b',');
    let f = Tmp::new(text.as_bytes());
    let (schema, ds) = utf8_schema(&f.0, &o);
    let want = reference(text.as_bytes(), ds as usize, 4, b'"', b',');
    let want_cells = rendered(&want.rows);
    assert_eq!(want.rows.len(), 42_001);
    for chunk in [file_len(&f.0), BLOCK + 7, 1_000_003, 65_536, 4_099] {
        let all = read_in_ranges(&f.0, (&schema, ds), chunk, &o, &want).unwrap();
        assert_eq!(all.num_rows(), want_cells.len(), "chunk {chunk}");
        assert!(cells(&all) == want_cells, "chunk {chunk}");
    }
}

#[test]
fn unterminated_quote_is_an_error_under_every_split() {
    let text = b"a,b\n1,x\n2,\"open\nstill, open\n3,y\n";
    let f = Tmp::new(text);
    let o = CsvOptions::default();
    let (schema, ds) = infer_schema(&f.0, &o).unwrap();
    let len = file_len(&f.0);
    let want = FrameError::Parse {
        path: f.0.clone(),
        line: 3,
        column: "b".into(),
        message: "unterminated quoted field".into(),
    };
    for chunk in 1..=len {
        let mut errors = Vec::new();
        for r in quote_ranges(&f.0, ds, len, chunk, &o, 2).unwrap() {
            if let Err(e) = read_range(&f.0, r, ds, &schema, None, &o) {
                errors.push(e);
            }
        }
        // Exactly the range that owns row 3 fails; ranges inside the open quote own no rows.
        assert_eq!(errors, std::slice::from_ref(&want), "chunk {chunk}");
    }
    let missing = quote_ranges("/nonexistent/q.csv", 4, 100, 10, &o, 2).unwrap_err();
    assert!(matches!(missing, FrameError::Io { ref path, .. } if path == "/nonexistent/q.csv"));
}

/// Measures the quote pass against parsing on a quote-free file and on one full of
/// multi-line quoted fields (prints times, asserts only the row counts):
/// `cargo test --release -p tessera-frame --lib measure_quote_pass -- --ignored --nocapture`
/// (`TESSERA_CSV_MB` sets the size, default 256).
#[test]
#[ignore]
#[allow(clippy::print_stderr)]
fn measure_quote_pass() {
    let mb: usize = std::env::var("TESSERA_CSV_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let mut rng = Rng(0x00be_4c11);
    for quoted in [false, true] {
        let mut text = String::from("id,name,x,y,when\n");
        let mut rows = 0usize;
        while text.len() < mb << 20 {
            let name = if quoted {
                format!("\"n{},\n\"\"q\"\"\"", rng.below(1000))
            } else {
                format!("n{}", rng.below(1000))
            };
            let (x, y) = (rng.below(1 << 40), rng.below(1_000_000));
            text += &format!("{rows},{name},{x},{}.{y:06},2024-01-02\n", y % 977);
            rows += 1;
        }
        let f = Tmp::new(text.as_bytes());
        drop(text);
        let o = CsvOptions::default();
        let (schema, ds) = infer_schema(&f.0, &o).unwrap();
        let len = file_len(&f.0);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        // Warm the page cache, then time the quote pass and a parallel parse.
        let _ = quote_ranges(&f.0, ds, len, 32 << 20, &o, threads).unwrap();
        let t = std::time::Instant::now();
        let ranges = quote_ranges(&f.0, ds, len, 32 << 20, &o, threads).unwrap();
        let pass = t.elapsed();
        let t = std::time::Instant::now();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let parsed: usize = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut n = 0;
                        while let Some(&r) = ranges.get(next.fetch_add(1, Ordering::Relaxed)) {
                            n += read_range(&f.0, r, ds, &schema, None, &o)
                                .unwrap()
                                .num_rows();
                        }
                        n
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        let parse = t.elapsed();
        assert_eq!(parsed, rows);
        eprintln!(
            "quoted={quoted} {:.0} MB, {} ranges, {threads} threads: quote pass {:.1} ms \
             ({:.1} GB/s), parse {:.1} ms ({:.2} GB/s); pass/parse {:.1}%",
            len as f64 / 1e6,
            ranges.len(),
            pass.as_secs_f64() * 1e3,
            len as f64 / pass.as_secs_f64() / 1e9,
            parse.as_secs_f64() * 1e3,
            len as f64 / parse.as_secs_f64() / 1e9,
            100.0 * pass.as_secs_f64() / parse.as_secs_f64(),
        );
    }
}
