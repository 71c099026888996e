//! Field texts to values: null texts, integers, floats, booleans, dates and timestamps.

/// The null texts, with a bit set of their lengths for a quick rejection.
#[derive(Debug)]
pub(super) struct NullSet {
    values: Vec<Vec<u8>>,
    lengths: u64,
}

impl NullSet {
    pub(super) fn new(values: &[String]) -> Self {
        let lengths = values
            .iter()
            .filter(|v| v.len() < 64)
            .fold(1, |m, v| m | (1u64 << v.len()));
        NullSet {
            values: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
            lengths,
        }
    }

    /// True for an empty text or one of the null texts.
    #[inline(always)]
    pub(super) fn contains(&self, text: &[u8]) -> bool {
        let n = text.len();
        if n < 64 && self.lengths >> n & 1 == 0 {
            return false;
        }
        n == 0 || self.values.iter().any(|v| v == text)
    }

    /// True when no null text looks like the start of a number (so numbers skip the check).
    pub(super) fn numbers_never_null(&self) -> bool {
        self.values.iter().all(|v| {
            v.first()
                .is_none_or(|b| !(b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.')))
        })
    }
}

// ---------------------------------------------------------------------------------------

pub(super) fn parse_i64(text: &[u8]) -> Option<i64> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

pub(super) fn parse_f64(text: &[u8]) -> Option<f64> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

pub(super) fn parse_bool(text: &[u8]) -> Option<bool> {
    match text {
        b"true" | b"True" | b"TRUE" => Some(true),
        b"false" | b"False" | b"FALSE" => Some(false),
        _ => None,
    }
}

/// The value of a run of ASCII digits (None if any byte is not a digit).
fn digits(text: &[u8]) -> Option<u32> {
    text.iter().try_fold(0u32, |v, &b| {
        b.is_ascii_digit().then(|| v * 10 + u32::from(b - b'0'))
    })
}

/// Days from 1970-01-01 to the given civil date (proleptic Gregorian).
pub(super) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// The civil date (year, month, day) of a day count from 1970-01-01.
pub(super) fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn days_in_month(y: u32, m: u32) -> u32 {
    match m {
        2 if (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// "YYYY-MM-DD" as days since 1970-01-01.
pub(super) fn parse_date(text: &[u8]) -> Option<i32> {
    if text.len() != 10 || text.get(4) != Some(&b'-') || text.get(7) != Some(&b'-') {
        return None;
    }
    let y = digits(text.get(0..4)?)?;
    let m = digits(text.get(5..7)?)?;
    let d = digits(text.get(8..10)?)?;
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    i32::try_from(days_from_civil(y.into(), m.into(), d.into())).ok()
}

/// "YYYY-MM-DD[( |T)HH:MM:SS[.fraction]]" as microseconds since 1970-01-01 00:00:00
/// (the fraction, up to 9 digits, truncated to microseconds).
pub(super) fn parse_timestamp(text: &[u8]) -> Option<i64> {
    let days = i64::from(parse_date(text.get(..10)?)?);
    let mut micros = days * 86_400_000_000;
    if text.len() == 10 {
        return Some(micros);
    }
    let time = text.get(10..19)?;
    if !matches!(time, [b' ' | b'T', _, _, b':', _, _, b':', _, _]) {
        return None;
    }
    let h = digits(time.get(1..3)?)?;
    let mi = digits(time.get(4..6)?)?;
    let s = digits(time.get(7..9)?)?;
    if h > 23 || mi > 59 || s > 59 {
        return None;
    }
    micros += i64::from(h * 3600 + mi * 60 + s) * 1_000_000;
    match text.get(19..) {
        Some([]) => Some(micros),
        Some([b'.', frac @ ..]) if (1..=9).contains(&frac.len()) => {
            let six = frac.get(..frac.len().min(6))?;
            let scale = 10u32.pow(6 - six.len() as u32);
            digits(frac)?;
            Some(micros + i64::from(digits(six)? * scale))
        }
        _ => None,
    }
}

/// Powers of ten exactly representable as f64.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// `text` less a leading sign: (negative, the rest).
#[inline(always)]
fn unsign(text: &[u8]) -> (bool, &[u8]) {
    match text {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, text),
    }
}

/// An integer of 1 to 18 digits with an optional sign (longer ones take `parse_i64`).
#[inline(always)]
pub(super) fn fast_int(text: &[u8]) -> Option<i64> {
    let (neg, digits) = unsign(text);
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut v = 0i64;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + i64::from(d);
    }
    Some(if neg { -v } else { v })
}

/// A decimal without exponent whose digits fit 2^53, with at most 22 decimals. The
/// quotient of two exact doubles is correctly rounded (Clinger's fast path), so the result
/// is bit-identical to `str::parse::<f64>` (which takes the other texts).
#[inline(always)]
pub(super) fn fast_float(text: &[u8]) -> Option<f64> {
    let (neg, body) = unsign(text);
    let mut m = 0u64;
    let mut point = None;
    for (i, &b) in body.iter().enumerate() {
        let d = b.wrapping_sub(b'0');
        if d <= 9 {
            m = m.wrapping_mul(10).wrapping_add(u64::from(d));
        } else if b == b'.' && point.is_none() {
            point = Some(i);
        } else {
            return None;
        }
    }
    let decimals = point.map_or(0, |i| body.len() - i - 1);
    let n = body.len() - usize::from(point.is_some());
    if n == 0 || n > 19 || m > 1 << 53 {
        return None;
    }
    let v = m as f64 / *POW10.get(decimals)?;
    Some(if neg { -v } else { v })
}
