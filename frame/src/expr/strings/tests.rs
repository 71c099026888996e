//! Unit tests of the `str` functions, against matches worked out by hand (and with
//! Python's `re`).

use super::super::{col, Expr};
use super::like::{plan, Plan};
use super::*;
use arrow::array::{DictionaryArray, LargeStringArray, RecordBatch, StringViewArray};
use arrow::datatypes::Int32Type;

/// A batch whose column `s` holds `values`.
fn batch(values: &[Option<&str>]) -> RecordBatch {
    let s: ArrayRef = Arc::new(StringArray::from(values.to_vec()));
    RecordBatch::try_from_iter([("s", s)]).unwrap()
}

/// `f` of `values`, checking that typing predicts the result's type.
fn run(f: StrFunction, values: &[Option<&str>]) -> FrameResult<ArrayRef> {
    let (e, b) = (col("s").str(f), batch(values));
    let t = e.data_type(b.schema_ref())?;
    let out = e.evaluate(&b)?;
    assert_eq!(out.data_type(), &t);
    Ok(out)
}

fn bools(f: StrFunction, values: &[Option<&str>]) -> Vec<Option<bool>> {
    run(f, values).unwrap().as_boolean().iter().collect()
}

fn texts(f: StrFunction, values: &[Option<&str>]) -> Vec<Option<String>> {
    let out = run(f, values).unwrap();
    out.as_string::<i32>()
        .iter()
        .map(|v| v.map(str::to_string))
        .collect()
}

fn some(values: &[&str]) -> Vec<Option<&'static str>> {
    values
        .iter()
        .map(|v| Some(&*String::leak(v.to_string())))
        .collect()
}

fn opt(values: &[Option<&str>]) -> Vec<Option<String>> {
    values.iter().map(|v| v.map(str::to_string)).collect()
}

/// The pattern error of `f` (at typing), whose message holds each of `words`.
fn refused(f: StrFunction, words: &[&str]) {
    let b = batch(&[Some("a")]);
    let e = col("s").str(f);
    let err = e.data_type(b.schema_ref()).unwrap_err();
    let FrameError::Pattern { message, .. } = &err else {
        panic!("{e}: expected a pattern error, got {err:?}");
    };
    for w in words {
        assert!(message.contains(w), "{message:?} lacks {w:?}");
    }
}

fn contains_re(p: &str) -> StrFunction {
    StrFunction::Contains(Pattern::regex(p))
}

#[test]
fn contains_runs_regular_expressions_and_keeps_nulls() {
    let values = [Some("grey"), Some("gray"), Some("groy"), None, Some("Grey")];
    let got = bools(contains_re("gr[ae]y"), &values);
    assert_eq!(
        got,
        [Some(true), Some(true), Some(false), None, Some(false)]
    );
    let any_case = StrFunction::Contains(Pattern::regex("gr[ae]y").ignore_case(true));
    assert_eq!(bools(any_case, &values)[4], Some(true));
    assert_eq!(
        bools(contains_re("(?i)GR.Y"), &values),
        [Some(true), Some(true), Some(true), None, Some(true)]
    );
    // Plain text and regexes without syntax take the substring kernel: `.` is text there.
    let plain = StrFunction::Contains(Pattern::plain("a.c"));
    assert_eq!(
        bools(plain, &some(&["a.c", "abc"])),
        [Some(true), Some(false)]
    );
    assert_eq!(
        bools(contains_re(""), &[Some(""), None]),
        [Some(true), None]
    );
}

#[test]
fn plain_text_without_case_compares_upper_case_as_pandas() {
    let p = StrFunction::Contains(Pattern::plain("STRASSE").ignore_case(true));
    // "straße".upper() == "STRASSE" in Python.
    assert_eq!(
        bools(p, &some(&["straße", "strasse", "strase"])),
        [Some(true), Some(true), Some(false)]
    );
}

#[test]
fn anchors_match_as_python() {
    let values = some(&["abc", "xabc", "abcd", "ab"]);
    let m = |p: &str| StrFunction::Match(Pattern::regex(p));
    let full = |p: &str| StrFunction::FullMatch(Pattern::regex(p));
    assert_eq!(
        bools(m("a.c"), &values),
        [Some(true), Some(false), Some(true), Some(false)]
    );
    assert_eq!(
        bools(full("a.c"), &values),
        [Some(true), Some(false), Some(false), Some(false)]
    );
    // Literal patterns: starts_with and equality.
    assert_eq!(
        bools(m("ab"), &values),
        [Some(true), Some(false), Some(true), Some(true)]
    );
    assert_eq!(
        bools(full("ab"), &values),
        [Some(false), Some(false), Some(false), Some(true)]
    );
    // `match` anchors every alternative.
    assert_eq!(
        bools(m("x|c"), &values),
        [Some(false), Some(true), Some(false), Some(false)]
    );
    assert_eq!(
        bools(contains_re("^b|d$"), &some(&["ab", "ba", "abcd"])),
        [Some(false), Some(true), Some(true)]
    );
}

