//! pandas' string patterns: Python `re` regular expressions (or plain text), run by the
//! `regex` crate (linear time, no backtracking).
//!
//! A pattern is translated from Python's syntax to the crate's before it is compiled, so
//! that it matches what Python's `re` matches:
//! - `\w` and `\s` are Python's classes (letters, numbers and `_`; Unicode white space and
//!   the separators `\x1c`–`\x1f`), `\Z` is the end of the text, `\b` inside a class a
//!   backspace, octal and `\x`, `\u`, `\U` escapes Python's; inside a class `[`, `&&`, `--`
//!   and `~~` are literal text, as Python reads them;
//! - `$` outside multiline mode also matches before a line break that ends the text, as
//!   Python's does. A value that ends in a line break and holds another one is an error
//!   for such a pattern (there the crate cannot tell the last line break from the others);
//!   `\Z` or multiline mode match it;
//! - the features the crate lacks are a [`FrameError::Pattern`] naming them, never a
//!   different match: look-ahead and look-behind, backreferences, atomic groups,
//!   possessive quantifiers, conditional groups, `\N{...}` and the `ASCII` and `LOCALE`
//!   flags. An escape Python refuses (`\z`, `\p`) is refused too.
//!
//! What stays different, in corners: `\b` counts combining marks as word characters
//! (Python does not); case-insensitive matching folds case by Unicode's simple folding
//! (Python adds a few special cases); in `str.replace`, after an empty match the next match
//! starts one character later (Python first tries a longer match at the same place, which
//! only a pattern that prefers an empty match to a longer one at one place can find).

use super::super::{FrameError, FrameResult};
use regex::{Captures, Regex, RegexBuilder};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// A pattern of pandas' `str` functions: a Python `re` regular expression (the default, as
/// pandas' `contains`, `match`, `fullmatch` and `extract`) or plain text, with the flags
/// pandas takes (`case=False` and `re.IGNORECASE`, `re.MULTILINE`, `re.DOTALL`,
/// `re.VERBOSE`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pattern {
    text: String,
    regex: bool,
    ignore_case: bool,
    multiline: bool,
    dot_all: bool,
    verbose: bool,
}

/// Where a regular expression must match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Anchor {
    /// Anywhere (Python's `search`).
    Search,
    /// At the start (Python's `match`).
    Start,
    /// The whole value (Python's `fullmatch`).
    Full,
}

/// The characters that make a Python pattern more than plain text.
const SYNTAX: &[char] = &[
    '.', '^', '$', '*', '+', '?', '{', '}', '[', ']', '\\', '|', '(', ')',
];

/// Python's `\w` (`str.isalnum()` or `_`) and `\s` (`str.isspace()`) as the crate's classes.
const WORD: &str = r"\p{L}\p{N}_";
const SPACE: &str = r"\s\x1C-\x1F";

impl Pattern {
    /// A Python `re` regular expression.
    pub fn regex(text: &str) -> Pattern {
        Pattern {
            text: text.to_string(),
            regex: true,
            ignore_case: false,
            multiline: false,
            dot_all: false,
            verbose: false,
        }
    }

    /// Plain text (pandas' `regex=False`).
    pub fn plain(text: &str) -> Pattern {
        Pattern {
            regex: false,
            ..Pattern::regex(text)
        }
    }

    /// Letters match regardless of case (pandas' `case=False`, `re.IGNORECASE`).
    pub fn ignore_case(self, yes: bool) -> Pattern {
        Pattern {
            ignore_case: yes,
            ..self
        }
    }

    /// `^` and `$` also match at line breaks (`re.MULTILINE`).
    pub fn multiline(self, yes: bool) -> Pattern {
        Pattern {
            multiline: yes,
            ..self
        }
    }

    /// `.` also matches a line break (`re.DOTALL`).
    pub fn dot_all(self, yes: bool) -> Pattern {
        Pattern {
            dot_all: yes,
            ..self
        }
    }

    /// White space and `#` comments in the pattern are ignored (`re.VERBOSE`).
    pub fn verbose(self, yes: bool) -> Pattern {
        Pattern {
            verbose: yes,
            ..self
        }
    }

    /// The pattern's text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether it is a regular expression rather than plain text.
    pub fn is_regex(&self) -> bool {
        self.regex
    }

