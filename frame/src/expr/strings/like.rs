//! SQL `LIKE`: `%` stands for any run of characters, `_` for one character, and an escape
//! character (none unless given) makes the next `%`, `_` or itself plain text. Case counts.
//!
//! A pattern runs by the cheapest plan that matches it exactly: equality, Arrow's
//! `starts_with`, `ends_with` and `contains` kernels, an in-order search for its pieces
//! (`%Customer%Complaints%`), and a regular expression only where it has a `_`.

use super::super::{FrameError, FrameResult};
use memchr::memmem::Finder;
use regex::Regex;

/// A part of a LIKE pattern.
#[derive(Clone, Debug, PartialEq)]
enum Token {
    Text(String),
    /// `_`: one character.
    One,
    /// `%`: any run of characters.
    Any,
}

/// How a LIKE pattern runs on a chunk.
pub(crate) enum Plan {
    /// No wildcard: the value equals this text.
    Equals(String),
    /// `text%`.
    StartsWith(String),
    /// `%text`.
    EndsWith(String),
    /// `%text%`.
    Contains(String),
    /// `prefix%a%b%suffix`: the pieces in order.
    Pieces(Pieces),
    /// A pattern with `_`.
    Regex(Regex),
}

/// `prefix%middle…%suffix`, matched by finding each middle piece after the last.
pub(crate) struct Pieces {
    prefix: String,
    middles: Vec<Finder<'static>>,
    suffix: String,
}

impl Pieces {
    /// Whether `v` matches.
    pub(crate) fn matches(&self, v: &str) -> bool {
        let (p, s) = (self.prefix.len(), self.suffix.len());
        // An empty prefix or suffix is not compared: `starts_with("")` still calls memcmp
        // with the empty string's dangling pointer, whose masked vector load faults and is
        // suppressed in microcode (on AMD Zen, a third of TPC-H Q13's time).
        if v.len() < p + s
            || (p > 0 && !v.starts_with(&self.prefix))
            || (s > 0 && !v.ends_with(&self.suffix))
        {
            return false;
        }
        let mut rest = &v.as_bytes()[p..v.len() - s];
        for finder in &self.middles {
            match finder.find(rest) {
                Some(i) => rest = &rest[i + finder.needle().len()..],
                None => return false,
            }
        }
        true
    }
}

/// An error about LIKE pattern `pattern`.
fn error(pattern: &str, message: impl Into<String>) -> FrameError {
    FrameError::Pattern {
        pattern: pattern.to_string(),
        message: message.into(),
    }
}

/// `pattern`'s parts (consecutive `%` as one).
fn tokens(pattern: &str, escape: Option<char>) -> FrameResult<Vec<Token>> {
    if let Some(e @ ('%' | '_')) = escape {
        return Err(error(pattern, format!("LIKE escape {e:?} is a wildcard")));
    }
    let mut out = Vec::new();
    let mut text = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        let wildcard = match c {
            c if Some(c) == escape => match chars.next() {
                Some(n) if n == '%' || n == '_' || Some(n) == escape => {
                    text.push(n);
                    continue;
                }
                n => {
                    let after = n.map_or("the end".to_string(), |n| format!("{n:?}"));
                    return Err(error(
                        pattern,
                        format!("LIKE escape {c:?} must come before %, _ or itself, not {after}"),
                    ));
                }
            },
            '%' => Token::Any,
            '_' => Token::One,
            c => {
                text.push(c);
                continue;
            }
        };
        if !text.is_empty() {
            out.push(Token::Text(std::mem::take(&mut text)));
        }
        if !(wildcard == Token::Any && out.last() == Some(&Token::Any)) {
            out.push(wildcard);
        }
    }
    if !text.is_empty() {
        out.push(Token::Text(text));
    }
    Ok(out)
}

/// Checks `pattern` (a malformed escape is a [`FrameError::Pattern`]).
pub(crate) fn check(pattern: &str, escape: Option<char>) -> FrameResult<()> {
    tokens(pattern, escape).map(|_| ())
}

/// The plan for `pattern`.
pub(crate) fn plan(pattern: &str, escape: Option<char>) -> FrameResult<Plan> {
    use Token::*;
    let tokens = tokens(pattern, escape)?;
    let text = |t: &Token| match t {
        Text(s) => Some(s.clone()),
        _ => None,
    };
    Ok(match tokens.as_slice() {
        [] => Plan::Equals(String::new()),
        [Text(t)] => Plan::Equals(t.clone()),
        [Any] => Plan::Contains(String::new()),
        [Text(t), Any] => Plan::StartsWith(t.clone()),
        [Any, Text(t)] => Plan::EndsWith(t.clone()),
        [Any, Text(t), Any] => Plan::Contains(t.clone()),
        ts if !ts.contains(&One) => {
            let prefix = ts.first().and_then(text).unwrap_or_default();
            let suffix = match ts.len() > 1 {
                true => ts.last().and_then(text).unwrap_or_default(),
                false => String::new(),
            };
            let inner =
                &ts[usize::from(!prefix.is_empty())..ts.len() - usize::from(!suffix.is_empty())];
            let middles = inner
                .iter()
                .filter_map(text)
                .map(|m| Finder::new(m.as_bytes()).into_owned())
                .collect();
            Plan::Pieces(Pieces {
                prefix,
                middles,
                suffix,
            })
        }
        ts => {
            let mut source = String::from(r"(?s)\A");
            for t in ts {
                match t {
                    Text(s) => source.push_str(&regex::escape(s)),
                    One => source.push('.'),
                    Any => source.push_str(".*"),
                }
            }
            source.push_str(r"\z");
            Plan::Regex(Regex::new(&source).map_err(|e| error(pattern, e.to_string()))?)
        }
    })
}
