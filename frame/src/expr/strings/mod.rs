//! pandas' `str` functions on a chunk's strings (any encoding: `Utf8`, `LargeUtf8`,
//! `Utf8View`, or a dictionary of them, whose values are computed once each). Null stays
//! null.
//!
//! Patterns are compiled once per chunk; plain text, prefixes and suffixes run on Arrow's
//! substring kernels, regular expressions on the `regex` crate ([`pattern`]), SQL `LIKE`
//! by its cheapest exact plan ([`like`]).

mod like;
mod pattern;
#[cfg(test)]
mod tests;

pub use pattern::Pattern;

use super::typing::scalar_type;
use super::{FrameError, FrameResult, StrFunction};
use arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, BooleanArray, Int64Array, Scalar, StringArray,
    StringBuilder,
};
use arrow::compute::cast;
use arrow::compute::kernels::comparison::{contains, ends_with, starts_with};
use arrow::compute::kernels::{cmp, take::take};
use arrow::datatypes::DataType;
use pattern::{Anchor, Template};
use std::borrow::Cow;
use std::sync::Arc;

impl StrFunction {
    /// Its name in pandas' `str` accessor.
    pub(super) fn name(&self) -> &'static str {
        match self {
            StrFunction::Lower => "lower",
            StrFunction::Upper => "upper",
            StrFunction::Len => "len",
            StrFunction::StartsWith(_) => "startswith",
            StrFunction::EndsWith(_) => "endswith",
            StrFunction::Strip => "strip",
            StrFunction::Replace { .. } | StrFunction::ReplaceRegex { .. } => "replace",
            StrFunction::Slice { .. } => "slice",
            StrFunction::Contains(_) => "contains",
            StrFunction::Match(_) => "match",
            StrFunction::FullMatch(_) => "fullmatch",
            StrFunction::Extract { .. } => "extract",
            StrFunction::Like { .. } => "like",
        }
    }

    /// The type of its result.
    pub(super) fn output_type(&self) -> DataType {
        match self {
            StrFunction::Len => DataType::Int64,
            StrFunction::StartsWith(_)
            | StrFunction::EndsWith(_)
            | StrFunction::Contains(_)
            | StrFunction::Match(_)
            | StrFunction::FullMatch(_)
            | StrFunction::Like { .. } => DataType::Boolean,
            _ => DataType::Utf8,
        }
    }

    /// Checks its pattern (compiling it): a malformed one, or one using a feature Tessera
    /// does not run, is a [`FrameError::Pattern`] when the expression is typed.
    pub(super) fn check(&self) -> FrameResult<()> {
        match self {
            StrFunction::Contains(p) | StrFunction::Match(p) | StrFunction::FullMatch(p) => {
                match p.literal().is_some() || !p.is_regex() {
                    true => Ok(()),
                    false => p.compile(Anchor::Search).map(|_| ()),
                }
            }
            StrFunction::Extract { pattern, group } => extract_group(pattern, *group).map(|_| ()),
            StrFunction::ReplaceRegex { pattern, repl } => {
                let compiled = pattern.compile(Anchor::Search)?;
                Template::new(repl, &compiled).map(|_| ())
            }
            StrFunction::Like { pattern, escape } => like::check(pattern, *escape),
            _ => Ok(()),
        }
    }

    /// Evaluates on the strings `x`.
    pub(super) fn evaluate(&self, x: &ArrayRef) -> FrameResult<ArrayRef> {
        if *x.data_type() == DataType::Null {
            return Ok(new_null_array(&self.output_type(), x.len()));
        }
        match self {
            StrFunction::Lower => strings(x, |v| Ok(Some(v.to_lowercase().into()))),
            StrFunction::Upper => strings(x, |v| Ok(Some(v.to_uppercase().into()))),
            StrFunction::Strip => strings(x, |v| Ok(Some(v.trim().into()))),
            StrFunction::Replace { from, to } => replace(x, from, to),
            StrFunction::Slice { start, stop } => {
                strings(x, |v| Ok(Some(slice_chars(v, *start, *stop).into())))
            }
            StrFunction::Len => per_string(x, &mut |values| {
                let lengths = values.map(|v| v.map(|v| v.chars().count() as i64));
                Ok(Arc::new(lengths.collect::<Int64Array>()))
            }),
            StrFunction::StartsWith(p) => Ok(Arc::new(starts_with(x, &needle(x, p)?)?)),
            StrFunction::EndsWith(p) => Ok(Arc::new(ends_with(x, &needle(x, p)?)?)),
            StrFunction::Contains(p) => match p.literal() {
                Some(text) => Ok(Arc::new(contains(x, &needle(x, text)?)?)),
                None if !p.is_regex() => {
                    // pandas compares upper case for plain text without case.
                    let upper = p.text().to_uppercase();
                    test(x, |v| Ok(v.to_uppercase().contains(&upper)))
                }
                None => regex_test(x, p, Anchor::Search),
            },
            StrFunction::Match(p) => match p.literal() {
                Some(text) => Ok(Arc::new(starts_with(x, &needle(x, text)?)?)),
                None => regex_test(x, p, Anchor::Start),
            },
            StrFunction::FullMatch(p) => match p.literal() {
                Some(text) => Ok(Arc::new(cmp::eq(x, &needle(x, text)?)?)),
                None => regex_test(x, p, Anchor::Full),
            },
            StrFunction::Extract { pattern, group } => {
                let compiled = extract_group(pattern, *group)?;
                strings(x, |v| {
                    let caps = compiled.regex_for(v)?.captures(v);
                    Ok(caps.and_then(|c| c.get(*group)).map(|m| m.as_str().into()))
                })
            }
            // Plain text and a template without references: the same as plain replace.
            StrFunction::ReplaceRegex { pattern, repl } if !repl.contains('\\') => {
                match pattern.literal() {
                    Some(from) => replace(x, from, repl),
                    None => replace_regex(x, pattern, repl),
                }
            }
            StrFunction::ReplaceRegex { pattern, repl } => replace_regex(x, pattern, repl),
            StrFunction::Like { pattern, escape } => match like::plan(pattern, *escape)? {
                like::Plan::Equals(t) => Ok(Arc::new(cmp::eq(x, &needle(x, &t)?)?)),
                like::Plan::StartsWith(t) => Ok(Arc::new(starts_with(x, &needle(x, &t)?)?)),
                like::Plan::EndsWith(t) => Ok(Arc::new(ends_with(x, &needle(x, &t)?)?)),
                like::Plan::Contains(t) => Ok(Arc::new(contains(x, &needle(x, &t)?)?)),
                like::Plan::Pieces(p) => test(x, |v| Ok(p.matches(v))),
                like::Plan::Regex(re) => test(x, |v| Ok(re.is_match(v))),
            },
        }
    }
}