    /// Whether letters match regardless of case.
    pub fn is_ignore_case(&self) -> bool {
        self.ignore_case
    }

    /// The text it matches exactly, case and all, where it is plain text or a regular
    /// expression without syntax (which the substring kernels then run).
    pub fn literal(&self) -> Option<&str> {
        let plain = !self.regex || (!self.verbose && !self.text.contains(SYNTAX));
        (plain && !self.ignore_case).then_some(self.text.as_str())
    }

    /// A [`FrameError::Pattern`] about this pattern.
    pub fn error(&self, message: impl Into<String>) -> FrameError {
        FrameError::Pattern {
            pattern: self.text.clone(),
            message: message.into(),
        }
    }

    /// The names of its capture groups in order: a named group's name, else `None`
    /// (checking the pattern).
    pub fn group_names(&self) -> FrameResult<Vec<Option<String>>> {
        let compiled = self.compile(Anchor::Search)?;
        Ok(compiled
            .main
            .capture_names()
            .skip(1)
            .map(|n| n.map(str::to_string))
            .collect())
    }

    /// Compiled for `anchor` (once per chunk, not per value).
    pub(crate) fn compile(&self, anchor: Anchor) -> FrameResult<Compiled<'_>> {
        let (body, before_newline) = match self.regex {
            true => Translate::run(self)?,
            false => (regex::escape(&self.text), None),
        };
        let global = [(self.ignore_case, "(?i)"), (self.dot_all, "(?s)")]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, flag)| *flag)
            .collect::<String>();
        let build = |body: &str| {
            let source = match anchor {
                Anchor::Search => format!("{global}{body}"),
                Anchor::Start => format!(r"{global}\A(?:{body})"),
                Anchor::Full => format!(r"{global}\A(?:{body})\z"),
            };
            RegexBuilder::new(&source)
                .build()
                .map_err(|e| self.error(crate_error(e)))
        };
        Ok(Compiled {
            main: build(&body)?,
            before_newline: before_newline.as_deref().map(build).transpose()?,
            pattern: self,
        })
    }
}

impl From<&str> for Pattern {
    /// A regular expression, as pandas reads a pattern by default.
    fn from(text: &str) -> Pattern {
        Pattern::regex(text)
    }
}

/// The crate's error, on one line.
fn crate_error(e: regex::Error) -> String {
    match e {
        regex::Error::CompiledTooBig(limit) => {
            format!("the compiled pattern is larger than the {limit}-byte limit")
        }
        e => e
            .to_string()
            .lines()
            .last()
            .unwrap_or("invalid")
            .to_string(),
    }
}

/// A pattern compiled for one chunk.
pub(crate) struct Compiled<'p> {
    /// `$` (outside multiline mode) at the end of the text only.
    main: Regex,
    /// For a value that ends in a line break, when the pattern has such a `$`: `$` also
    /// before that line break (exact where the value holds no other one).
    before_newline: Option<Regex>,
    pattern: &'p Pattern,
}

impl Compiled<'_> {
    /// The regex that reads `v` as Python's `re` does (see the module docs).
    pub(crate) fn regex_for(&self, v: &str) -> FrameResult<&Regex> {
        match (&self.before_newline, v.strip_suffix('\n')) {
            (Some(re), Some(head)) if !head.contains('\n') => Ok(re),
            (Some(_), Some(_)) => Err(self.pattern.error(format!(
                "`$` also matches before a line break that ends the text, as in Python, but \
                 value {v:?} holds other line breaks, where Tessera's regex engine cannot tell \
                 that one apart; use \\Z, or re.MULTILINE"
            ))),
            _ => Ok(&self.main),
        }
    }

    /// Whether `v` has a match.
    pub(crate) fn is_match(&self, v: &str) -> FrameResult<bool> {
        Ok(self.regex_for(v)?.is_match(v))
    }

    /// The number of capture groups (without the whole match).
    pub(crate) fn groups(&self) -> usize {
        self.main.captures_len() - 1
    }

    /// `v` with each match replaced by `template` (Python's `re.sub`).
    pub(crate) fn replace<'v>(&self, v: &'v str, template: &Template) -> FrameResult<Cow<'v, str>> {
        let re = self.regex_for(v)?;
        let mut out = String::new();
        let (mut last, mut at, mut replaced) = (0, 0, false);
        while at <= v.len() {
            let (start, end) = match template.groups {
                true => match re.captures_at(v, at) {
                    Some(caps) => {
                        let (start, end) = span(&caps);
                        out.push_str(&v[last..start]);
                        template.expand(&caps, &mut out);
                        (start, end)
                    }
                    None => break,
                },
                false => match re.find_at(v, at) {
                    Some(m) => {
                        out.push_str(&v[last..m.start()]);
                        template.expand_text(&mut out);
                        (m.start(), m.end())
                    }
                    None => break,
                },
            };
            (last, replaced) = (end, true);
            // After an empty match the next one starts a character later, as Python's.
            at = match start == end {
                true => v[end..]
                    .chars()
                    .next()
                    .map_or(v.len() + 1, |c| end + c.len_utf8()),
                false => end,
            };
        }
        if !replaced {
            return Ok(Cow::Borrowed(v));
        }
        out.push_str(&v[last..]);
        Ok(Cow::Owned(out))
    }
}

