//! A small RFC 4180 CSV reader (quoted fields, doubled quotes, CRLF), with
//! line numbers for error messages. Pure: reads a `&str`.

/// One record with the line it starts on (1-based).
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub line: u64,
    pub fields: Vec<String>,
}

/// Splits CSV text into records. An unterminated quote is an error naming its line.
pub fn parse(text: &str) -> Result<Vec<Record>, String> {
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
            ',' => fields.push(std::mem::take(&mut field)),
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
    fn unterminated_quote_names_the_line() {
        assert_eq!(
            parse("a\n\"oops,b\n").unwrap_err(),
            "line 2: unterminated quoted field"
        );
    }
}
