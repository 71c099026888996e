//! Text to value conversions and the byte scanners.

use crate::csv::text::{field_end, Separators};
use crate::csv::values::{
    civil_from_days, days_from_civil, fast_float, fast_int, parse_date, parse_timestamp,
};

#[test]
fn dates_and_timestamps() {
    assert_eq!(parse_date(b"1970-01-01"), Some(0));
    assert_eq!(parse_date(b"2000-03-01"), Some(11017));
    assert_eq!(parse_date(b"1969-12-31"), Some(-1));
    assert_eq!(parse_date(b"1900-03-01"), Some(-25508));
    assert_eq!(parse_date(b"2023-02-29"), None);
    assert_eq!(parse_date(b"2000-02-29"), Some(11016));
    assert_eq!(parse_date(b"1900-02-29"), None);
    assert_eq!(parse_date(b"2024-13-01"), None);
    assert_eq!(parse_date(b"2024-1-01"), None);
    let us = |d: i64, s: i64, f: i64| d * 86_400_000_000 + s * 1_000_000 + f;
    assert_eq!(
        parse_timestamp(b"2024-02-29T12:34:56.1234567"),
        Some(us(19782, 45296, 123456))
    );
    assert_eq!(
        parse_timestamp(b"2024-02-29 00:00:00.5"),
        Some(us(19782, 0, 500000))
    );
    assert_eq!(
        parse_timestamp(b"1969-12-31 23:59:59.999999999"),
        Some(us(-1, 86399, 999999))
    );
    assert_eq!(parse_timestamp(b"2024-02-29"), Some(us(19782, 0, 0)));
    for bad in [
        &b"2024-02-29 24:00:00"[..],
        b"2024-02-29 12:60:00",
        b"2024-02-29 12:00",
        b"2024-02-29 12:00:00.",
        b"2024-02-29 12:00:00.1234567890",
        b"2024-02-29 12:00:00.12x",
        b"2024-02-29X12:00:00",
    ] {
        assert_eq!(
            parse_timestamp(bad),
            None,
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
    for z in [-800_000, -719_468, -1, 0, 1, 11016, 19782, 2_932_896] {
        let (y, m, d) = civil_from_days(z);
        assert_eq!(days_from_civil(y, m, d), z);
    }
}

#[test]
fn fast_numbers_match_std() {
    // A linear congruential generator: many digit counts, decimal positions and signs.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 33
    };
    let mut checked = 0;
    for _ in 0..300_000 {
        let n = 1 + next() as usize % 20;
        let mut s: String = (0..n)
            .map(|_| char::from(b'0' + (next() % 10) as u8))
            .collect();
        if next() % 4 != 0 {
            let at = next() as usize % (n + 1);
            s.insert(at, '.');
        }
        if next() % 3 == 0 {
            s.insert(0, '-');
        }
        if let Some(v) = fast_float(s.as_bytes()) {
            let want: f64 = s.parse().unwrap();
            assert_eq!(v.to_bits(), want.to_bits(), "{s}");
            checked += 1;
        }
        if let Some(v) = fast_int(s.as_bytes()) {
            assert_eq!(Some(v), s.parse::<i64>().ok(), "{s}");
        }
    }
    assert!(checked > 100_000);
    for s in [
        "0.1",
        "9007199254740993",
        "0.30000000000000004",
        "-0.0",
        "5.",
        ".5",
        "1.2.3",
    ] {
        let got = fast_float(s.as_bytes()).map(f64::to_bits);
        assert!(
            got.is_none() || got == s.parse::<f64>().ok().map(f64::to_bits),
            "{s}"
        );
    }
    assert_eq!(fast_float(b"1.2.3"), None);
    assert_eq!(fast_float(b"-"), None);
    assert_eq!(fast_int(b"123456789012345678"), Some(123456789012345678));
    assert_eq!(fast_int(b"1234567890123456789"), None);
    assert_eq!(fast_int(b"12a"), None);
    assert_eq!(fast_int(b"-"), None);
}

#[test]
fn separators_match_a_byte_scan() {
    let text: Vec<u8> = (0..1000u32)
        .map(|i| match (i * 7919) % 13 {
            0 => b',',
            1 => b'\n',
            2 => 0x80 | (i % 128) as u8,
            _ => b'a' + (i % 26) as u8,
        })
        .collect();
    for from in [0, 1, 63, 64, 65, 500, 999, 1000] {
        let mut seps = Separators::new(&text, from, b',');
        let want: Vec<usize> = (from..text.len())
            .filter(|&i| text[i] == b',' || text[i] == b'\n')
            .chain([text.len(), text.len()])
            .collect();
        let got: Vec<usize> = want.iter().map(|_| seps.next()).collect();
        assert_eq!(got, want, "from {from}");
        let mut i = from;
        for &w in want.iter().take(want.len() - 1) {
            assert_eq!(field_end(&text, i, b','), w);
            i = w + 1;
        }
    }
}