/// The whole match's span.
fn span(caps: &Captures<'_>) -> (usize, usize) {
    caps.get(0).map_or((0, 0), |m| (m.start(), m.end()))
}

/// A Python `re.sub` replacement (`\1`, `\g<1>`, `\g<name>`, `\n`…) read against one
/// pattern's groups.
pub(crate) struct Template {
    pieces: Vec<Piece>,
    /// Whether it refers to a group (else the matches' text is not needed).
    groups: bool,
}

enum Piece {
    Text(String),
    Group(usize),
}

impl Template {
    /// Reads `repl` (Python's template syntax) against `compiled`'s groups.
    pub(crate) fn new(repl: &str, compiled: &Compiled<'_>) -> FrameResult<Template> {
        let bad = |m: String| compiled.pattern.error(format!("replacement {repl:?}: {m}"));
        let names = compiled.main.capture_names().collect::<Vec<_>>();
        let groups = compiled.groups();
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut chars = repl.chars().peekable();
        let group = |i: usize, text: &mut String, pieces: &mut Vec<Piece>| {
            if i > groups {
                return Err(bad(format!("invalid group reference {i}")));
            }
            pieces.push(Piece::Text(std::mem::take(text)));
            pieces.push(Piece::Group(i));
            Ok(())
        };
        while let Some(c) = chars.next() {
            if c != '\\' {
                text.push(c);
                continue;
            }
            match chars.next() {
                None => return Err(bad("bad escape (end of replacement)".into())),
                Some('g') => {
                    if chars.next() != Some('<') {
                        return Err(bad("missing < after \\g".into()));
                    }
                    let mut name = String::new();
                    loop {
                        match chars.next() {
                            Some('>') => break,
                            Some(c) => name.push(c),
                            None => return Err(bad("missing >, unterminated name".into())),
                        }
                    }
                    let i = match name.parse::<usize>() {
                        Ok(i) if name.bytes().all(|b| b.is_ascii_digit()) => i,
                        _ => names
                            .iter()
                            .position(|n| *n == Some(name.as_str()))
                            .ok_or_else(|| bad(format!("unknown group name {name:?}")))?,
                    };
                    group(i, &mut text, &mut pieces)?;
                }
                Some(d @ '0'..='9') => {
                    let mut digits = d.to_string();
                    let octal = |c: &char| ('0'..='7').contains(c);
                    if d == '0' {
                        while digits.len() < 3 && chars.peek().is_some_and(octal) {
                            digits.extend(chars.next());
                        }
                        text.push(octal_char(&digits, &bad)?);
                        continue;
                    }
                    if chars.peek().is_some_and(char::is_ascii_digit) {
                        digits.extend(chars.next());
                        if digits.chars().all(|c| octal(&c)) && chars.peek().is_some_and(octal) {
                            digits.extend(chars.next());
                            text.push(octal_char(&digits, &bad)?);
                            continue;
                        }
                    }
                    group(digits.parse().unwrap_or(usize::MAX), &mut text, &mut pieces)?;
                }
                Some(e) => match simple_escape(e) {
                    Some(c) => text.push(c),
                    None if e.is_ascii_alphabetic() => {
                        return Err(bad(format!("bad escape \\{e}")))
                    }
                    // Python keeps the backslash of an unknown escape.
                    None => {
                        text.push('\\');
                        text.push(e);
                    }
                },
            }
        }
        pieces.push(Piece::Text(text));
        pieces.retain(|p| !matches!(p, Piece::Text(t) if t.is_empty()));
        let groups = pieces.iter().any(|p| matches!(p, Piece::Group(_)));
        Ok(Template { pieces, groups })
    }

