//! A small RFC 4180 CSV reader (quoted fields, doubled quotes, CRLF), with
//! line numbers for error messages. Pure: reads a `&str`. It also takes what
//! spreadsheets write: a UTF-8 byte-order mark (Excel's "CSV UTF-8") and, in
//! locales whose decimal separator is a comma, `;` between fields; and a tab
//! between fields (a sheet copied out, or saved as "tab-separated values").

/// One record with the line it starts on (1-based).
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub line: u64,
    pub fields: Vec<String>,
}

/// Splits CSV text into records. An unterminated quote is an error naming its line.
/// Fields are separated by `,`; by a tab when the first line has a tab and no
/// `,` (TSV); or by `;` when it has a `;` and neither (a spreadsheet's export
/// in a decimal-comma locale).
pub fn parse(text: &str) -> Result<Vec<Record>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first = text.lines().next().unwrap_or("");
    let delimiter = if first.contains(',') {
        ','
    } else if first.contains('\t') {
        '\t'
    } else if first.contains(';') {
        ';'
    } else {
        ','
    };
    let mut out = Vec::new();
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut in_quotes = false;
    let mut line: u64 = 1;
    let mut start_line: u64 = 1;
    let mut chars = text.chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        any = true;
        if in_quotes {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => in_quotes = false,
                '\n' => {
                    line += 1;
                    field.push(c);
                }
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' => in_quotes = true,
            c if c == delimiter => fields.push(std::mem::take(&mut field)),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                fields.push(std::mem::take(&mut field));
                if !(fields.len() == 1 && fields[0].is_empty()) {
                    out.push(Record {
                        line: start_line,
                        fields: std::mem::take(&mut fields),
                    });
                }
                fields.clear();
                line += 1;
                start_line = line;
                any = false;
            }
            _ => field.push(c),
        }
    }
    if in_quotes {
        return Err(format!("line {start_line}: unterminated quoted field"));
    }
    if any {
        fields.push(field);
        if !(fields.len() == 1 && fields[0].is_empty()) {
            out.push(Record {
                line: start_line,
                fields,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_commas_and_crlf() {
        let r = parse("a,b\r\n\"x, y\",\"he said \"\"hi\"\"\"\n\n3,4").unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(r[1].fields, vec!["x, y", "he said \"hi\""]);
        assert_eq!(r[2].line, 4);
    }

    #[test]
    fn a_byte_order_mark_and_semicolons_from_spreadsheets() {
        let r = parse("\u{feff}id,metric\nx,max_reserved\n").unwrap();
        assert_eq!(r[0].fields, vec!["id", "metric"]);
        // `;` between fields when the header has no comma; quoted `;` stays.
        let r = parse("id;notes\nx;\"a; b\"\n").unwrap();
        assert_eq!(r[1].fields, vec!["x", "a; b"]);
        // A comma-separated file keeps `;` inside its fields.
        let r = parse("id,notes\nx,a; b\n").unwrap();
        assert_eq!(r[1].fields, vec!["x", "a; b"]);
    }

    #[test]
    fn tab_separated_values() {
        // A tab between fields when the header has no comma; commas and `;`
        // inside fields stay, and a quoted tab too.
        let r = parse("id\tnotes\nx\ta, b; c\ny\t\"tab\there\"\n").unwrap();
        assert_eq!(r[0].fields, vec!["id", "notes"]);
        assert_eq!(r[1].fields, vec!["x", "a, b; c"]);
        assert_eq!(r[2].fields, vec!["y", "tab\there"]);
        // A comma-separated file keeps its tabs inside fields.
        let r = parse("id,notes\nx,a\tb\n").unwrap();
        assert_eq!(r[1].fields, vec!["x", "a\tb"]);
    }

    #[test]
    fn unterminated_quote_names_the_line() {
        assert_eq!(
            parse("a\n\"oops,b\n").unwrap_err(),
            "line 2: unterminated quoted field"
        );
    }
}
