//! `hermes doctor`: a report of how this installation will behave, one section per subsystem.
//! Today: where hermes keeps its state and how commands run (backend, which limits apply and why
//! not). A subsystem adds a section by adding one `Section` builder to `sections`.

use crate::config::Config;

/// One titled block of `label: value` rows.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Section {
    pub title: &'static str,
    pub rows: Vec<(String, String)>,
}

/// Every section, in display order.
pub fn sections(config: &Config) -> Vec<Section> {
    vec![
        Section {
            title: "hermes",
            rows: vec![
                ("version".into(), env!("CARGO_PKG_VERSION").into()),
                ("home".into(), config.home.root().display().to_string()),
            ],
        },
        Section {
            title: "terminal",
            rows: crate::security::sandbox::report(config),
        },
    ]
}

/// Plain text: a heading per section, aligned rows.
pub fn render(sections: &[Section]) -> String {
    let mut out = String::new();
    for s in sections {
        out.push_str(s.title);
        out.push('\n');
        let width = s.rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        for (k, v) in &s.rows {
            out.push_str(&format!("  {k:<width$}  {v}\n"));
        }
    }
    out
}

pub fn run(config: &Config, json: bool) -> Result<u8, super::CliError> {
    let sections = sections(config);
    if json {
        let value = serde_json::to_string_pretty(&sections)
            .map_err(|e| super::CliError::Setup(format!("cannot encode the report: {e}")))?;
        println!("{value}");
    } else {
        print!("{}", render(&sections));
    }
    Ok(super::exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_aligned_under_their_section() {
        let text = render(&[Section {
            title: "terminal",
            rows: vec![
                ("backend".into(), "sandbox".into()),
                ("limit".into(), "processes ≤ 512".into()),
            ],
        }]);
        assert_eq!(
            text,
            "terminal\n  backend  sandbox\n  limit    processes ≤ 512\n"
        );
    }
}