#[test]
fn dollar_also_matches_before_a_final_line_break() {
    // re.search('c$', v) for each: True, True, True, False.
    let values = some(&["abc", "abc\n", "ab\nc", "abc\nx"]);
    assert_eq!(
        bools(contains_re("c$"), &values),
        [Some(true), Some(true), Some(true), Some(false)]
    );
    assert_eq!(
        bools(contains_re(r"c\Z"), &values),
        [Some(true), Some(false), Some(true), Some(false)]
    );
    let multi = StrFunction::Contains(Pattern::regex("c$").multiline(true));
    assert_eq!(bools(multi, &values), [Some(true); 4]);
    // re.fullmatch('a$', 'a\n') is None; re.fullmatch('a$\n', 'a\n') matches.
    let full = |p: &str| StrFunction::FullMatch(Pattern::regex(p));
    assert_eq!(
        bools(full("a$"), &some(&["a\n", "a"])),
        [Some(false), Some(true)]
    );
    assert_eq!(bools(full("a$\n"), &some(&["a\n"])), [Some(true)]);
    // A value with a line break before its last one: an error, not a guess.
    let err = run(contains_re("c$"), &some(&["a\nbc\n"])).unwrap_err();
    assert!(matches!(&err, FrameError::Pattern { message, .. } if message.contains("\\Z")));
    assert!(run(contains_re(r"c\Z"), &some(&["a\nbc\n"])).is_ok());
}

#[test]
fn unicode_classes_are_pythons() {
    // re.search(r'^\w+$', v): 'é' is a letter, a combining mark is not a word character.
    let values = some(&["héllo", "naïve", "a b", "e\u{301}", "x²"]);
    assert_eq!(
        bools(contains_re(r"^\w+$"), &values),
        [Some(true), Some(true), Some(false), Some(false), Some(true)]
    );
    // `.` is one character, not one byte.
    assert_eq!(
        bools(StrFunction::FullMatch(Pattern::regex("h.llo")), &values)[0],
        Some(true)
    );
    // Python's \s holds the separators \x1c-\x1f.
    assert_eq!(
        bools(contains_re(r"a\sb"), &some(&["a\x1cb", "a b", "ab"])),
        [Some(true), Some(true), Some(false)]
    );
    let school = StrFunction::Contains(Pattern::regex("ÉCOLE").ignore_case(true));
    assert_eq!(bools(school, &some(&["une école"])), [Some(true)]);
}

#[test]
fn python_syntax_is_translated() {
    let t = |p: &str, v: &str| bools(contains_re(p), &[Some(v)])[0].unwrap();
    // Inside a class `[`, `&&` and a leading `]` are text; `\b` is a backspace.
    assert!(t("[[]", "["));
    assert!(t("[a&&b]", "&"));
    assert!(!t("[a&&b]", "c"));
    assert!(t("[]a]", "]"));
    assert!(t(r"[\b]", "\x08"));
    assert!(t(r"[\d-]", "-"));
    // A `{` that is no repetition is text; `{,2}` is `{0,2}`.
    assert!(t("a{", "a{"));
    assert!(t("x{,2}y", "xxy"));
    assert!(!t("^x{,2}y", "xxxy"));
    assert!(t("a{}", "a{}"));
    // Escapes: octal, hex, \u, and punctuation as text.
    assert!(t(r"\101\x42\u0043", "ABC"));
    assert!(t(r"\0", "\0"));
    assert!(t(r"\<\%", "<%"));
    // Comments, verbose mode and scoped flags.
    assert!(t("a(?#note)b", "ab"));
    assert!(t("(?x) a b # comment\n c", "abc"));
    assert!(t("(?i:A)b", "ab"));
    assert!(!t("(?i:A)B", "ab"));
    assert!(t("(?s:a.b)", "a\nb"));
    assert!(!t("a.b", "a\nb"));
    let dot_all = StrFunction::Contains(Pattern::regex("a.b").dot_all(true));
    assert_eq!(bools(dot_all, &[Some("a\nb")]), [Some(true)]);
    assert!(t("(?m)^b", "a\nb"));
    assert!(!t("^b", "a\nb"));
    assert!(t("(?P<x>a)+", "aa"));
}

