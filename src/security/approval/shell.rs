//! A small, forgiving POSIX-shell lexer used only for danger detection.
//!
//! It undoes the tricks that hide a command from a plain regex: quotes inside words (`r''m`),
//! backslashes (`\rm`, `r\m`), `$IFS` / `${IFS}` used as a space, `$@` / `$*` (empty), ANSI-C
//! `$'\x72m'` strings, line continuations and runs of blanks. It never fails: unterminated quotes
//! or substitutions simply run to the end of the input, which errs on the side of looking at more
//! text, not less. Text that the shell would *run* from inside a word — `$(…)`, backticks,
//! `<(…)` / `>(…)` — is handed back in `Lexed::substitutions` so the caller analyses it as a
//! command of its own.

/// One shell word after quote removal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Word {
    pub text: String,
    /// True when any part came from quotes or an escape: its metacharacters are data, not syntax.
    pub quoted: bool,
}

/// A lexical token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tok {
    Word(Word),
    /// Separators and pipes: `;` `\n` `&` `&&` `||` `|` `|&` `(` `)`.
    Sep(&'static str),
    /// A redirection operator including any fd prefix (`>`, `2>>`, `&>`, `<<<`, `<<-`); for a
    /// heredoc, `body` holds the lines up to the delimiter.
    Redir {
        op: String,
        body: Option<String>,
    },
}

/// The tokens of one command line plus the command texts it runs through substitutions.
#[derive(Debug, Default)]
pub(super) struct Lexed {
    pub toks: Vec<Tok>,
    pub substitutions: Vec<String>,
}

/// Splits `src` into shell tokens (see the module header for what is undone).
pub(super) fn lex(src: &str) -> Lexed {
    let mut lexer = Lexer {
        c: src.chars().filter(|&ch| ch != '\0').collect(),
        i: 0,
        out: Lexed::default(),
        cur: None,
        pending_heredocs: Vec::new(),
    };
    lexer.run();
    lexer.out
}

struct Lexer {
    c: Vec<char>,
    i: usize,
    out: Lexed,
    cur: Option<Word>,
    /// Token indexes of `<<` / `<<-` operators whose bodies start after the next newline.
    pending_heredocs: Vec<(usize, bool)>,
}

impl Lexer {
    fn peek(&self, off: usize) -> Option<char> {
        self.c.get(self.i + off).copied()
    }

    fn push(&mut self, ch: char, quoted: bool) {
        let w = self.cur.get_or_insert_with(Word::default);
        w.text.push(ch);
        w.quoted |= quoted;
    }

    fn push_str(&mut self, s: &str, quoted: bool) {
        let w = self.cur.get_or_insert_with(Word::default);
        w.text.push_str(s);
        w.quoted |= quoted;
    }

    /// Makes sure a word exists even if nothing is appended (`''` is an empty word).
    fn touch(&mut self, quoted: bool) {
        let w = self.cur.get_or_insert_with(Word::default);
        w.quoted |= quoted;
    }

    fn end_word(&mut self) {
        if let Some(w) = self.cur.take() {
            self.out.toks.push(Tok::Word(w));
        }
    }

    fn sep(&mut self, s: &'static str, len: usize) {
        self.end_word();
        self.out.toks.push(Tok::Sep(s));
        self.i += len;
    }