    fn expand(&self, caps: &Captures<'_>, out: &mut String) {
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                // A group that took no part in the match is empty, as in Python.
                Piece::Group(i) => out.push_str(caps.get(*i).map_or("", |m| m.as_str())),
            }
        }
    }

    fn expand_text(&self, out: &mut String) {
        for piece in &self.pieces {
            if let Piece::Text(t) = piece {
                out.push_str(t);
            }
        }
    }
}

/// The character of an octal escape's digits (at most `\377`).
fn octal_char(digits: &str, bad: &dyn Fn(String) -> FrameError) -> FrameResult<char> {
    u32::from_str_radix(digits, 8)
        .ok()
        .filter(|&v| v <= 0o377)
        .and_then(char::from_u32)
        .ok_or_else(|| {
            bad(format!(
                "octal escape value \\{digits} outside of range 0-0o377"
            ))
        })
}

/// The character of Python's one-letter escapes `\a \f \n \r \t \v` (and `\\`).
fn simple_escape(c: char) -> Option<char> {
    Some(match c {
        'a' => '\x07',
        'f' => '\x0C',
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        'v' => '\x0B',
        '\\' => '\\',
        _ => return None,
    })
}

/// A character as the crate's pattern text (escaped unless a letter or digit).
fn literal(c: char, out: &mut String) {
    use std::fmt::Write as _;
    match c.is_alphanumeric() {
        true => out.push(c),
        false => {
            let _ = write!(out, "\\x{{{:X}}}", c as u32);
        }
    }
}

/// The flags a group runs under: those the translation resolves itself.
#[derive(Clone, Copy)]
struct Scope {
    multiline: bool,
    verbose: bool,
}

/// One item of a character class.
enum ClassItem {
    Char(char),
    /// A class escape (`\d`, `\w`…) as the crate's class text.
    Set(&'static str),
}

/// Python's `re` syntax into the crate's (see the module docs).
struct Translate<'a> {
    pattern: &'a Pattern,
    chars: Vec<char>,
    at: usize,
    /// The crate's pattern with `$` at the end of the text, and (once a `$` is seen) with
    /// `$` also before a final line break.
    out: String,
    out_newline: String,
    dollar: bool,
    scopes: Vec<Scope>,
}