#[test]
fn features_the_engine_lacks_are_refused_by_name() {
    refused(contains_re("a(?=b)"), &["look-ahead"]);
    refused(contains_re("a(?!b)"), &["look-ahead"]);
    refused(contains_re("(?<=a)b"), &["look-behind"]);
    refused(contains_re("(?<!a)b"), &["look-behind"]);
    refused(contains_re(r"(a)\1"), &["backreferences"]);
    refused(contains_re("(?P<n>a)(?P=n)"), &["backreferences"]);
    refused(contains_re("(?>a)"), &["atomic groups"]);
    refused(contains_re("a*+"), &["possessive"]);
    refused(contains_re("a{1,2}+"), &["possessive"]);
    refused(contains_re("(a)?(?(1)b|c)"), &["conditional"]);
    refused(contains_re(r"\N{DIGIT ONE}"), &["named Unicode"]);
    refused(contains_re("(?a)x"), &["ASCII"]);
    // Malformed patterns, as Python's re refuses them.
    refused(contains_re(r"\p{L}"), &["bad escape"]);
    refused(contains_re("(a"), &["missing )"]);
    refused(contains_re("a)"), &["unbalanced"]);
    refused(contains_re("[a"), &["unterminated"]);
    refused(contains_re("[z-a]"), &["bad character range"]);
    refused(contains_re("a(?i)b"), &["global flags"]);
    refused(contains_re("*a"), &["repetition"]);
    refused(StrFunction::Match(Pattern::regex("(?=a)")), &["look-ahead"]);
    // Refused at evaluation too (each chunk compiles its pattern).
    assert!(matches!(
        run(contains_re("(?=a)"), &[Some("a")]),
        Err(FrameError::Pattern { .. })
    ));
}

#[test]
fn extract_takes_one_group_of_the_first_match() {
    let p = Pattern::regex(r"(\d+)-(?P<b>\d+)?x");
    assert_eq!(p.group_names().unwrap(), [None, Some("b".to_string())]);
    let values = [Some("a1-2x 3-4x"), Some("7-x"), Some("none"), None];
    let group = |g| StrFunction::Extract {
        pattern: p.clone(),
        group: g,
    };
    assert_eq!(
        texts(group(1), &values),
        opt(&[Some("1"), Some("7"), None, None])
    );
    // A group that takes no part in the match is null.
    assert_eq!(
        texts(group(2), &values),
        opt(&[Some("2"), None, None, None])
    );
    refused(group(3), &["no capture group 3"]);
    refused(
        StrFunction::Extract {
            pattern: Pattern::regex("abc"),
            group: 1,
        },
        &["no capture groups"],
    );
}

fn replace(p: &str, repl: &str) -> StrFunction {
    StrFunction::ReplaceRegex {
        pattern: Pattern::regex(p),
        repl: repl.to_string(),
    }
}

#[test]
fn replace_reads_pythons_group_references() {
    let values = [Some("joe@site, ann@web"), None, Some("nobody")];
    assert_eq!(
        texts(replace(r"(\w+)@(?P<host>\w+)", r"\2 at \1"), &values),
        opt(&[Some("site at joe, web at ann"), None, Some("nobody")])
    );
    assert_eq!(
        texts(
            replace(r"(\w+)@(?P<host>\w+)", r"<\g<host>|\g<0>|\g<1>>"),
            &values
        )[0],
        Some("<site|joe@site|joe>, <web|ann@web|ann>".to_string())
    );
    // `$` is text in Python's templates; `\\` a backslash, `\n` a line break, and an
    // unknown escape of punctuation keeps its backslash.
    assert_eq!(
        texts(replace("o", r"$1\\\n\&"), &[Some("o")]),
        opt(&[Some("$1\\\n\\&")])
    );
    // A group that takes no part is empty: re.sub(r'(a)|b', r'[\1]', 'ab') == '[a][]'.
    assert_eq!(
        texts(replace("(a)|b", r"[\1]"), &[Some("ab")]),
        opt(&[Some("[a][]")])
    );
    // Two digits are one group; three octal digits a character.
    assert_eq!(
        texts(
            replace("(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)", r"\11\101"),
            &[Some("abcdefghijk")]
        ),
        opt(&[Some("kA")])
    );
    refused(replace("(a)", r"\2"), &["invalid group reference 2"]);
    refused(replace("(a)", r"\g<nope>"), &["unknown group name"]);
    refused(replace("(a)", r"\q"), &["bad escape"]);
    refused(replace("(a)", "\\"), &["end of replacement"]);
}

