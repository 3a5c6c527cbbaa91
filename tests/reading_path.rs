//! The reading path of one request stays short, and `docs/middleware.md`
//! says how long it is.
//!
//! The section "One request end to end" of `docs/middleware.md` lists, in
//! order, every function and type a `GET /book/42` to router-demo passes
//! through, from the contract's call into the framework to the response:
//! a table of file, item and code lines. This test counts each item again
//! in the source (code lines only: no blank lines, no comment lines, no
//! tests), fails when a row's count or the total is no longer true, and
//! holds the total to the committed [`CEILING`]: it may fall, and rises
//! only with a reason in the commit, never past [`LIMIT`].

use std::fs;
use std::path::Path;

/// The most code lines a student reads to follow one request, today. A
/// change that shortens the path lowers it.
const CEILING: usize = 597;

/// The most the path may ever be: one request, from the contract to the
/// response, readable in a sitting.
const LIMIT: usize = 600;
const _: () = assert!(CEILING <= LIMIT, "the ceiling is past the limit");

/// The section of `docs/middleware.md` that holds the table.
const SECTION: &str = "## 12. One request end to end";

/// One row of the table: file, item (`Type::method`, `function`,
/// `struct Name`, `enum Name`, `type Name`) and the lines it claims.
#[derive(Debug)]
struct Row {
    file: String,
    item: String,
    lines: usize,
}

/// The rows and the claimed total of the section's table.
fn table() -> (Vec<Row>, usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = fs::read_to_string(root.join("docs/middleware.md")).expect("read middleware.md");
    let at = doc
        .find(SECTION)
        .expect("the section is in docs/middleware.md");
    let section = &doc[at + SECTION.len()..];
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut rows = Vec::new();
    let mut total = None;
    for line in section.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let number = |cell: &str| cell.trim_matches('*').parse::<usize>().ok();
        if cells.iter().any(|c| c.contains("total")) {
            total = cells.last().and_then(|c| number(c));
            continue;
        }
        let quoted = |cell: &str| {
            cell.strip_prefix('`')?
                .strip_suffix('`')
                .map(str::to_string)
        };
        let (Some(file), Some(item), Some(lines)) = (
            cells.get(1).and_then(|c| quoted(c)),
            cells.get(2).and_then(|c| quoted(c)),
            cells.get(3).and_then(|c| number(c)),
        ) else {
            continue;
        };
        rows.push(Row { file, item, lines });
    }
    (rows, total.expect("a total row"))
}

/// `line` without string and character literals and without its `//`
/// comment, so that the braces left are code.
fn code_of(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '/' if chars.get(i + 1) == Some(&'/') => break,
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                out.push_str("\"\"");
            }
            // A character literal ('x', '\n'), not a lifetime ('a).
            '\'' if chars.get(i + 1) == Some(&'\\') => {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
            }
            '\'' if chars.get(i + 2) == Some(&'\'') => i += 2,
            c => out.push(c),
        }
        i += 1;
    }
    out
}