impl<'a> Translate<'a> {
    /// The crate's pattern, and the one for values ending in a line break where it differs.
    fn run(pattern: &'a Pattern) -> FrameResult<(String, Option<String>)> {
        let mut t = Translate {
            pattern,
            chars: pattern.text.chars().collect(),
            at: 0,
            out: String::new(),
            out_newline: String::new(),
            dollar: false,
            scopes: Vec::new(),
        };
        let mut scope = Scope {
            multiline: pattern.multiline,
            verbose: pattern.verbose,
        };
        let mut global = (pattern.ignore_case, pattern.dot_all);
        // Global flags lead the pattern, as Python requires.
        while t.peek_is("(?") {
            let flags: String = t.chars[t.at + 2..]
                .iter()
                .take_while(|c| c.is_ascii_alphabetic())
                .collect();
            if t.chars.get(t.at + 2 + flags.len()) != Some(&')') || flags.is_empty() {
                break;
            }
            for f in flags.chars() {
                t.flag(f, true, &mut scope, &mut global)?;
            }
            t.at += flags.len() + 3;
        }
        if global.0 && !pattern.ignore_case {
            t.emit("(?i)");
        }
        if global.1 && !pattern.dot_all {
            t.emit("(?s)");
        }
        t.scopes.push(scope);
        while let Some(c) = t.next() {
            t.item(c)?;
        }
        if t.scopes.len() > 1 {
            return Err(pattern.error("missing ), unterminated subpattern"));
        }
        Ok((t.out, t.dollar.then_some(t.out_newline)))
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn peek_is(&self, s: &str) -> bool {
        s.chars()
            .enumerate()
            .all(|(i, c)| self.chars.get(self.at + i) == Some(&c))
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += 1;
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        let yes = self.peek() == Some(c);
        self.at += usize::from(yes);
        yes
    }

    fn emit(&mut self, s: &str) {
        self.out.push_str(s);
        self.out_newline.push_str(s);
    }

    fn emit_char(&mut self, c: char) {
        let mut s = String::new();
        literal(c, &mut s);
        self.emit(&s);
    }

    fn scope(&self) -> Scope {
        self.scopes.last().copied().unwrap_or(Scope {
            multiline: false,
            verbose: false,
        })
    }

    fn error(&self, message: impl Into<String>) -> FrameError {
        self.pattern.error(message)
    }

    fn unsupported(&self, feature: &str) -> FrameError {
        self.error(format!(
            "{feature} not supported: Tessera runs patterns with the regex crate, which \
             matches in linear time and has no backtracking"
        ))
    }

    /// Applies flag letter `f` (turned on or off) to `scope` and to the `(i, s)` flags the
    /// crate applies.
    fn flag(
        &self,
        f: char,
        on: bool,
        scope: &mut Scope,
        crate_flags: &mut (bool, bool),
    ) -> FrameResult<()> {
        match f {
            'i' => crate_flags.0 = on,
            's' => crate_flags.1 = on,
            'm' => scope.multiline = on,
            'x' => scope.verbose = on,
            'u' => {}
            'a' => return Err(self.unsupported("the ASCII flag ((?a), re.ASCII) is")),
            'L' => return Err(self.unsupported("the LOCALE flag ((?L), re.LOCALE) is")),
            _ => return Err(self.error(format!("unknown flag {f:?}"))),
        }
        Ok(())
    }

    /// One item outside a class, starting with `c`.
    fn item(&mut self, c: char) -> FrameResult<()> {
        let scope = self.scope();
        match c {
            c if scope.verbose && c.is_whitespace() => {}
            '#' if scope.verbose => while self.next().is_some_and(|c| c != '\n') {},
            '\\' => self.escape()?,
            '[' => self.class()?,
            '(' => self.group()?,
            ')' => {
                if self.scopes.len() <= 1 {
                    return Err(self.error("unbalanced parenthesis"));
                }
                self.scopes.pop();
                self.emit(")");
            }
            '^' if scope.multiline => self.emit("(?m:^)"),
            '^' => self.emit(r"\A"),
            '$' if scope.multiline => self.emit("(?m:$)"),
            '$' => {
                self.dollar = true;
                self.out.push_str(r"\z");
                self.out_newline.push_str("(?m:$)");
            }
            '*' | '+' | '?' => {
                self.emit(&c.to_string());
                self.quantifier_suffix()?;
            }
            '{' => match self.repeat() {
                Some(q) => {
                    self.emit(&q);
                    self.quantifier_suffix()?;
                }
                None => self.emit(r"\{"),
            },
            '.' | '|' => self.emit(&c.to_string()),
            c => self.emit_char(c),
        }
        Ok(())
    }

    /// After a quantifier: a lazy `?`, or a possessive `+` (refused).
    fn quantifier_suffix(&mut self) -> FrameResult<()> {
        if self.eat('?') {
            self.emit("?");
        } else if self.peek() == Some('+') {
            return Err(self.unsupported("possessive quantifiers (*+, ++, ?+, {m,n}+) are"));
        }
        Ok(())
    }

    /// A `{m,n}` repetition after its `{` (Python's forms; `None`: the `{` is text).
    fn repeat(&mut self) -> Option<String> {
        let start = self.at;
        let digits = |t: &mut Self| {
            let mut d = String::new();
            while let Some(c) = t.peek().filter(char::is_ascii_digit) {
                d.push(c);
                t.at += 1;
            }
            d
        };
        if self.peek() == Some('}') {
            return None;
        }
        let lo = digits(self);
        let hi = match self.eat(',') {
            true => Some(digits(self)),
            false => None,
        };
        if !self.eat('}') || (lo.is_empty() && hi.is_none()) {
            self.at = start;
            return None;
        }
        let lo = if lo.is_empty() { "0".into() } else { lo };
        Some(match hi {
            None => format!("{{{lo}}}"),
            Some(hi) => format!("{{{lo},{hi}}}"),
        })
    }

    /// An escape outside a class, after its `\`.
    fn escape(&mut self) -> FrameResult<()> {
        let Some(c) = self.next() else {
            return Err(self.error("bad escape (end of pattern)"));
        };
        match c {
            'A' | 'b' | 'B' | 'd' | 'D' => self.emit(&format!("\\{c}")),
            // \z: Python 3.14's spelling.
            'Z' | 'z' => self.emit(r"\z"),
            'w' => self.emit(&format!("[{WORD}]")),
            'W' => self.emit(&format!("[^{WORD}]")),
            's' => self.emit(&format!("[{SPACE}]")),
            'S' => self.emit(&format!("[^{SPACE}]")),
            '1'..='9' if !self.octal_follows(c) => {
                return Err(self.unsupported("backreferences (\\1, (?P=name)) are"))
            }
            _ => match self.char_escape(c)? {
                Some(ch) => self.emit_char(ch),
                None => return Err(self.error(format!("bad escape \\{c}"))),
            },
        }
        Ok(())
    }

    /// Whether a `\` and digit `c` start a three-digit octal escape.
    fn octal_follows(&self, c: char) -> bool {
        let octal = |c: Option<&char>| c.is_some_and(|c| ('0'..='7').contains(c));
        octal(Some(&c)) && octal(self.chars.get(self.at)) && octal(self.chars.get(self.at + 1))
    }

    /// The character an escape `\c` stands for (both inside and outside classes): Python's
    /// one-letter escapes, octal, `\x`, `\u`, `\U`, or a non-alphanumeric character
    /// itself; `None` for an escape Python refuses.
    fn char_escape(&mut self, c: char) -> FrameResult<Option<char>> {
        let hex = |t: &mut Self, n: usize| -> FrameResult<char> {
            let digits: String = t.chars.iter().skip(t.at).take(n).collect();
            let value = match digits.len() == n && digits.chars().all(|c| c.is_ascii_hexdigit()) {
                true => u32::from_str_radix(&digits, 16)
                    .ok()
                    .and_then(char::from_u32),
                false => None,
            };
            t.at += digits.len();
            value.ok_or_else(|| t.error(format!("bad escape \\{c}{digits}")))
        };
        Ok(Some(match c {
            'x' => hex(self, 2)?,
            'u' => hex(self, 4)?,
            'U' => hex(self, 8)?,
            'N' => return Err(self.unsupported("named Unicode escapes (\\N{...}) are")),
            '0'..='7' => {
                let mut digits = c.to_string();
                while digits.len() < 3 && self.peek().is_some_and(|d| ('0'..='7').contains(&d)) {
                    digits.extend(self.next());
                }
                let bad = |m: String| self.error(m);
                octal_char(&digits, &bad)?
            }
            c if c.is_ascii_alphanumeric() => return Ok(simple_escape(c)),
            c => c,
        }))
    }

    /// A class, after its `[` (Python's reading: see the module docs).
    fn class(&mut self) -> FrameResult<()> {
        let negate = self.eat('^');
        let mut items: Vec<(ClassItem, Option<char>)> = Vec::new();
        loop {
            let Some(c) = self.next() else {
                return Err(self.error("unterminated character set"));
            };
            if c == ']' && !items.is_empty() {
                break;
            }
            let first = self.class_item(c)?;
            if self.peek() != Some('-') || self.chars.get(self.at + 1).is_none() {
                items.push((first, None));
                continue;
            }
            self.at += 1;
            if self.peek() == Some(']') {
                items.push((first, None));
                items.push((ClassItem::Char('-'), None));
                continue;
            }
            let Some(c) = self.next() else {
                return Err(self.error("unterminated character set"));
            };
            match (first, self.class_item(c)?) {
                (ClassItem::Char(lo), ClassItem::Char(hi)) if lo <= hi => {
                    items.push((ClassItem::Char(lo), Some(hi)))
                }
                _ => return Err(self.error("bad character range")),
            }
        }
        let mut s = String::from(if negate { "[^" } else { "[" });
        for (item, hi) in items {
            match item {
                ClassItem::Char(c) => literal(c, &mut s),
                ClassItem::Set(set) => s.push_str(set),
            }
            if let Some(hi) = hi {
                s.push('-');
                literal(hi, &mut s);
            }
        }
        s.push(']');
        self.emit(&s);
        Ok(())
    }

    /// A class item starting with `c`.
    fn class_item(&mut self, c: char) -> FrameResult<ClassItem> {
        if c != '\\' {
            return Ok(ClassItem::Char(c));
        }
        let Some(e) = self.next() else {
            return Err(self.error("unterminated character set"));
        };
        Ok(match e {
            'd' => ClassItem::Set(r"\d"),
            'D' => ClassItem::Set(r"\D"),
            'w' => ClassItem::Set(r"\p{L}\p{N}_"),
            'W' => ClassItem::Set(r"[^\p{L}\p{N}_]"),
            's' => ClassItem::Set(r"\s\x1C-\x1F"),
            'S' => ClassItem::Set(r"[^\s\x1C-\x1F]"),
            'b' => ClassItem::Char('\x08'),
            _ => match self.char_escape(e)? {
                Some(ch) => ClassItem::Char(ch),
                None => return Err(self.error(format!("bad escape \\{e}"))),
            },
        })
    }

    /// A group, after its `(`.
    fn group(&mut self) -> FrameResult<()> {
        let mut scope = self.scope();
        if !self.eat('?') {
            self.scopes.push(scope);
            self.emit("(");
            return Ok(());
        }
        let Some(c) = self.next() else {
            return Err(self.error("unexpected end of pattern"));
        };
        match c {
            ':' => self.emit("(?:"),
            'P' if self.eat('<') => {
                let name: String = self.chars[self.at..]
                    .iter()
                    .take_while(|&&c| c != '>')
                    .collect();
                self.at += name.chars().count() + 1;
                let ident = name
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_alphabetic() || c == '_')
                    && name.chars().all(|c| c.is_alphanumeric() || c == '_');
                if !ident || self.chars.get(self.at - 1) != Some(&'>') {
                    return Err(self.error(format!("bad character in group name {name:?}")));
                }
                self.emit(&format!("(?P<{name}>"));
            }
            'P' if self.peek() == Some('=') => {
                return Err(self.unsupported("backreferences (\\1, (?P=name)) are"))
            }
            '=' | '!' => return Err(self.unsupported("look-ahead ((?=...), (?!...)) is")),
            '<' if matches!(self.peek(), Some('=' | '!')) => {
                return Err(self.unsupported("look-behind ((?<=...), (?<!...)) is"))
            }
            '>' => return Err(self.unsupported("atomic groups ((?>...)) are")),
            '(' => return Err(self.unsupported("conditional groups ((?(1)yes|no)) are")),
            '#' => {
                while self.next().is_some_and(|c| c != ')') {}
                if self.chars.get(self.at - 1) != Some(&')') {
                    return Err(self.error("missing ), unterminated comment"));
                }
                return Ok(());
            }
            c if c.is_ascii_alphabetic() || c == '-' => {
                self.at -= 1;
                let mut crate_on = String::new();
                let mut crate_off = String::new();
                let mut on = true;
                loop {
                    match self.next() {
                        Some(':') => break,
                        Some(')') => {
                            return Err(
                                self.error("global flags not at the start of the expression")
                            )
                        }
                        Some('-') if on => on = false,
                        Some(f) if f.is_ascii_alphabetic() => {
                            let mut flags = (false, false);
                            self.flag(f, on, &mut scope, &mut flags)?;
                            if matches!(f, 'i' | 's') {
                                (if on { &mut crate_on } else { &mut crate_off }).push(f);
                            }
                        }
                        _ => return Err(self.error("bad inline flags")),
                    }
                }
                let off = match crate_off.is_empty() {
                    true => String::new(),
                    false => format!("-{crate_off}"),
                };
                self.emit(&format!("(?{crate_on}{off}:"));
            }
            c => return Err(self.error(format!("unknown extension ?{c}"))),
        }
        self.scopes.push(scope);
        Ok(())
    }
}