#[test]
fn replace_treats_empty_matches_as_python() {
    // re.sub('x*', '-', 'abxd') == '-a-b--d-'; re.sub('', '-', 'abc') == '-a-b-c-'.
    assert_eq!(
        texts(replace("x*", "-"), &[Some("abxd"), Some("")]),
        opt(&[Some("-a-b--d-"), Some("-")])
    );
    assert_eq!(
        texts(replace("", "-"), &[Some("aé")]),
        opt(&[Some("-a-é-")])
    );
    assert_eq!(
        texts(replace("b*", "-"), &[Some("abc")]),
        opt(&[Some("-a--c-")])
    );
    // Without case: re.sub('(?i)A', 'x', 'aA') == 'xx'.
    let any_case = StrFunction::ReplaceRegex {
        pattern: Pattern::plain("A.").ignore_case(true),
        repl: "x".into(),
    };
    assert_eq!(texts(any_case, &[Some("a.A.ab")]), opt(&[Some("xxab")]));
}

fn like(p: &str) -> StrFunction {
    StrFunction::Like {
        pattern: p.to_string(),
        escape: None,
    }
}

fn like_esc(p: &str, e: char) -> StrFunction {
    StrFunction::Like {
        pattern: p.to_string(),
        escape: Some(e),
    }
}

#[test]
fn like_plans_take_the_fast_kernels() {
    let kind = |p: &str| match plan(p, None).unwrap() {
        Plan::Equals(_) => "equals",
        Plan::StartsWith(_) => "starts_with",
        Plan::EndsWith(_) => "ends_with",
        Plan::Contains(_) => "contains",
        Plan::Pieces(_) => "pieces",
        Plan::Regex(_) => "regex",
    };
    assert_eq!(kind("PROMO%"), "starts_with");
    assert_eq!(kind("%BRASS"), "ends_with");
    assert_eq!(kind("%green%"), "contains");
    assert_eq!(kind("%%green%%%"), "contains");
    assert_eq!(kind("%Customer%Complaints%"), "pieces");
    assert_eq!(kind("a%b"), "pieces");
    assert_eq!(kind("abc"), "equals");
    assert_eq!(kind("a_c"), "regex");
    // `%text%` is the substring expression, which the device runs too.
    assert_eq!(col("s").like("%green%"), col("s").str_contains("green"));
    assert!(matches!(col("s").like("a%"), Expr::Function { .. }));
}

#[test]
fn like_matches_by_hand() {
    let values = [
        Some("Customer has Complaints"),
        Some("Complaints by Customer"),
        Some("CustomerComplaints"),
        None,
        Some("customer complaints"),
    ];
    assert_eq!(
        bools(like("%Customer%Complaints%"), &values),
        [Some(true), Some(false), Some(true), None, Some(false)]
    );
    let v = some(&["PROMO BRASS", "STANDARD BRASS", "PROMO TIN", "BRASS"]);
    assert_eq!(
        bools(like("PROMO%"), &v),
        [Some(true), Some(false), Some(true), Some(false)]
    );
    assert_eq!(
        bools(like("%BRASS"), &v),
        [Some(true), Some(true), Some(false), Some(true)]
    );
    assert_eq!(
        bools(like("BRASS"), &v),
        [Some(false), Some(false), Some(false), Some(true)]
    );
    // The prefix and suffix may not overlap; the middles come in order.
    let a = some(&["a", "aa", "aba", "abba"]);
    assert_eq!(
        bools(like("a%a"), &a),
        [Some(false), Some(true), Some(true), Some(true)]
    );
    assert_eq!(
        bools(like("%ab%ba%"), &a),
        [Some(false), Some(false), Some(false), Some(true)]
    );
    // `_` is one character (not byte), line breaks included; `%` any run, empty too.
    let u = some(&["abc", "ac", "abbc", "a\nc", "aéc"]);
    assert_eq!(
        bools(like("a_c"), &u),
        [Some(true), Some(false), Some(false), Some(true), Some(true)]
    );
    assert_eq!(bools(like("a%c"), &u), [Some(true); 5]);
    assert_eq!(bools(like("%"), &[Some(""), None]), [Some(true), None]);
    assert_eq!(
        bools(like(""), &[Some(""), Some("a")]),
        [Some(true), Some(false)]
    );
}

