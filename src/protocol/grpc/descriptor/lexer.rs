//! Tokens of a `.proto` file, each with the line it starts on, so every
//! parse error can name `file:line`, and the leading comments of tokens.
//!
//! A leading comment is a run of `//` lines ending on the line just above a
//! token (a blank line in between detaches it, a comment after a token on
//! its own line is a trailing one), as protoc attaches documentation.
//! Strings take the escapes `\\`, `\"`, `\'`, `\n`, `\r`, `\t` and `\xHH`.

use std::collections::HashMap;
use std::fmt;

use super::ProtoError;

/// One token. Identifiers keep their dots (`google.api.http`), so a
/// qualified name is one token.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Ident(String),
    Int(i64),
    Str(String),
    Sym(char),
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Ident(s) => write!(f, "`{s}`"),
            Tok::Int(n) => write!(f, "`{n}`"),
            Tok::Str(s) => write!(f, "{s:?}"),
            Tok::Sym(c) => write!(f, "`{c}`"),
        }
    }
}

/// The tokens of a file and the leading comment of some of them (by token
/// index, `//` and one space stripped, lines joined with `\n`).
pub(super) type Tokens = (Vec<(Tok, usize)>, HashMap<usize, String>);

/// Splits `src` into tokens; white space is dropped, leading comments kept
/// aside.
pub(super) fn tokenize(file: &str, src: &str) -> Result<Tokens, ProtoError> {
    let err = |line: usize, message: String| ProtoError {
        file: file.to_owned(),
        line,
        message,
    };
    let chars: Vec<char> = src.chars().collect();
    let mut out: Vec<(Tok, usize)> = Vec::new();
    let mut comments = HashMap::new();
    // The comment lines seen since the last token, and the line of the last.
    let mut pending: Vec<String> = Vec::new();
    let mut pending_line = 0;
    let (mut i, mut line) = (0, 1);
    while i < chars.len() {
        let c = chars[i];
        if !(c.is_whitespace() || c == '/' && matches!(chars.get(i + 1), Some('/' | '*'))) {
            // A token starts here: the comment ending just above leads it.
            if !pending.is_empty() && pending_line + 1 == line {
                comments.insert(out.len(), pending.join("\n"));
            }
            pending.clear();
        }
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '/' if chars.get(i + 1) == Some(&'/') => {
                let start = i + 2;
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                let text: String = chars[start..i].iter().collect();
                let trailing = out.last().is_some_and(|t| t.1 == line);
                if !trailing {
                    if !pending.is_empty() && pending_line + 1 != line {
                        pending.clear();
                    }
                    let text = text.strip_prefix(' ').unwrap_or(&text);
                    pending.push(text.trim_end().to_owned());
                    pending_line = line;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                let start = line;
                i += 2;
                loop {
                    match chars.get(i) {
                        None => return Err(err(start, "unterminated /* comment".into())),
                        Some('*') if chars.get(i + 1) == Some(&'/') => {
                            i += 2;
                            break;
                        }
                        Some(ch) => {
                            if *ch == '\n' {
                                line += 1;
                            }
                            i += 1;
                        }
                    }
                }
            }
            '"' | '\'' => {
                let mut s = String::new();
                i += 1;
                loop {
                    match chars.get(i) {
                        None | Some('\n') => return Err(err(line, "unterminated string".into())),
                        Some(ch) if *ch == c => break,
                        Some('\\') => {
                            i += 1;
                            let escaped = match chars.get(i) {
                                Some('\\') => '\\',
                                Some('"') => '"',
                                Some('\'') => '\'',
                                Some('n') => '\n',
                                Some('r') => '\r',
                                Some('t') => '\t',
                                Some('x') => {
                                    let hex: String = chars.iter().skip(i + 1).take(2).collect();
                                    let code = u8::from_str_radix(&hex, 16)
                                        .ok()
                                        .filter(|_| hex.len() == 2)
                                        .ok_or_else(|| {
                                            err(line, format!("bad escape \\x{hex} (two hex digits)"))
                                        })?;
                                    i += 2;
                                    char::from(code)
                                }
                                other => {
                                    return Err(err(
                                        line,
                                        format!(
                                            "unsupported escape \\{} (supported: \\\\ \\\" \\' \\n \\r \\t \\xHH)",
                                            other.map_or(String::new(), |c| c.to_string())
                                        ),
                                    ))
                                }
                            };
                            s.push(escaped);
                        }
                        Some(ch) => s.push(*ch),
                    }
                    i += 1;
                }
                i += 1;
                out.push((Tok::Str(s), line));
            }
            c if c.is_ascii_digit()
                || (c == '-' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit())) =>
            {
                let start = i;
                i += 1;
                while i < chars.len() && chars[i].is_ascii_alphanumeric() {
                    i += 1;
                }
                let text: String = chars[start..i].iter().collect();
                let n = text
                    .parse()
                    .map_err(|_| err(line, format!("bad number `{text}` (decimal only)")))?;
                out.push((Tok::Int(n), line));
            }
            c if c.is_ascii_alphabetic() || c == '_' || c == '.' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == '.')
                {
                    i += 1;
                }
                out.push((Tok::Ident(chars[start..i].iter().collect()), line));
            }
            '{' | '}' | '(' | ')' | '[' | ']' | ';' | '=' | '<' | '>' | ',' | ':' => {
                out.push((Tok::Sym(c), line));
                i += 1;
            }
            other => return Err(err(line, format!("unexpected character {other:?}"))),
        }
    }
    Ok((out, comments))
}
