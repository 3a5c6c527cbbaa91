//! The `pattern` of a `buf.validate` string rule, compiled at start-up.
//!
//! A hand-written subset of RE2 (protovalidate's dialect) instead of a regex
//! engine as a dependency: the greeter's patterns are all one character
//! class repeated over the whole value, `^[A-Za-z0-9_.-]+$` or
//! `^[^\x00-\x1F\x7F-\x9F]*$`, and that subset means the same in RE2,
//! ECMAScript (where browsers and Swagger UI read the OpenAPI `pattern`)
//! and Python (schemathesis). Anything else is refused at start-up, naming
//! the file and line, so a pattern is never half understood.
//!
//! Grammar: `^` `[` `^`? item+ `]` (`*` | `+`) `$`, where an item is a
//! character or a range `a-z`; a character is literal or an escape `\xHH`,
//! `\uHHHH`, `\\`, `\]`, `\-`, `\^`, `\.`. A `-` first or last is literal.

use std::fmt;

/// A compiled pattern: one character class over the whole value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    source: String,
    negated: bool,
    ranges: Vec<(char, char)>,
    /// `+`: at least one character; `*`: any number.
    non_empty: bool,
}

/// Why a pattern is outside the supported subset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError(pub String);

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (supported: one character class over the whole value, ^[...]+$ or ^[^...]*$)",
            self.0
        )
    }
}

impl Pattern {
    /// Compiles `source`.
    pub fn new(source: &str) -> Result<Pattern, PatternError> {
        let err = |m: &str| PatternError(format!("pattern {source:?}: {m}"));
        let body = source
            .strip_prefix("^[")
            .ok_or_else(|| err("must start with ^["))?;
        let (class, non_empty) = if let Some(c) = body.strip_suffix("]+$") {
            (c, true)
        } else if let Some(c) = body.strip_suffix("]*$") {
            (c, false)
        } else {
            return Err(err("must end with ]+$ or ]*$"));
        };
        let (negated, class) = match class.strip_prefix('^') {
            Some(rest) => (true, rest),
            None => (false, class),
        };
        let mut chars = Vec::new();
        let mut it = class.chars().peekable();
        // Each element: (char, was_escaped) so an escaped `-` is literal.
        while let Some(c) = it.next() {
            if c == '\\' {
                let e = it.next().ok_or_else(|| err("ends inside an escape"))?;
                let ch = match e {
                    'x' => hex(&mut it, 2).ok_or_else(|| err("\\x needs two hex digits"))?,
                    'u' => hex(&mut it, 4).ok_or_else(|| err("\\u needs four hex digits"))?,
                    '\\' | ']' | '[' | '-' | '^' | '.' => e,
                    other => return Err(err(&format!("unsupported escape \\{other}"))),
                };
                chars.push((ch, true));
            } else if c == '[' || c == ']' {
                return Err(err("a class holds one [ ] pair (escape the bracket)"));
            } else {
                chars.push((c, false));
            }
        }
        if chars.is_empty() {
            return Err(err("empty character class"));
        }
        let mut ranges = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let (lo, _) = chars[i];
            let dash = chars.get(i + 1).is_some_and(|&(c, esc)| c == '-' && !esc);
            if dash && i + 2 < chars.len() {
                let hi = chars[i + 2].0;
                if hi < lo {
                    return Err(err(&format!("range {lo:?}-{hi:?} is reversed")));
                }
                ranges.push((lo, hi));
                i += 3;
            } else {
                ranges.push((lo, lo));
                i += 1;
            }
        }
        Ok(Pattern {
            source: source.to_owned(),
            negated,
            ranges,
            non_empty,
        })
    }

    /// The pattern as written (what OpenAPI publishes).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The first character of `value` outside the class, with its byte
    /// offset; `None` when every character is allowed.
    pub fn first_mismatch(&self, value: &str) -> Option<(usize, char)> {
        value.char_indices().find(|&(_, c)| {
            let inside = self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi);
            inside == self.negated
        })
    }

    /// Whether the whole of `value` matches.
    pub fn is_match(&self, value: &str) -> bool {
        !(self.non_empty && value.is_empty()) && self.first_mismatch(value).is_none()
    }
}

fn hex(it: &mut std::iter::Peekable<std::str::Chars<'_>>, n: usize) -> Option<char> {
    let digits: String = (0..n).filter_map(|_| it.next()).collect();
    if digits.len() != n {
        return None;
    }
    u32::from_str_radix(&digits, 16)
        .ok()
        .and_then(char::from_u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_greeters_patterns_match_as_re2_would() {
        let username = Pattern::new("^[A-Za-z0-9_.-]+$").unwrap();
        for ok in ["ann", "Ann_O.Neil-2", "-", "."] {
            assert!(username.is_match(ok), "{ok}");
        }
        for bad in ["", "zoë", "a b", "a\0b", "ADMİN"] {
            assert!(!username.is_match(bad), "{bad:?}");
        }
        assert_eq!(username.first_mismatch("ADMİN"), Some((3, 'İ')));
        let printable = Pattern::new(r"^[^\x00-\x1F\x7F-\x9F]*$").unwrap();
        for ok in ["", "zoë 山田", "pass word"] {
            assert!(printable.is_match(ok), "{ok}");
        }
        for bad in ["tab\there", "a\u{7f}", "a\u{85}b", "\0"] {
            assert!(!printable.is_match(bad), "{bad:?}");
        }
        let bidi = Pattern::new(r"^[^\u202A-\u202E]+$").unwrap();
        assert!(!bidi.is_match("a\u{202E}b"));
    }

    #[test]
    fn patterns_outside_the_subset_are_refused() {
        for bad in [
            "abc",
            "^[a-z]$",
            "^[a-z]+",
            "^[a-z]+$|^x$",
            "^[]+$",
            "^[z-a]+$",
            r"^[\d]+$",
            "^[a[b]+$",
            r"^[\x0]+$",
        ] {
            assert!(Pattern::new(bad).is_err(), "{bad}");
        }
    }
}
