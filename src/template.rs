//! Rendering of the prompt templates kept in `src/prompts/` (minijinja with `trim_blocks` and
//! `lstrip_blocks`, so block tags do not leave blank lines in text the model reads).

use serde::Serialize;

/// Renders `template` with `ctx`.
pub fn render(template: &str, ctx: &impl Serialize) -> Result<String, minijinja::Error> {
    let mut env = minijinja::Environment::new();
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()?,
    );
    env.add_template("t", template)?;
    env.get_template("t")?.render(minijinja::value::Serde(ctx))
}

#[cfg(test)]
mod tests {
    #[test]
    fn blocks_leave_no_blank_lines() {
        let out = super::render(
            "a\n{% if x %}\nb\n{% endif %}\nc",
            &serde_json::json!({"x": true}),
        )
        .unwrap();
        assert_eq!(out, "a\nb\nc");
        assert!(super::render("{% if %}", &serde_json::json!({})).is_err());
    }
}
