use super::*;

/// Escape codes as readable tags, so snapshots can be reviewed.
fn visible(s: &str) -> String {
    s.replace(RESET, "⟨/⟩")
        .replace(BOLD, "⟨b⟩")
        .replace(DIM, "⟨dim⟩")
        .replace(ITALIC, "⟨i⟩")
        .replace(UNDERLINE, "⟨u⟩")
        .replace(inline::STRIKE, "⟨s⟩")
        .replace(CODE, "⟨code⟩")
}

fn render_whole(text: &str) -> String {
    let mut md = MarkdownStream::default();
    let mut out = md.push(text);
    out.push_str(&md.finish());
    out
}

const SAMPLE: &str = "# Plan\n\nSome **bold**, *italic*, _also_, ~~gone~~ and `code` with snake_case_name.\n\n## Steps\n- first **step** with a [link](https://example.com)\n  - nested item\n- [ ] todo\n- [x] done\n1. one\n2) two\n\n> quoted *words*\n\n---\n\n```rust\nfn main() {\n    // **not bold** in code\n    println!(\"hi\");\n}\n```\n\n| Name | Size |  Mark |\n|:-----|:----:|------:|\n| `a.rs` | 12 | ✓ |\n| 日本語 | 3 | **x** |\n\nAn unclosed **marker and a lone * star.\n### Heading with `code` ###\nlast line without newline";

#[test]
fn renders_the_common_markdown() {
    insta::assert_snapshot!(visible(&render_whole(SAMPLE)));
}

#[test]
fn any_split_into_deltas_renders_the_same() {
    let whole = render_whole(SAMPLE);
    // Every split point (on char boundaries), and char by char.
    for (at, _) in SAMPLE.char_indices().step_by(3) {
        let mut md = MarkdownStream::default();
        let mut out = md.push(&SAMPLE[..at]);
        out.push_str(&md.push(&SAMPLE[at..]));
        out.push_str(&md.finish());
        assert_eq!(out, whole, "split at {at}");
    }
    let mut md = MarkdownStream::default();
    let mut out = String::new();
    for c in SAMPLE.chars() {
        out.push_str(&md.push(&c.to_string()));
    }
    out.push_str(&md.finish());
    assert_eq!(out, whole);
}

#[test]
fn complete_lines_show_at_once_and_partial_lines_wait() {
    let mut md = MarkdownStream::default();
    assert_eq!(md.push("Hello **wor"), "");
    assert_eq!(visible(&md.push("ld**\nnext")), "Hello ⟨b⟩world⟨/⟩\n");
    assert_eq!(md.finish(), "next\n");
}

#[test]
fn a_fence_spans_deltas_and_ends_with_the_answer() {
    let mut md = MarkdownStream::default();
    assert_eq!(
        visible(&md.push("```\n# not a heading\n")),
        "⟨dim⟩```⟨/⟩\n⟨code⟩# not a heading⟨/⟩\n"
    );
    assert_eq!(visible(&md.push("~~~\n")), "⟨code⟩~~~⟨/⟩\n");
    // The answer ends with the fence still open: the next answer starts outside it.
    md.finish();
    assert_eq!(visible(&md.push("# Title\n")), "⟨b⟩⟨u⟩Title⟨/⟩\n");
}

#[test]
fn a_table_waits_for_its_last_row_and_a_non_table_is_text() {
    let mut md = MarkdownStream::default();
    assert_eq!(md.push("| a | b |\n|---|---|\n| 1 | 2 |\n"), "");
    let shown = visible(&md.push("after\n"));
    assert_eq!(
        shown,
        "⟨b⟩a⟨/⟩ ⟨dim⟩│⟨/⟩ ⟨b⟩b⟨/⟩\n⟨dim⟩──┼──⟨/⟩\n1 ⟨dim⟩│⟨/⟩ 2\nafter\n"
    );
    assert_eq!(
        md.push("| just | pipes |\nplain\n"),
        "| just | pipes |\nplain\n"
    );
}

#[test]
fn inline_edge_cases() {
    let r = |s: &str| visible(&inline::render(s, ""));
    assert_eq!(r("2 * 3 * 4"), "2 * 3 * 4");
    assert_eq!(r("a\\*b\\*"), "a*b*");
    assert_eq!(r("``a ` b``"), "⟨code⟩a ` b⟨/⟩");
    assert_eq!(r("**bold `**` still**"), "⟨b⟩bold ⟨code⟩**⟨/⟩⟨b⟩ still⟨/⟩");
    assert_eq!(r("*it **bo** it*"), "⟨i⟩it ⟨b⟩bo⟨/⟩⟨i⟩ it⟨/⟩");
    assert_eq!(r("[x](https://a.b)"), "⟨u⟩x⟨/⟩ ⟨dim⟩(https://a.b)⟨/⟩");
}