#[test]
fn like_escapes_and_not_like() {
    let v = some(&["100%", "1000", "a_b", "axb", "!"]);
    assert_eq!(
        bools(like_esc("100!%", '!'), &v),
        [
            Some(true),
            Some(false),
            Some(false),
            Some(false),
            Some(false)
        ]
    );
    assert_eq!(
        bools(like_esc("a!_b", '!'), &v),
        [
            Some(false),
            Some(false),
            Some(true),
            Some(false),
            Some(false)
        ]
    );
    assert_eq!(bools(like_esc("!!", '!'), &v)[4], Some(true));
    assert_eq!(
        bools(like_esc("%!%%", '!'), &v),
        [
            Some(true),
            Some(false),
            Some(false),
            Some(false),
            Some(false)
        ]
    );
    // Without an escape, `\` is text.
    assert_eq!(bools(like(r"a\%"), &[Some(r"a\x")]), [Some(true)]);
    refused(like_esc("a!b", '!'), &["must come before"]);
    refused(like_esc("a!", '!'), &["the end"]);
    refused(like_esc("a", '%'), &["wildcard"]);
    // NOT LIKE: null stays null.
    let b = batch(&[Some("PROMO X"), Some("Y"), None]);
    let not_like = col("s").like("PROMO%").not().evaluate(&b).unwrap();
    let got: Vec<_> = not_like.as_boolean().iter().collect();
    assert_eq!(got, [Some(false), Some(true), None]);
}

#[test]
fn slices_take_python_bounds_on_characters() {
    let values = [Some("héllo"), Some("ab"), None, Some("")];
    let slice = |start, stop| StrFunction::Slice { start, stop };
    assert_eq!(
        texts(slice(1, Some(3)), &values),
        opt(&[Some("él"), Some("b"), None, Some("")])
    );
    assert_eq!(
        texts(slice(-2, None), &values),
        opt(&[Some("lo"), Some("ab"), None, Some("")])
    );
    assert_eq!(
        texts(slice(0, Some(-1)), &values),
        opt(&[Some("héll"), Some("a"), None, Some("")])
    );
    assert_eq!(
        texts(slice(-9, Some(9)), &values),
        opt(&[Some("héllo"), Some("ab"), None, Some("")])
    );
    assert_eq!(
        texts(slice(3, Some(1)), &values),
        opt(&[Some(""), Some(""), None, Some("")])
    );
    assert_eq!(
        texts(slice(i64::MIN, Some(i64::MAX)), &values)[0],
        Some("héllo".to_string())
    );
}

#[test]
fn every_string_encoding_gives_the_same_answer() {
    let values = vec![
        Some("PROMO BRASS"),
        None,
        Some("ab1-2"),
        Some("PROMO BRASS"),
    ];
    let utf8: ArrayRef = Arc::new(StringArray::from(values.clone()));
    let large: ArrayRef = Arc::new(LargeStringArray::from(values.clone()));
    let view: ArrayRef = Arc::new(StringViewArray::from(values.clone()));
    let dict: ArrayRef = Arc::new(
        values
            .iter()
            .copied()
            .collect::<DictionaryArray<Int32Type>>(),
    );
    let functions = [
        like("PROMO%"),
        like("%O%S"),
        like("P_OMO%"),
        contains_re(r"\d-\d"),
        StrFunction::FullMatch(Pattern::regex("PROMO BRASS")),
        StrFunction::Extract {
            pattern: Pattern::regex(r"(\d)"),
            group: 1,
        },
        replace("O", "0"),
        StrFunction::Slice {
            start: 1,
            stop: Some(3),
        },
        StrFunction::StartsWith("PRO".into()),
        StrFunction::Len,
    ];
    for f in functions {
        let e = col("s").str(f);
        let results: Vec<ArrayRef> = [&utf8, &large, &view, &dict]
            .iter()
            .map(|a| {
                let b = RecordBatch::try_from_iter([("s", (*a).clone())]).unwrap();
                e.evaluate(&b).unwrap()
            })
            .collect();
        for r in &results[1..] {
            assert_eq!(r.as_ref(), results[0].as_ref(), "{e}");
        }
    }
}

#[test]
fn patterns_survive_serde() {
    let e = col("s").str(StrFunction::Contains(
        Pattern::regex("a.b").ignore_case(true).multiline(true),
    ));
    let json = serde_json::to_string(&e).unwrap();
    assert_eq!(serde_json::from_str::<Expr>(&json).unwrap(), e);
}