/// Every `from` in `x`'s strings replaced by `to` (plain text, as Python's `str.replace`).
fn replace(x: &dyn Array, from: &str, to: &str) -> FrameResult<ArrayRef> {
    if !from.is_empty() {
        return strings(x, |v| Ok(Some(v.replace(from, to).into())));
    }
    // Python inserts `to` between characters and at both ends.
    strings(x, |v| {
        let mut out = to.to_string();
        for c in v.chars() {
            out.push(c);
            out.push_str(to);
        }
        Ok(Some(out.into()))
    })
}

/// Every match of `pattern` in `x`'s strings replaced by the `re.sub` template `repl`.
fn replace_regex(x: &dyn Array, pattern: &Pattern, repl: &str) -> FrameResult<ArrayRef> {
    let compiled = pattern.compile(Anchor::Search)?;
    let template = Template::new(repl, &compiled)?;
    strings(x, |v| Ok(Some(compiled.replace(v, &template)?)))
}

/// The text of a LIKE pattern `%text%` (which the substring kernels run, on the device
/// too), if it is one.
pub(super) fn like_substring(pattern: &str, escape: Option<char>) -> Option<String> {
    match like::plan(pattern, escape) {
        Ok(like::Plan::Contains(text)) => Some(text),
        _ => None,
    }
}