    fn run(&mut self) {
        while let Some(ch) = self.peek(0) {
            match ch {
                ' ' | '\t' | '\r' => {
                    self.end_word();
                    self.i += 1;
                }
                '\n' => {
                    self.sep("\n", 1);
                    self.read_heredoc_bodies();
                }
                '#' if self.cur.is_none() => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
                '\\' => {
                    match self.peek(1) {
                        Some('\n') => {}
                        Some(next) => self.push(next, true),
                        None => {}
                    }
                    self.i += 2;
                }
                '\'' => {
                    self.i += 1;
                    self.touch(true);
                    while let Some(c) = self.peek(0) {
                        self.i += 1;
                        if c == '\'' {
                            break;
                        }
                        self.push(c, true);
                    }
                }
                '"' => {
                    self.i += 1;
                    self.double_quoted();
                }
                '`' => {
                    self.i += 1;
                    let inner = self.backtick_body();
                    self.push_str(&format!("$({inner})"), false);
                    self.out.substitutions.push(inner);
                }
                '$' => self.dollar(false),
                ';' => {
                    let len = if self.peek(1) == Some(';') { 2 } else { 1 };
                    self.sep(";", len);
                }
                '&' => match (self.peek(1), self.peek(2)) {
                    (Some('&'), _) => self.sep("&&", 2),
                    (Some('>'), Some('>')) => self.redir("&>>".into(), 3),
                    (Some('>'), _) => self.redir("&>".into(), 2),
                    _ => self.sep("&", 1),
                },
                '|' => match self.peek(1) {
                    Some('|') => self.sep("||", 2),
                    Some('&') => self.sep("|&", 2),
                    _ => self.sep("|", 1),
                },
                '(' => self.sep("(", 1),
                ')' => self.sep(")", 1),
                '<' | '>' => self.angle(ch),
                _ => {
                    self.push(ch, false);
                    self.i += 1;
                }
            }
        }
        self.end_word();
    }

    fn redir(&mut self, op: String, len: usize) {
        self.end_word();
        self.i += len;
        let heredoc = op.ends_with("<<") || op.ends_with("<<-");
        let strip = op.ends_with("<<-");
        self.out.toks.push(Tok::Redir { op, body: None });
        if heredoc {
            self.pending_heredocs.push((self.out.toks.len() - 1, strip));
        }
    }

    /// `<` or `>` at `self.i`: a redirection (with an fd prefix such as `2>`) or a process
    /// substitution `<(…)` / `>(…)`.
    fn angle(&mut self, ch: char) {
        if self.peek(1) == Some('(') {
            self.end_word();
            let (inner, next) = balanced(&self.c, self.i + 2);
            self.i = next;
            self.push_str(&format!("{ch}({inner})"), false);
            self.out.substitutions.push(inner);
            self.end_word();
            return;
        }
        let prefix = match &self.cur {
            Some(w)
                if !w.quoted
                    && !w.text.is_empty()
                    && w.text.chars().all(|c| c.is_ascii_digit()) =>
            {
                self.cur.take().map(|w| w.text).unwrap_or_default()
            }
            _ => String::new(),
        };
        let rest: String = self.c[self.i..].iter().take(3).collect();
        let op = if ch == '<' {
            ["<<<", "<<-", "<<", "<&", "<>", "<"]
                .into_iter()
                .find(|o| rest.starts_with(o))
                .unwrap_or("<")
        } else {
            [">>", ">&", ">|", ">"]
                .into_iter()
                .find(|o| rest.starts_with(o))
                .unwrap_or(">")
        };
        self.redir(format!("{prefix}{op}"), op.chars().count());
    }

    fn double_quoted(&mut self) {
        self.touch(true);
        while let Some(c) = self.peek(0) {
            match c {
                '"' => {
                    self.i += 1;
                    return;
                }
                '\\' => {
                    match self.peek(1) {
                        Some('\n') => {}
                        Some(n @ ('$' | '`' | '"' | '\\')) => self.push(n, true),
                        Some(n) => {
                            self.push('\\', true);
                            self.push(n, true);
                        }
                        None => self.push('\\', true),
                    }
                    self.i += 2;
                }
                '$' => self.dollar(true),
                '`' => {
                    self.i += 1;
                    let inner = self.backtick_body();
                    self.push_str(&format!("$({inner})"), true);
                    self.out.substitutions.push(inner);
                }
                _ => {
                    self.push(c, true);
                    self.i += 1;
                }
            }
        }
    }

    /// Reads up to the closing backtick (already past the opening one).
    fn backtick_body(&mut self) -> String {
        let mut inner = String::new();
        while let Some(c) = self.peek(0) {
            self.i += 1;
            match c {
                '`' => break,
                '\\' if matches!(self.peek(0), Some('`' | '\\' | '$')) => {
                    if let Some(n) = self.peek(0) {
                        inner.push(n);
                    }
                    self.i += 1;
                }
                _ => inner.push(c),
            }
        }
        inner
    }