/// The line where `item` starts in `src`.
fn start_of(lines: &[&str], item: &str) -> Option<usize> {
    let strip = |l: &str| {
        let mut l = l.trim_start();
        for prefix in ["pub(crate) ", "pub(super) ", "pub ", "async ", "const "] {
            l = l.strip_prefix(prefix).unwrap_or(l);
        }
        l.to_string()
    };
    let is = |l: &str, head: &str| {
        strip(l)
            .strip_prefix(head)
            .is_some_and(|rest| rest.starts_with(|c: char| !(c.is_alphanumeric() || c == '_')))
    };
    for kind in ["struct ", "enum ", "type "] {
        if let Some(name) = item.strip_prefix(kind) {
            let head = format!("{kind}{name}");
            return lines
                .iter()
                .position(|l| !l.starts_with(' ') && is(l, &head));
        }
    }
    let Some((ty, name)) = item.split_once("::") else {
        let head = format!("fn {item}");
        return lines
            .iter()
            .position(|l| !l.starts_with(' ') && is(l, &head));
    };
    // `impl Ty`, `impl<T> Ty<T>`, `impl Trait for Ty`.
    let names_ty = |l: &str| {
        let Some(rest) = l.strip_prefix("impl") else {
            return false;
        };
        let rest = rest.split('{').next().unwrap_or("");
        let target = rest.rsplit(" for ").next().unwrap_or(rest).trim();
        let target = match target.strip_prefix('<') {
            Some(generic) => generic.split_once('>').map_or("", |(_, t)| t.trim()),
            None => target,
        };
        target.split(['<', ' ']).next() == Some(ty)
    };
    let from = lines.iter().position(|l| names_ty(l))?;
    let head = format!("fn {name}");
    (from..lines.len()).find(|&i| lines[i].starts_with("    ") && is(lines[i], &head))
}

/// The code lines of `item` in `src`: from its first line to its closing
/// brace (or semicolon), blank and comment lines left out.
fn code_lines(src: &str, item: &str) -> Result<usize, String> {
    let src = src.split("#[cfg(test)]").next().unwrap_or(src);
    let lines: Vec<&str> = src.lines().collect();
    let start = start_of(&lines, item).ok_or_else(|| format!("{item} not found"))?;
    let mut depth = 0i32;
    let mut opened = false;
    for (i, line) in lines.iter().enumerate().skip(start) {
        let code = code_of(line);
        for c in code.chars() {
            match c {
                '{' => (depth, opened) = (depth + 1, true),
                '}' => depth -= 1,
                _ => {}
            }
        }
        let ended = (opened && depth == 0) || (!opened && code.trim_end().ends_with(';'));
        if ended {
            let counted = lines[start..=i]
                .iter()
                .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
                .count();
            return Ok(counted);
        }
    }
    Err(format!("{item} has no end"))
}

#[test]
fn following_get_book_42_from_the_contract_to_the_response_reads_no_more_than_the_ceiling() {
    let (rows, total) = table();
    assert!(rows.len() >= 40, "only {} rows in the table", rows.len());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut wrong = Vec::new();
    let mut sum = 0;
    for row in &rows {
        let src = fs::read_to_string(root.join(&row.file)).expect("read a listed file");
        match code_lines(&src, &row.item) {
            Ok(n) if n == row.lines => {}
            Ok(n) => wrong.push(format!(
                "{} {}: {n} lines, the table says {}",
                row.file, row.item, row.lines
            )),
            Err(e) => wrong.push(format!("{}: {e}", row.file)),
        }
        sum += row.lines;
    }
    assert!(
        wrong.is_empty(),
        "docs/middleware.md is out of date:\n{}",
        wrong.join("\n")
    );
    assert_eq!(
        sum, total,
        "the rows add up to {sum}, the total row says {total}"
    );
    assert!(
        total <= CEILING,
        "{total} lines to read, more than {CEILING}"
    );
}

#[test]
fn the_counter_counts_code_lines_of_functions_methods_and_types() {
    let src = r#"
/// A doc.
pub struct Point {
    x: u32, // a comment with a brace {
    y: u32,
}

pub type Pair = (u32, u32);

impl Point {
    pub fn sum(&self) -> u32 {
        // not counted
        let s = "a } in a string";

        self.x + self.y + s.len() as u32 + u32::from('{' as u8)
    }
}

fn free<'a>(text: &'a str) -> &'a str {
    text
}
"#;
    assert_eq!(code_lines(src, "struct Point"), Ok(4));
    assert_eq!(code_lines(src, "type Pair"), Ok(1));
    assert_eq!(code_lines(src, "Point::sum"), Ok(4));
    assert_eq!(code_lines(src, "free"), Ok(3));
    assert!(code_lines(src, "Point::missing").is_err());
}