/// The pattern of `str.extract` compiled, checking that it has group `group`.
fn extract_group(pattern: &Pattern, group: usize) -> FrameResult<pattern::Compiled<'_>> {
    let compiled = pattern.compile(Anchor::Search)?;
    match (compiled.groups(), group) {
        (0, _) => Err(pattern.error("pattern contains no capture groups")),
        (n, g) if g == 0 || g > n => {
            Err(pattern.error(format!("no capture group {g} (the pattern has {n})")))
        }
        _ => Ok(compiled),
    }
}

/// Whether each string matches `p` at `anchor`.
fn regex_test(x: &ArrayRef, p: &Pattern, anchor: Anchor) -> FrameResult<ArrayRef> {
    let compiled = p.compile(anchor)?;
    test(x, |v| compiled.is_match(v))
}

/// `text` as a one-value constant of `x`'s string type (a dictionary's value type), for
/// Arrow's kernels.
fn needle(x: &dyn Array, text: &str) -> FrameResult<Scalar<ArrayRef>> {
    let text: ArrayRef = Arc::new(StringArray::from(vec![text]));
    Ok(Scalar::new(cast(&text, scalar_type(x.data_type()))?))
}

/// `f` of each string of `x` (see [`per_string`]).
fn test(x: &dyn Array, f: impl Fn(&str) -> FrameResult<bool>) -> FrameResult<ArrayRef> {
    per_string(x, &mut |values| {
        let out = values
            .map(|v| v.map(&f).transpose())
            .collect::<FrameResult<BooleanArray>>()?;
        Ok(Arc::new(out))
    })
}

/// `f` of each string of `x` as `Utf8` (`f` gives `None` for null); a result past
/// `Utf8`'s 2 GiB is an error.
fn strings<'a>(
    x: &'a dyn Array,
    f: impl Fn(&'a str) -> FrameResult<Option<Cow<'a, str>>>,
) -> FrameResult<ArrayRef> {
    per_string(x, &mut |values| {
        let mut out = StringBuilder::with_capacity(values.size_hint().0, 0);
        let mut bytes = 0usize;
        for v in values {
            match v.map(&f).transpose()?.flatten() {
                Some(s) => {
                    bytes += s.len();
                    if bytes > i32::MAX as usize {
                        return Err(FrameError::InvalidArgument(
                            "str: the result holds more than 2 GiB of text in one chunk".into(),
                        ));
                    }
                    out.append_value(s);
                }
                None => out.append_null(),
            }
        }
        Ok(Arc::new(out.finish()))
    })
}

/// A column's strings, one by one (null as `None`).
type Values<'i, 'a> = &'i mut dyn Iterator<Item = Option<&'a str>>;

/// The values of `x` (any string encoding), given to `f`, which makes an array of them; a
/// dictionary's values go to `f` once each and are taken by its keys.
fn per_string<'a>(
    x: &'a dyn Array,
    f: &mut dyn FnMut(Values<'_, 'a>) -> FrameResult<ArrayRef>,
) -> FrameResult<ArrayRef> {
    match x.data_type() {
        DataType::Utf8 => f(&mut x.as_string::<i32>().iter()),
        DataType::LargeUtf8 => f(&mut x.as_string::<i64>().iter()),
        DataType::Utf8View => f(&mut x.as_string_view().iter()),
        DataType::Dictionary(..) => {
            let dict = x.as_any_dictionary();
            let values = per_string(dict.values().as_ref(), f)?;
            Ok(take(&values, dict.keys(), None)?)
        }
        t => Err(FrameError::TypeMismatch(format!("str of {t}"))),
    }
}

/// Python's `v[start:stop]` on characters (negative bounds count from the end).
fn slice_chars(v: &str, start: i64, stop: Option<i64>) -> &str {
    let at = |i: i64| -> usize {
        let n = usize::try_from(i.unsigned_abs()).unwrap_or(usize::MAX);
        match i >= 0 {
            true => v.char_indices().nth(n).map_or(v.len(), |(b, _)| b),
            false => v.char_indices().rev().nth(n - 1).map_or(0, |(b, _)| b),
        }
    };
    let (a, b) = (at(start), stop.map_or(v.len(), at));
    match a < b {
        true => &v[a..b],
        false => "",
    }
}