    /// `$` at `self.i`: substitutions, `$IFS`, `$@`, ANSI-C strings, or a plain `$`.
    fn dollar(&mut self, in_dq: bool) {
        match self.peek(1) {
            Some('(') if self.peek(2) == Some('(') => {
                // Arithmetic `$((…))`: no command runs, keep the text.
                let (inner, next) = balanced(&self.c, self.i + 2);
                self.i = next;
                self.push_str(&format!("$({inner})"), in_dq);
            }
            Some('(') => {
                let (inner, next) = balanced(&self.c, self.i + 2);
                self.i = next;
                self.push_str(&format!("$({inner})"), in_dq);
                self.out.substitutions.push(inner);
            }
            Some('{') => {
                let start = self.i + 2;
                let mut j = start;
                let mut depth = 1;
                while j < self.c.len() {
                    match self.c[j] {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                let name: String = self.c[start..j.min(self.c.len())].iter().collect();
                self.i = (j + 1).min(self.c.len());
                if is_ifs(&name) {
                    self.ifs(in_dq);
                } else if name == "@" || name == "*" {
                    self.touch(in_dq);
                } else {
                    self.push_str(&format!("${{{name}}}"), in_dq);
                }
            }
            Some('@' | '*') => {
                self.i += 2;
                self.touch(in_dq);
            }
            Some('\'') if !in_dq => {
                self.i += 2;
                self.ansi_c();
            }
            Some('"') if !in_dq => {
                self.i += 2;
                self.double_quoted();
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let mut j = self.i + 1;
                while j < self.c.len() && (self.c[j].is_ascii_alphanumeric() || self.c[j] == '_') {
                    j += 1;
                }
                let name: String = self.c[self.i + 1..j].iter().collect();
                self.i = j;
                if name == "IFS" {
                    self.ifs(in_dq);
                } else {
                    self.push_str(&format!("${name}"), in_dq);
                }
            }
            _ => {
                self.push('$', in_dq);
                self.i += 1;
            }
        }
    }

    /// `$IFS` splits words outside quotes; inside them it is a literal blank.
    fn ifs(&mut self, in_dq: bool) {
        if in_dq {
            self.push(' ', true);
        } else {
            self.end_word();
        }
    }

    /// `$'…'` with its backslash escapes (`\x72`, `\162`, `\u0072`, `\n`, …).
    fn ansi_c(&mut self) {
        self.touch(true);
        while let Some(c) = self.peek(0) {
            self.i += 1;
            match c {
                '\'' => return,
                '\\' => {
                    let Some(e) = self.peek(0) else { return };
                    self.i += 1;
                    let decoded = match e {
                        'n' => Some('\n'),
                        't' => Some('\t'),
                        'r' => Some('\r'),
                        'a' => Some('\x07'),
                        'b' => Some('\x08'),
                        'e' | 'E' => Some('\x1b'),
                        'x' => self.radix_char(16, 2),
                        'u' => self.radix_char(16, 4),
                        'U' => self.radix_char(16, 8),
                        '0'..='7' => {
                            self.i -= 1;
                            self.radix_char(8, 3)
                        }
                        other => Some(other),
                    };
                    if let Some(d) = decoded {
                        self.push(d, true);
                    }
                }
                other => self.push(other, true),
            }
        }
    }

    fn radix_char(&mut self, radix: u32, max: usize) -> Option<char> {
        let mut value = 0u32;
        let mut n = 0;
        while n < max {
            match self.peek(0).and_then(|c| c.to_digit(radix)) {
                Some(d) => {
                    value = value.saturating_mul(radix).saturating_add(d);
                    self.i += 1;
                    n += 1;
                }
                None => break,
            }
        }
        if n == 0 { None } else { char::from_u32(value) }
    }

    /// After a newline: the bodies of heredocs opened on the line just ended.
    fn read_heredoc_bodies(&mut self) {
        for (idx, strip_tabs) in std::mem::take(&mut self.pending_heredocs) {
            let delim = match self.out.toks.get(idx + 1) {
                Some(Tok::Word(w)) => w.text.clone(),
                _ => continue,
            };
            let mut body = String::new();
            while self.i < self.c.len() {
                let end = self.c[self.i..]
                    .iter()
                    .position(|&c| c == '\n')
                    .map_or(self.c.len(), |p| self.i + p);
                let line: String = self.c[self.i..end].iter().collect();
                self.i = (end + 1).min(self.c.len());
                let cmp = if strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if cmp == delim {
                    break;
                }
                body.push_str(&line);
                body.push('\n');
            }
            if let Some(Tok::Redir { body: b, .. }) = self.out.toks.get_mut(idx) {
                *b = Some(body);
            }
        }
    }
}

fn is_ifs(name: &str) -> bool {
    name.strip_prefix("IFS").is_some_and(|rest| {
        rest.is_empty() || !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// Reads from `start` (just past an opening parenthesis) to the matching `)`, skipping quoted
/// text. Returns the inside and the index after the `)` (or the end of input if unbalanced).
fn balanced(c: &[char], start: usize) -> (String, usize) {
    let mut depth = 1usize;
    let mut j = start;
    while j < c.len() {
        match c[j] {
            '\\' => j += 1,
            '\'' => {
                j += 1;
                while j < c.len() && c[j] != '\'' {
                    j += 1;
                }
            }
            '"' => {
                j += 1;
                while j < c.len() && c[j] != '"' {
                    if c[j] == '\\' {
                        j += 1;
                    }
                    j += 1;
                }
            }
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return (c[start..j].iter().collect(), j + 1);
                }
            }
            _ => {}
        }
        j += 1;
    }
    (c[start.min(c.len())..].iter().collect(), c.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(src: &str) -> Vec<String> {
        lex(src)
            .toks
            .into_iter()
            .filter_map(|t| match t {
                Tok::Word(w) => Some(w.text),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn quotes_and_escapes_are_removed() {
        assert_eq!(words(r#"r''m -r""f /"#), ["rm", "-rf", "/"]);
        assert_eq!(words(r"\rm r\m"), ["rm", "rm"]);
        assert_eq!(words(r#"echo "a b" 'c d'"#), ["echo", "a b", "c d"]);
        assert_eq!(words(r#"echo "r\m""#), ["echo", r"r\m"]);
        assert_eq!(words("echo a\\\nb"), ["echo", "ab"]);
    }

    #[test]
    fn ifs_and_positional_tricks() {
        assert_eq!(words("rm${IFS}-rf$IFS/"), ["rm", "-rf", "/"]);
        assert_eq!(words("r$@m -r${*}f /"), ["rm", "-rf", "/"]);
        assert_eq!(words("echo $IFSX"), ["echo", "$IFSX"]);
        assert_eq!(words(r"$'\x72\155' -rf"), ["rm", "-rf"]);
    }

    #[test]
    fn operators_and_redirections() {
        let toks = lex("a && b | c 2>/dev/null; d &").toks;
        assert!(toks.contains(&Tok::Sep("&&")));
        assert!(toks.contains(&Tok::Sep("|")));
        assert!(toks.contains(&Tok::Redir {
            op: "2>".into(),
            body: None
        }));
        assert!(toks.contains(&Tok::Sep("&")));
        let quoted = lex("echo 'a; b'").toks;
        assert!(!quoted.iter().any(|t| matches!(t, Tok::Sep(_))));
    }

    #[test]
    fn substitutions_are_collected() {
        let l = lex(r#"echo $(rm -rf /tmp/x) "`id`" <(curl x) $((1+2))"#);
        assert_eq!(l.substitutions, ["rm -rf /tmp/x", "id", "curl x"]);
    }

    #[test]
    fn heredoc_bodies_are_attached() {
        let l = lex("bash <<EOF\nrm -rf /\nEOF\necho done");
        let body = l.toks.iter().find_map(|t| match t {
            Tok::Redir { op, body } if op == "<<" => body.clone(),
            _ => None,
        });
        assert_eq!(body.as_deref(), Some("rm -rf /\n"));
        assert!(words("bash <<EOF\nrm -rf /\nEOF\necho done").contains(&"done".to_string()));
        assert!(!words("bash <<EOF\nrm -rf /\nEOF\n").contains(&"rm".to_string()));
    }

    #[test]
    fn unterminated_input_does_not_panic() {
        for s in [
            "'abc", "\"abc", "$(abc", "`abc", "${abc", "abc\\", "$'\\x", "<<", "a <<E\nb",
        ] {
            let _ = lex(s);
        }
    }
}
