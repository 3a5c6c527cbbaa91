//! Tokens of a `.proto` file, each with the line it starts on, so every
//! parse error can name `file:line`.

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

/// Splits `src` into tokens; comments and white space are dropped.
pub(super) fn tokenize(file: &str, src: &str) -> Result<Vec<(Tok, usize)>, ProtoError> {
    let err = |line: usize, message: String| ProtoError {
        file: file.to_owned(),
        line,
        message,
    };
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
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
                            return Err(err(line, "escapes in strings are not supported".into()))
                        }
                        Some(ch) => s.push(*ch),
                    }
                    i += 1;
                }
                i += 1;
                out.push((Tok::Str(s), line));
            }
            c if c.is_ascii_digit() => {
                let start = i;
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
    Ok(out)
}
